"""The session service: the parts of :mod:`broker.sessions.service` built over one store, change
bus and approval policy, and what the rest of the broker uses of them."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import trio

from broker.events.bus import Position
from broker.events.session_changes import MemoryChangeBus, SessionChange, SessionChangeBus
from broker.redis import Repair
from broker.rpc.dispatch import CallContext, Dispatcher, Handler
from broker.rpc.networks import Networks
from broker.sessions import Identity, MemorySessionStore, Session, SessionStore
from broker.sessions.approvals import ApprovalPolicy
from broker.sessions.client_profiles import METAMASK
from broker.sessions.service._connected import ConnectedDapps
from broker.sessions.service._expiry_watch import ExpiryWatch
from broker.sessions.service._fanout import ChangeFanOut
from broker.sessions.service._restore import restore_sessions
from broker.sessions.service._wallet_methods import WalletMethods
from broker.sessions.wall_clock import SYSTEM_CLOCK, WallClock

if TYPE_CHECKING:
    from broker.events.resume import ResumeKeeper
    from broker.events.subscriptions import SubscriptionHub
    from broker.transport.websocket import WebSocketConnection


class SessionService:
    """Sessions of the dapp identities connected to this process.

    It registers nothing itself: the composition root (:mod:`broker.compose`) gives the
    dispatcher :meth:`methods`, the connections :meth:`track` / :meth:`untrack`, and starts
    :meth:`start` with the server.
    """

    def __init__(
        self,
        networks: Networks,
        dispatcher: Dispatcher,
        hub: SubscriptionHub,
        *,
        resume: ResumeKeeper | None = None,
        store: SessionStore | None = None,
        changes: SessionChangeBus | None = None,
        policy: ApprovalPolicy | None = None,
        max_expiry: timedelta = timedelta(days=7),
        clock: WallClock = SYSTEM_CLOCK,
        process_id: str | None = None,
    ) -> None:
        """``clock``: the wall clock that sessions expire by (their expiries are wall-clock
        times; the expiry checks run on trio's clock); ``process_id``: this process in the
        changes it publishes and in resume records (default: a new one)."""
        self.store = store or MemorySessionStore()
        self.changes = changes or MemoryChangeBus()
        self.policy = policy or ApprovalPolicy()
        self.clock = clock
        #: This process, in the changes it publishes (it skips the requester of its own).
        self.process_id = process_id or uuid.uuid4().hex
        self._dapps = ConnectedDapps(linger=resume.window if resume is not None else 0.0)
        self._fanout = ChangeFanOut(
            self._dapps,
            self.changes,
            hub,
            resume=resume,
            process_id=self.process_id,
            clock=clock,
            store=self.store,
        )
        self._wallet = WalletMethods(
            networks,
            dispatcher,
            hub,
            dapps=self._dapps,
            fanout=self._fanout,
            store=self.store,
            policy=self.policy,
            max_expiry=max_expiry,
            clock=clock,
        )
        self._expiry = ExpiryWatch(self._dapps, self.store, self.changes, clock=clock)
        self._nursery: trio.Nursery | None = None
        self.store.observe(self._dapps.remember, self._dapps.recall)

    # -- wiring (the composition root) ------------------------------------------------------------

    def methods(self) -> dict[str, Handler]:
        """The ``wallet_*`` methods, by name, for the dispatcher."""
        return self._wallet.handlers()

    def track(self, conn: WebSocketConnection) -> None:
        """A WebSocket connection opened (before its first message)."""
        self._dapps.track(conn)
        if conn.context.client == METAMASK and self._nursery is not None:
            # As the extension does on page load: a task of its own, since it reads the store.
            self._nursery.start_soon(self._fanout.greet, conn)

    def untrack(self, conn: WebSocketConnection) -> None:
        """A WebSocket connection ended."""
        self._dapps.untrack(conn)

    async def start(self, nursery: trio.Nursery) -> None:
        """Follow the change bus and watch expiries, in ``nursery`` (where the greetings of new
        metamask-profile connections run too)."""
        self._nursery = nursery
        await self._fanout.start(nursery)
        nursery.start_soon(self._expiry.serve)

    def watched(self) -> int:
        """How many sessions this process watches (the ``sessions`` gauge)."""
        return len(self._dapps.tracker)

    @property
    def expiry_check(self) -> float:
        """Seconds between two expiry checks while they fail (the watch otherwise sleeps until
        the next expiry)."""
        return self._expiry.period

    @expiry_check.setter
    def expiry_check(self, seconds: float) -> None:
        self._expiry.period = seconds

    async def restore_after_loss(self) -> Repair:
        """Redis lost its data: write back the sessions of the dapps connected here, and tell
        those whose session is not known here that it is gone (see :mod:`._restore`)."""
        return await restore_sessions(self._dapps, self.store, self._fanout, self.clock)

    # -- for the operator API, the console and resume ---------------------------------------------

    def watch_changes(self, watcher: Callable[[SessionChange], None]) -> None:
        """Tell ``watcher`` of every session change this process hears (with Redis, those of every
        process), and of every session it ends at expiry."""
        self._fanout.watch(watcher)

    def connection_count(self, identity: Identity) -> int:
        """How many connections of ``identity`` this process holds."""
        return len(self._dapps.connections(identity))

    async def revoke(
        self, identity: Identity, scopes: list[str] | None, ctx: CallContext | None = None
    ) -> bool:
        """Revoke some or all scopes of an identity's session; whether anything changed."""
        return await self._wallet.revoke(identity, scopes, ctx)

    async def update(self, identity: Identity, scopes: Any) -> Session | None:
        """The operator's replacement of an identity's scopes (validated like a request)."""
        return await self._wallet.update(identity, scopes)

    def replay_changes(
        self, api_key: str, origin: str, changes: list[tuple[Position, SessionChange]], owner: str
    ) -> tuple[list[tuple[Position, bytes]], Callable[[str, str], bool] | None]:
        """The ``wallet_sessionChanged`` messages a resuming connection missed (see
        :meth:`ChangeFanOut.replay_changes`)."""
        return self._fanout.replay_changes(api_key, origin, changes, owner)
