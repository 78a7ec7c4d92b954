"""Frames that follow the answer of the call under way: a subscription whose first notification
is due at once (Solana's ``signatureSubscribe`` of a signature that has landed) must not notify
before the client has its id. The WebSocket connection collects them while it runs a call and
sends them after the call's answer, after the pause asked for (a client may need a moment to
start listening: see :attr:`adapters.base.SubscriptionFamily.initial_delay`); outside a call they
go at once."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

#: ``(seconds to wait after the answer, send, frame)``.
Following = list[tuple[float, Callable[[bytes], bool], bytes]]

# A context variable, not connection state: calls of one connection run concurrently, each in a
# task of its own (with its own copy of the context), and each frame follows its own call's answer.
_following: ContextVar[Following | None] = ContextVar("scopecast_after_answer", default=None)


@contextmanager
def collecting() -> Iterator[Following]:
    """Collect, for the call run inside, the frames to send after its answer."""
    following: Following = []
    token = _following.set(following)
    try:
        yield following
    finally:
        _following.reset(token)


def send_after_answer(send: Callable[[bytes], bool], frame: bytes, delay: float = 0.0) -> None:
    """``send(frame)`` ``delay`` seconds after the call under way is answered (at once outside a
    call)."""
    following = _following.get()
    if following is None:
        send(frame)
    else:
        following.append((delay, send, frame))
