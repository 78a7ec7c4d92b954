"""The dapps connected to this process: their connections, the CAIP-25 dialect their session
speaks, and the expiries watched for them (:class:`~broker.sessions.expiry.ExpiryTracker`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import trio

from broker.sessions import Identity, Session
from broker.sessions.expiry import ExpiryTracker
from broker.sessions.model import CURRENT, LEGACY

if TYPE_CHECKING:
    from broker.transport.websocket import WebSocketConnection


def identity_of(conn: WebSocketConnection) -> Identity:
    return Identity.of(conn.context.api_key, conn.context.origin)


class ConnectedDapps:
    """The dapp identities with a connection here, and what is known of their sessions."""

    def __init__(self, *, linger: float) -> None:
        """``linger``: seconds a dapp gone from this process is still watched (the resume
        window), so that a connection resuming hears of its session's end in its place."""
        # A tuple per identity, replaced as connections come and go: most identities have one
        # connection, and a tuple of one is half a list of one (which a set is three times).
        self._connections: dict[Identity, tuple[WebSocketConnection, ...]] = {}
        #: The expiries watched: of the dapps connected here, and of those gone that linger.
        self.tracker = ExpiryTracker(linger=linger)
        # Connected identities whose session speaks the 2025 CAIP-25 dialect (the others speak
        # SPEC's): an ended session is announced in the dialect it was created in.
        self._current_dialect: set[Identity] = set()
        # The stored bytes of each connected identity's session as last read, written or heard
        # (None: it had none): what this process writes back if Redis loses its data.
        self._known: dict[Identity, bytes | None] = {}

    @property
    def by_identity(self) -> Mapping[Identity, Sequence[WebSocketConnection]]:
        """The connections here, by identity (only identities that have one)."""
        return self._connections

    def connections(self, identity: Identity) -> Sequence[WebSocketConnection]:
        return self._connections.get(identity, ())

    def track(self, conn: WebSocketConnection) -> None:
        """A connection opened (before its first message)."""
        identity = identity_of(conn)
        self._connections[identity] = (*self._connections.get(identity, ()), conn)
        self.tracker.connected(identity)

    def untrack(self, conn: WebSocketConnection) -> None:
        """A connection ended."""
        identity = identity_of(conn)
        conns = self._connections.get(identity)
        if conns is not None:
            conns = tuple(c for c in conns if c is not conn)
            if conns:
                self._connections[identity] = conns
            else:
                del self._connections[identity]
                self._known.pop(identity, None)
                if self.tracker.gone(identity, trio.current_time()):
                    self._current_dialect.discard(identity)

    def forget_lingering(self) -> None:
        """Stop watching the dapps gone longer than the resume window ago."""
        for identity in self.tracker.forget_lingering(trio.current_time()):
            self._current_dialect.discard(identity)

    def seen(self, identity: Identity, session: Session) -> None:
        """Remember the dialect of a connected identity's session, as stored now."""
        if identity not in self._connections:
            return
        if session.dialect == CURRENT:
            self._current_dialect.add(identity)
        else:
            self._current_dialect.discard(identity)

    def watch(self, identity: Identity, session: Session | None) -> None:
        """Watch the expiry of a connected identity's session, as stored now."""
        if identity in self._connections:
            self.tracker.watch(identity, session.expiry if session is not None else None)

    def remember(self, identity: Identity, data: bytes | None) -> None:
        """The stored bytes of ``identity``'s session now (None: none), if it is connected here."""
        if identity in self._connections:
            self._known[identity] = data

    def recall(self, identity: Identity) -> bytes | None:
        """The bytes :meth:`remember` kept of ``identity``'s session (None: none, or unknown)."""
        return self._known.get(identity)

    def known(self, identity: Identity) -> bool:
        """Whether this process knows what ``identity``'s session is (or that it has none)."""
        return identity in self._known

    def dialect(self, identity: Identity) -> str:
        """The dialect to tell ``identity`` of a session that ended (its last one's)."""
        return CURRENT if identity in self._current_dialect else LEGACY
