"""The multichain session methods on the dapp connection (the I/O shell around broker.sessions).

``wallet_createSession``, ``wallet_getSession``, ``wallet_invokeMethod``, ``wallet_revokeSession``;
``wallet_sessionChanged`` to every other connection of the identity when its scopes change; the end
of subscriptions whose scope or notification is no longer granted; expiry. Account methods reach the
account adapter here too, after the approval policy said yes.
"""

from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, Protocol

import msgspec
import trio

from adapters.base import is_evm
from broker.approvals import ApprovalPolicy
from broker.bus import Position
from broker.cursors import CHANGES, with_cursor
from broker.dispatch import CallContext, Dispatcher
from broker.errors import (
    InvalidParams,
    RpcError,
    SubscriptionsNeedWebSocket,
    Unauthorized,
    UnknownSessionError,
)
from broker.session_changes import MemoryChangeBus, SessionChange, SessionChangeBus
from broker.sessions import (
    ChainSupport,
    Identity,
    MemorySessionStore,
    ScopeUpdate,
    Session,
    SessionStore,
    apply_support,
    authorize_invoke,
    decode_session,
    diff_sessions,
    encode_session,
    grant,
    is_expired,
    is_notification_granted,
    parse_create_session,
    parse_invoke_method,
    parse_revoke_session,
    permitted_addresses,
    revoke_scopes,
    update_scopes,
)
from broker.sessions.dialects import changed_params, create_result, get_result
from broker.sessions.expiry import ExpiryTracker
from broker.sessions.model import CURRENT, LEGACY
from broker.signing import SigningGateway
from broker.stream_methods import EVM_STREAM_METHODS
from schemas.jsonrpc import notification_bytes

if TYPE_CHECKING:
    from broker.metrics import Metrics
    from broker.networks import Networks
    from broker.resume import ResumeKeeper
    from broker.subscriptions import SubscriptionHub
    from broker.websocket import WebSocketConnection


class SessionHost(Protocol):
    """What the session service uses of the broker it serves in (the broker is one)."""

    networks: Networks
    metrics: Metrics
    dispatcher: Dispatcher
    hub: SubscriptionHub
    resume: ResumeKeeper | None

    def on_connect(self, hook: Callable[[WebSocketConnection], None]) -> None: ...

    def on_disconnect(self, hook: Callable[[WebSocketConnection], None]) -> None: ...

    def add_service(self, service: Callable[[trio.Nursery], Awaitable[None]]) -> None: ...


log = logging.getLogger(__name__)

SUBSCRIPTION_NOTIFICATION: Final = "eth_subscription"
#: Methods the broker itself serves on every chain, beside the adapters' own.
EXPIRY_CHECK: Final = 5.0


def _now() -> datetime:
    return datetime.now(UTC)


