"""Session changes, both ways: a change made here is published on the change bus; a change heard
on it (from any process, with Redis) reaches every connection of its dapp here as
``wallet_sessionChanged`` and ends the subscriptions it no longer grants; and a resuming
connection is told the changes it missed."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import trio

from broker.events.bus import Position
from broker.events.cursors import CHANGES, with_cursor
from broker.events.session_changes import SessionChange, SessionChangeBus
from broker.rpc.dispatch import CallContext
from broker.sessions import (
    Identity,
    Session,
    SessionStore,
    decode_session,
    encode_session,
    is_expired,
    is_notification_granted,
)
from broker.sessions.dialects import changed_params
from broker.sessions.metamask import accounts_changed
from broker.sessions.service._connected import ConnectedDapps, identity_of
from broker.sessions.wall_clock import WallClock
from schemas.jsonrpc import notification_bytes

if TYPE_CHECKING:
    from broker.events.resume import ResumeKeeper
    from broker.events.subscriptions import SubscriptionHub
    from broker.transport.websocket import WebSocketConnection

log = logging.getLogger(__name__)


class ChangeFanOut:
    """Tells this process's connections of their dapp's session changes."""

    def __init__(
        self,
        dapps: ConnectedDapps,
        changes: SessionChangeBus,
        hub: SubscriptionHub,
        *,
        resume: ResumeKeeper | None,
        process_id: str,
        clock: WallClock,
        store: SessionStore,
    ) -> None:
        self._dapps = dapps
        self._store = store
        self._changes = changes
        self._hub = hub
        self._resume = resume
        self._process_id = process_id
        self._clock = clock
        self._watchers: list[Callable[[SessionChange], None]] = []

    def watch(self, watcher: Callable[[SessionChange], None]) -> None:
        """Tell ``watcher`` of every change heard (with Redis, those of every process)."""
        self._watchers.append(watcher)

    async def start(self, nursery: trio.Nursery) -> None:
        """Follow the change bus from now on, in ``nursery``."""
        position = await nursery.start(self._changes.serve_reader, self._on_change_in_turn)
        if self._resume is not None:
            self._resume.positions.advance(CHANGES, position)

    def _on_change_in_turn(self, change: SessionChange, position: Position | None = None) -> None:
        # After the fan-outs under way: the change's cursor says the connection has their
        # frames (broker.events.subscriptions._delivery).
        self._hub.delivery.in_turn(functools.partial(self.on_change, change, position))

    async def announce(
        self,
        identity: Identity,
        session: Session | None,
        ctx: CallContext | None,
        *,
        previous: Session | None = None,
    ) -> None:
        """Publish ``identity``'s session as it is now (None: ended; ``previous``: before the
        change); ``ctx``, the call that changed it, is answered by its caller and not told again
        of the scopes."""
        exclude = ctx.peer if ctx is not None else None
        exclude_id = getattr(exclude, "id", None)
        changed = accounts_changed(previous, session)
        if exclude is not None:
            self.prune(exclude, session)  # the requester's own subscriptions follow the change too
            if changed is not None:
                # The requester too, as the extension does, and before its answer: MetaMask's
                # client drops its listeners once wallet_revokeSession is answered.
                self._send(exclude, notification_bytes("wallet_notify", changed.params()))
        await self._changes.publish(
            SessionChange(
                identity,
                encode_session(session) if session is not None else None,
                source=self._process_id,
                exclude=exclude_id if isinstance(exclude_id, int) else None,
                accounts_changed=changed,
            )
        )

    async def greet(self, conn: WebSocketConnection) -> None:
        """Tell a new connection of the metamask profile its session's selected Solana account,
        as the extension tells a page that loads (MetaMask's wallet-standard wallet waits for it
        before restoring a session): when the session asked for it and permits one."""
        identity = identity_of(conn)
        try:
            session = await self._store.get(identity)
        except Exception:
            log.exception("reading the session of %r to greet it failed", conn)
            return
        if session is None or is_expired(session, self._clock.now()):
            return
        selected = accounts_changed(None, session)
        if selected is not None and selected.accounts and conn.open:
            self._send(conn, notification_bytes("wallet_notify", selected.params()))

    def _send(self, conn: Any, message: bytes) -> None:
        resume = self._resume
        conn.send_message(with_cursor(message, resume.cursor(conn)) if resume else message)

    def on_change(self, change: SessionChange, position: Position | None = None) -> None:
        """A change heard on the bus: tell the dapp's connections here."""
        for watcher in self._watchers:
            try:
                watcher(change)
            except Exception:
                log.exception("session change watcher failed")
        resume = self._resume
        if resume is not None and position is not None:
            # The position moves before the sends below, with no await in this method: each
            # message's cursor then names this change, and a resume reading the positions between
            # two changes sees a change either sent to every connection here or to none.
            resume.positions.advance(CHANGES, position, change)
        dapps, tracker = self._dapps, self._dapps.tracker
        conns = dapps.connections(change.identity)
        if not conns:
            if tracker.lingering(change.identity):  # gone, but may resume: still watched
                gone = decode_session(change.session) if change.session is not None else None
                tracker.watch(change.identity, gone.expiry if gone else None)
            return  # a dapp of another process: that process tracks and ends its session
        dapps.remember(change.identity, change.session)
        session = decode_session(change.session) if change.session is not None else None
        dialect = dapps.dialect(change.identity)
        dapps.watch(change.identity, session)
        if session is not None:
            dapps.seen(change.identity, session)
        message = notification_bytes("wallet_sessionChanged", changed_params(session, dialect))
        accounts = change.accounts_changed
        account_message = (
            None if accounts is None else notification_bytes("wallet_notify", accounts.params())
        )
        for conn in list(conns):
            self.prune(conn, session)
            if change.source == self._process_id and conn.id == change.exclude:
                continue
            self._send(conn, message)
            if account_message is not None:
                self._send(conn, account_message)

    def tell_lost(self, identity: Identity) -> int:
        """Tell the dapp's connections here that its session is gone (lost with Redis's data, and
        not known here to write back), without publishing it: another process may have restored
        it. How many connections were told."""
        conns = self._dapps.connections(identity)
        message = notification_bytes(
            "wallet_sessionChanged", changed_params(None, self._dapps.dialect(identity))
        )
        for conn in list(conns):
            self.prune(conn, None)
            if self._resume is not None:
                conn.send_message(with_cursor(message, self._resume.cursor(conn)))
            else:
                conn.send_message(message)
        return len(conns)

    def replay_changes(
        self, api_key: str, origin: str, changes: list[tuple[Position, SessionChange]], owner: str
    ) -> tuple[list[tuple[Position, bytes]], Callable[[str, str], bool] | None]:
        """The ``wallet_sessionChanged`` messages a connection of the dapp missed in ``changes``
        (less those ``owner``, ``<process>:<connection id>``, caused and was answered), and
        whether a subscription of a scope for a notification may go on (None: the changes changed
        nothing)."""
        identity = Identity.of(api_key, origin)
        messages: list[tuple[Position, bytes]] = []
        final: Session | None = None
        changed = False
        for position, change in changes:
            if change.identity != identity:
                continue
            session = decode_session(change.session) if change.session is not None else None
            final, changed = session, True
            if f"{change.source}:{change.exclude}" == owner:
                continue
            params = changed_params(session, self._dapps.dialect(identity))
            messages.append((position, notification_bytes("wallet_sessionChanged", params)))
        if not changed:
            return messages, None
        now = self._clock.now()

        def keep(scope: str, notification: str) -> bool:
            return is_notification_granted(final, scope, notification, now=now)

        return messages, keep

    def prune(self, conn: Any, session: Session | None) -> None:
        """End ``conn``'s session subscriptions that ``session`` no longer grants."""
        now = self._clock.now()
        self._hub.drop_where(
            conn,
            lambda sub: (
                sub.scope is not None
                and not is_notification_granted(
                    session, sub.scope, sub.notification.decode(), now=now
                )
            ),
        )
