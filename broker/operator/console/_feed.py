"""The operator feed: what the admin API shows, pushed to every signed-in console as it changes.

Every feed connection gets the whole state once (``snapshot``: the waiting requests and the live
sessions), then one message per change, in order:

- ``{"type": "approval", "approval": {...}}``: a request started waiting (as ``admin_listApprovals``
  describes it, with its ``expires`` time);
- ``{"type": "answered", "id", "outcome"}``: it stopped waiting (``approved``, ``rejected``,
  ``timedOut``, or ``withdrawn`` when its dapp hung up);
- ``{"type": "session", "apiKey", "origin", "session"}``: a dapp's session changed (``session`` as
  ``admin_listSessions`` describes it, with ``connections``; null once it ended or was revoked);
- ``{"type": "connections", "apiKey", "origin", "count"}``: a dapp connected or left.

Each connection has a bounded queue: a console that does not keep up is told so and closed
(:data:`CLOSE_FELL_BEHIND`); it reconnects and starts again from a fresh snapshot.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import msgspec
import trio

from broker.events.session_changes import SessionChange
from broker.operator.admin import describe_session
from broker.sessions import Identity, Session, decode_session, is_expired
from broker.sessions.approvals import Outcome, PendingApproval
from broker.transport import frames

if TYPE_CHECKING:
    from broker.sessions.service import SessionService
    from broker.transport.websocket import WebSocketConnection

#: Messages a console may be behind by before it is closed (it then reloads a snapshot).
FEED_QUEUE: Final = 1024
CLOSE_FELL_BEHIND: Final = 4008

_encode_json = msgspec.json.Encoder().encode


def _encode(message: dict[str, Any]) -> bytes:
    """``message`` as a WebSocket text frame (built once for every console)."""
    return frames.text_frame(_encode_json(message))


def _identity_fields(identity: Identity) -> dict[str, str]:
    return {"apiKey": identity.api_key, "origin": identity.origin}


class FeedSubscriber:
    """One signed-in console: its bounded queue of frames, and what to do when it is full."""

    __slots__ = ("_held", "_on_overflow", "fell_behind", "queue")

    def __init__(
        self, queue: trio.MemorySendChannel[bytes], on_overflow: Callable[[], None]
    ) -> None:
        self.queue = queue
        self.fell_behind = False
        self._on_overflow = on_overflow
        # Messages kept back while the snapshot is read (None: sent as they come).
        self._held: list[bytes] | None = []

    def release(self, first: bytes) -> None:
        """Queue ``first`` (the snapshot), then what was held back meanwhile."""
        held, self._held = self._held or [], None
        for message in (first, *held):
            self.offer(message)

    def offer(self, message: bytes) -> None:
        """Queue ``message`` without waiting; a full queue means the console fell behind."""
        if self._held is not None:
            self._held.append(message)
            return
        if self.fell_behind:
            return
        try:
            self.queue.send_nowait(message)
        except trio.WouldBlock:
            self.fell_behind = True
            self._on_overflow()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the connection is ending: it unsubscribes as it goes


class OperatorFeed:
    """Turns approval and session events into feed messages for every subscribed console.

    The composition root tells it of them: :meth:`on_approval` (the approval policy's watcher),
    :meth:`on_session_change` (the session service's) and :meth:`on_connection` (a hook of the
    WebSocket connections, called after the session service's).
    """

    def __init__(self, sessions: SessionService) -> None:
        self._sessions = sessions
        self._subscribers: set[FeedSubscriber] = set()

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)

    # -- the broker's events --------------------------------------------------------------------

    def on_connection(self, conn: WebSocketConnection) -> None:
        """A dapp connected or left: its identity's connection count changed."""
        if not self._subscribers:
            return
        identity = Identity.of(conn.context.api_key, conn.context.origin)
        count = self._sessions.connection_count(identity)
        self._publish({"type": "connections", **_identity_fields(identity), "count": count})

    def on_approval(self, pending: PendingApproval, outcome: Outcome | None) -> None:
        if not self._subscribers:
            return
        if outcome is None:
            self._publish({"type": "approval", "approval": pending.describe()})
        else:
            self._publish({"type": "answered", "id": pending.id, "outcome": outcome})

    def on_session_change(self, change: SessionChange) -> None:
        if not self._subscribers:
            return
        session = decode_session(change.session) if change.session is not None else None
        self._publish(
            {
                "type": "session",
                **_identity_fields(change.identity),
                "session": self._describe(session) if session is not None else None,
            }
        )

    def _describe(self, session: Session) -> dict[str, Any]:
        connections = self._sessions.connection_count(session.identity)
        return {**describe_session(session), "connections": connections}

    def _publish(self, message: dict[str, Any]) -> None:
        encoded = _encode(message)
        for subscriber in list(self._subscribers):
            subscriber.offer(encoded)

    # -- consoles -------------------------------------------------------------------------------

    async def subscribe(
        self,
        queue: trio.MemorySendChannel[bytes],
        *,
        on_overflow: Callable[[], None],
        dev_token: bool,
    ) -> FeedSubscriber:
        """Queue a snapshot, then every change after it, to ``queue`` (call :meth:`unsubscribe`);
        ``on_overflow`` is called (once) if the queue is ever full.

        Changes that come while the sessions are read are held and queued after the snapshot:
        each carries the whole new state of what it changed, so applying them again is harmless.
        """
        subscriber = FeedSubscriber(queue, on_overflow)
        self._subscribers.add(subscriber)
        try:
            approvals = [p.describe() for p in self._sessions.policy.pending()]
            now = self._sessions.clock.now()
            stored = await self._sessions.store.list_sessions()
            sessions = [self._describe(s) for s in stored if not is_expired(s, now)]
        except BaseException:
            self._subscribers.discard(subscriber)
            raise
        subscriber.release(
            _encode(
                {
                    "type": "snapshot",
                    "now": now.isoformat(timespec="milliseconds"),
                    "devToken": dev_token,
                    "approvalTimeout": self._sessions.policy.timeout,
                    "approvals": approvals,
                    "sessions": sessions,
                }
            )
        )
        return subscriber

    def unsubscribe(self, subscriber: FeedSubscriber) -> None:
        self._subscribers.discard(subscriber)