class SessionService:
    """Sessions of the dapp identities connected to this process."""

    def __init__(
        self,
        broker: SessionHost,
        *,
        store: SessionStore | None = None,
        changes: SessionChangeBus | None = None,
        policy: ApprovalPolicy | None = None,
        max_expiry: timedelta = timedelta(days=7),
    ) -> None:
        self._broker = broker
        self.expiry_check = EXPIRY_CHECK
        self._networks = broker.networks
        self.store = store or MemorySessionStore()
        self.changes = changes or MemoryChangeBus()
        self.policy = policy or ApprovalPolicy()
        self.max_expiry = max_expiry
        self.process_id = uuid.uuid4().hex
        # A list per identity: most identities have one connection, and a list is a third of a set.
        self._connections: defaultdict[Identity, list[WebSocketConnection]] = defaultdict(list)
        # The expiries this process watches: of the dapps connected here, and for the resume
        # window of those gone (see broker.sessions.expiry).
        self._tracker = ExpiryTracker(linger=broker.resume.window if broker.resume else 0.0)
        # Connected identities whose session speaks the 2025 CAIP-25 dialect (the others speak
        # SPEC's): an ended session is announced in the dialect it was created in.
        self._current_dialect: set[Identity] = set()
        self._change_watchers: list[Callable[[SessionChange], None]] = []
        # Read at every scrape, so it is never behind (the expiry check is seconds apart).
        broker.metrics.sessions.set_function(lambda: len(self._tracker))
        register = broker.dispatcher.register
        register("wallet_createSession", self._create)
        register("wallet_getSession", self._get)
        register("wallet_invokeMethod", self._invoke)
        register("wallet_revokeSession", self._revoke)
        self.signing = SigningGateway(broker.networks, broker.dispatcher, self.policy)
        broker.on_connect(self._track)
        broker.on_disconnect(self._untrack)
        broker.add_service(self._start)
        self._resume = broker.resume
        if self._resume is not None:
            self._resume.process_id = self.process_id
            self._resume.changes = self.changes
            self._resume.sessions = self

    # -- bookkeeping ----------------------------------------------------------------------------

    def supported(self, chain: str) -> ChainSupport | None:
        """What the broker serves on ``chain`` (None: no network)."""
        if self._networks.by_chain(chain) is None:
            return None
        return ChainSupport(
            methods=self._networks.methods(chain)
            | (EVM_STREAM_METHODS if is_evm(chain) else frozenset()),
            notifications=self._networks.notifications(chain),
        )

    def watch_changes(self, watcher: Callable[[SessionChange], None]) -> None:
        """Tell ``watcher`` of every session change this process hears (with Redis, those of every
        process), and of every session it ends at expiry."""
        self._change_watchers.append(watcher)

    def connection_count(self, identity: Identity) -> int:
        """How many connections of ``identity`` this process holds."""
        return len(self._connections.get(identity, ()))

    def _held(self, chain: str) -> Sequence[str]:
        adapter = self._networks.accounts_for(chain)
        return adapter.accounts(chain) if adapter is not None else ()

    def _track(self, conn: WebSocketConnection) -> None:
        identity = Identity.of(conn.context.api_key, conn.context.origin)
        self._connections[identity].append(conn)
        self._tracker.connected(identity)

    def _untrack(self, conn: WebSocketConnection) -> None:
        identity = Identity.of(conn.context.api_key, conn.context.origin)
        conns = self._connections.get(identity)
        if conns is not None:
            if conn in conns:
                conns.remove(conn)
            if not conns:
                del self._connections[identity]
                if self._tracker.gone(identity, trio.current_time()):
                    self._current_dialect.discard(identity)

    def _forget_lingering(self) -> None:
        for identity in self._tracker.forget_lingering(trio.current_time()):
            self._current_dialect.discard(identity)

    async def _start(self, nursery: trio.Nursery) -> None:
        position = await nursery.start(self.changes.serve_reader, self._on_change)
        if self._resume is not None:
            self._resume.positions.advance(CHANGES, position)
        nursery.start_soon(self._watch_expiry)

    @staticmethod
    def _identity(ctx: CallContext) -> Identity:
        return Identity.of(ctx.api_key, ctx.origin)

    def _note_dialect(self, identity: Identity, session: Session) -> None:
        if identity not in self._connections:
            return
        if session.dialect == CURRENT:
            self._current_dialect.add(identity)
        else:
            self._current_dialect.discard(identity)

    def _dialect(self, identity: Identity) -> str:
        return CURRENT if identity in self._current_dialect else LEGACY

    async def _current(self, identity: Identity, now: datetime) -> Session | None:
        session = await self.store.get(identity)
        if session is not None:
            self._note_dialect(identity, session)
        if session is not None and is_expired(session, now):
            return None
        if session is not None and identity in self._connections:
            self._tracker.watch(identity, session.expiry)  # so its connections hear of its end
        return session

    # -- wallet_* methods -----------------------------------------------------------------------

    async def _create(self, ctx: CallContext, params: msgspec.Raw) -> Any:
        identity = self._identity(ctx)
        request = parse_create_session(params, now=_now())
        try:
            offer = apply_support(request, self.supported)
            decision = await self.policy.decide_session(identity, offer, self._held)
            session = grant(
                offer,
                identity=identity,
                supported=self.supported,
                accounts=decision.accounts,
                now=_now(),
                max_expiry=self.max_expiry,
                keep=decision.scopes,
            )
            previous = await self.store.modify(identity, lambda current: (session, current))
        except RpcError:
            raise
        except Exception as exc:
            log.exception("wallet_createSession failed")
            raise UnknownSessionError() from exc
        self._note_dialect(identity, session)
        if diff_sessions(previous, session).changed:
            await self._announce(identity, session, ctx)
        return create_result(session)

    async def _get(self, ctx: CallContext, params: msgspec.Raw) -> Any:
        now = _now()
        identity = self._identity(ctx)
        return get_result(await self._current(identity, now), now, self._dialect(identity))

    async def _revoke(self, ctx: CallContext, params: msgspec.Raw) -> Any:
        await self.revoke(self._identity(ctx), parse_revoke_session(params), ctx)
        return True

    async def revoke(
        self, identity: Identity, scopes: list[str] | None, ctx: CallContext | None = None
    ) -> bool:
        """Revoke some or all scopes of an identity's session; whether anything changed."""

        def revoked(current: Session | None) -> tuple[Session | None, ScopeUpdate]:
            update = revoke_scopes(current, scopes)
            return update.session, update

        try:
            update = await self.store.modify(identity, revoked)
        except RpcError:
            raise
        except Exception as exc:
            log.exception("wallet_revokeSession failed")
            raise UnknownSessionError() from exc
        if update.changed:
            await self._announce(identity, update.session, ctx)
        return update.changed

    async def update(self, identity: Identity, scopes: Any) -> Session | None:
        """The operator's replacement of an identity's scopes (validated like a request)."""

        def updated(current: Session | None) -> tuple[Session | None, ScopeUpdate]:
            if current is None:
                raise InvalidParams("no session for that apiKey and origin")
            update = update_scopes(current, scopes, supported=self.supported)
            return update.session, update

        update = await self.store.modify(identity, updated)
        if update.changed:
            await self._announce(identity, update.session, None)
        return update.session

    async def _invoke(self, ctx: CallContext, params: msgspec.Raw) -> Any:
        now = _now()
        request = parse_invoke_method(params)
        identity = self._identity(ctx)
        session = await self._current(identity, now)
        authorize_invoke(session, request, now=now)
        network = self._networks.by_chain(request.scope)
        if network is None:
            raise Unauthorized()
        inner = request.params if request.params is not None else []
        hub = self._broker.hub
        family = hub.families.get(network.chain)
        if family is not None and (
            request.method in family.methods or request.method in family.unsubscribe_methods()
        ):
            if ctx.peer is None:
                raise SubscriptionsNeedWebSocket()
            if request.method in family.methods:
                notification = family.parse(request.method, inner).notification
                if not is_notification_granted(session, request.scope, notification, now=now):
                    raise Unauthorized()
                if ctx.access is not None:
                    ctx.access.check_subscriptions(hub.held(ctx.peer))
                result: Any = await hub.subscribe_family(
                    ctx.peer, network.chain, request.method, inner, scope=request.scope
                )
            else:
                result = hub.unsubscribe_family(
                    ctx.peer, network.chain, request.method, inner, scope=request.scope
                )
        elif request.method in ("eth_subscribe", "eth_unsubscribe"):
            if ctx.peer is None:
                raise SubscriptionsNeedWebSocket()
            if request.method == "eth_subscribe":
                if not is_notification_granted(
                    session, request.scope, SUBSCRIPTION_NOTIFICATION, now=now
                ):
                    raise Unauthorized()
                if ctx.access is not None:
                    ctx.access.check_subscriptions(hub.held(ctx.peer))
                result = await hub.subscribe(ctx.peer, network.chain, inner, scope=request.scope)
            else:
                sub_id = inner[0] if isinstance(inner, list) and inner else None
                result = hub.unsubscribe(ctx.peer, sub_id, scope=request.scope)
        else:
            scoped = CallContext(
                network,
                ctx.api_key,
                ctx.origin,
                ctx.peer,
                accounts=permitted_addresses(session, request.scope, now=now),
                access=ctx.access,
            )
            result = await self._broker.dispatcher.call(
                scoped, request.method, msgspec.Raw(msgspec.json.encode(inner))
            )
        return {"scope": request.scope, "result": {"method": request.method, "result": result}}

    # -- telling connections ----------------------------------------------------------------------

    async def _announce(
        self, identity: Identity, session: Session | None, ctx: CallContext | None
    ) -> None:
        exclude = ctx.peer if ctx is not None else None
        exclude_id = getattr(exclude, "id", None)
        if exclude is not None:
            self._prune(exclude, session)  # the requester's own subscriptions follow the change too
        await self.changes.publish(
            SessionChange(
                identity,
                encode_session(session) if session is not None else None,
                source=self.process_id,
                exclude=exclude_id if isinstance(exclude_id, int) else None,
            )
        )

    def _on_change(self, change: SessionChange, position: Position | None = None) -> None:
        for watcher in self._change_watchers:
            try:
                watcher(change)
            except Exception:
                log.exception("session change watcher failed")
        resume = self._resume
        if resume is not None and position is not None:
            resume.positions.advance(CHANGES, position, change)
        conns = self._connections.get(change.identity)
        if not conns:
            if self._tracker.lingering(change.identity):  # gone, but may resume: still watched
                gone = decode_session(change.session) if change.session is not None else None
                self._tracker.watch(change.identity, gone.expiry if gone else None)
            return  # a dapp of another process: that process tracks and ends its session
        session = decode_session(change.session) if change.session is not None else None
        dialect = self._dialect(change.identity)
        self._tracker.watch(change.identity, session.expiry if session else None)
        if session is not None:
            self._note_dialect(change.identity, session)
        message = notification_bytes("wallet_sessionChanged", changed_params(session, dialect))
        for conn in list(conns):
            self._prune(conn, session)
            if change.source == self.process_id and conn.id == change.exclude:
                continue
            if resume is not None:
                conn.send_message(with_cursor(message, resume.cursor(conn)))
            else:
                conn.send_message(message)

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
            params = changed_params(session, self._dialect(identity))
            messages.append((position, notification_bytes("wallet_sessionChanged", params)))
        if not changed:
            return messages, None
        now = _now()

        def keep(scope: str, notification: str) -> bool:
            return is_notification_granted(final, scope, notification, now=now)

        return messages, keep

    def _prune(self, conn: Any, session: Session | None) -> None:
        now = _now()
        self._broker.hub.drop_where(
            conn,
            lambda sub: (
                sub.scope is not None
                and not is_notification_granted(
                    session, sub.scope, sub.notification.decode(), now=now
                )
            ),
        )

    async def _look_up_new_identities(self) -> list[Exception]:
        """Track the sessions of newly connected identities; the lookups that failed."""
        failures: list[Exception] = []
        for identity in self._tracker.to_look_up(self._connections):
            try:
                session = await self.store.get(identity)
            except Exception as exc:
                self._tracker.look_up_failed(identity)
                failures.append(exc)
                continue
            expiry = session.expiry if session is not None else None
            self._tracker.looked_up(identity, expiry, connected=identity in self._connections)
        return failures

    async def _end_expired(self) -> list[Exception]:
        """End the expired sessions of the identities connected here; the ends that failed."""
        failures: list[Exception] = []
        now = _now()

        def ended(current: Session | None) -> tuple[Session | None, Session | None]:
            # Deleted only if still expired: another process may have replaced it meanwhile.
            if current is not None and not is_expired(current, now):
                return current, current
            return None, current

        for identity, expiry in self._tracker.due(now):
            try:
                session = await self.store.modify(identity, ended)
            except Exception as exc:
                failures.append(exc)  # still tracked: the next check tries again
                continue
            if not self._tracker.still(identity, expiry):
                continue  # a change or the last disconnect came meanwhile, and was applied
            if session is not None and not is_expired(session, now):
                self._tracker.watch(identity, session.expiry)
                continue
            # Through the bus, like every change: it gets a position, so a connection that
            # drops before hearing it hears it when it resumes (on any process).
            self._tracker.ended(identity)
            try:
                await self.changes.publish(SessionChange(identity, None))
            except Exception as exc:
                self._tracker.end_failed(identity, expiry)  # the next check tries again
                failures.append(exc)
        return failures

    async def _watch_expiry(self) -> None:
        failing = False
        while True:
            await trio.sleep(self.expiry_check)
            # One identity's failure (a corrupt session, a Redis outage) holds up no other's.
            failures = await self._look_up_new_identities()
            failures += await self._end_expired()
            self._forget_lingering()
            if failures:
                # A store outage fails every identity, check after check: one traceback per
                # outage, then a line per failed check.
                first = failures[0]
                log.warning(
                    "session expiry check failed for %s (%s: %s); trying again in %g s",
                    "1 identity" if len(failures) == 1 else f"{len(failures)} identities",
                    type(first).__name__,
                    first,
                    self.expiry_check,
                    exc_info=False if failing else first,
                )
                failing = True
            elif failing:
                log.info("session expiry checks work again")
                failing = False
