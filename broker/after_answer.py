"""Frames that follow the answer of the call under way: a subscription whose first notification
is due at once (Solana's ``signatureSubscribe`` of a signature that has landed) must not notify
before the client has its id. The WebSocket connection collects them while it runs a call and
sends them right after the call's answer; outside a call they go at once."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

Following = list[tuple[Callable[[bytes], bool], bytes]]

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


def send_after_answer(send: Callable[[bytes], bool], frame: bytes) -> None:
    """``send(frame)`` once the call under way is answered (at once outside a call)."""
    following = _following.get()
    if following is None:
        send(frame)
    else:
        following.append((send, frame))
