"""A subscription and the connection it belongs to (every family's)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Protocol

import msgspec
import trio

from adapters.base import EventMatcher
from broker.events.cursors import ResumeState
from broker.rpc.dispatch import Slot, Slots

MAX_PER_CONNECTION: Final = 1024


class Subscriber(Protocol):
    """The connection side of a subscription (a WebSocket connection)."""

    @property
    def slots(self) -> Slots: ...

    def send_frame(self, frame: bytes) -> bool: ...

    def frame_sender(self, *, held: bool = False) -> Callable[[bytes], bool]:
        """What :meth:`send_frame` calls (the fan-out calls it with no wrapper between);
        ``held``: the one that, within a delivery step, holds the frames until the step ends
        (:func:`broker.transport.outbox.corked`), for a connection with several subscriptions."""
        ...


#: Each notification method's name as bytes, shared by every subscription (a family has one or
#: a few names; bounded by :data:`_NAMES` all the same).
_names: dict[str, bytes] = {}
_NAMES: Final = 256


def _encoded(name: str) -> bytes:
    found = _names.get(name)
    if found is None:
        found = name.encode()
        if len(_names) < _NAMES:
            _names[name] = found
    return found


class Subscription:
    """One subscription of one connection: its chain family's ``matcher``, the subscribe
    ``method`` and its ``params`` as JSON (to take it over on a resumed connection), ``resume``
    the connection's cursor source."""

    __slots__ = (
        "chain",
        "conn",
        "id",
        "id_json",
        "kind",
        "matcher",
        "method",
        "notification",
        "params",
        "resume",
        "scope",
        "send",
    )

    def __init__(
        self,
        conn: Subscriber,
        chain: str,
        method: str,
        matcher: EventMatcher,
        scope: str | None,
        *,
        sub_id: str,
        integer_id: bool,
        kind: str,
        params: bytes = b"[]",
    ) -> None:
        self.id = sub_id
        self.id_json = sub_id.encode() if integer_id else b'"' + sub_id.encode() + b'"'
        self.matcher = matcher
        self.method = method
        self.notification = _encoded(matcher.notification)
        self.conn = conn
        #: Sends one of this subscription's frames (its connection's outbox).
        self.send = conn.frame_sender()
        self.chain = chain
        self.kind = kind
        self.scope = scope
        self.params = params
        self.resume: ResumeState | None = None


class CursorKeeper(Protocol):
    """What the hub tells of its subscriptions so that connections can resume
    (:class:`broker.events.resume.ResumeKeeper`)."""

    def state_for(self, conn: Subscriber, chain: str) -> ResumeState | None:
        """The cursor source of ``conn``, which now follows ``chain`` (None: no cursors)."""
        ...

    def changed(self, conn: Subscriber) -> None:
        """``conn``'s subscriptions changed (its resume record is stale)."""
        ...

    async def keep(self, sub: Subscription) -> None:
        """Keep ``sub`` (its connection's resume record) before it is attached."""
        ...


class NoCursors:
    """No resume: no cursors, nothing kept."""

    def state_for(self, conn: Subscriber, chain: str) -> None:
        return None

    def changed(self, conn: Subscriber) -> None:
        return None

    async def keep(self, sub: Subscription) -> None:
        # As the resume keeper's: a subscribe cancelled here (its connection gone) is not attached.
        await trio.lowlevel.checkpoint()


#: A connection's subscriptions by id.
SUBSCRIPTIONS: Final[Slot[dict[str, Subscription]]] = Slot("subscriptions")


def connection_subs(conn: Subscriber) -> dict[str, Subscription]:
    subs = conn.slots.get(SUBSCRIPTIONS)
    if subs is None:
        subs = {}
        conn.slots.set(SUBSCRIPTIONS, subs)
    return subs


def encode_params(params: Any) -> bytes:
    return msgspec.json.encode(params)
