"""The multichain session methods: ``wallet_createSession``, ``wallet_getSession``,
``wallet_invokeMethod``, ``wallet_revokeSession`` (the I/O shell around :mod:`broker.sessions`),
and the operator's changes to a session (``admin_updateSession``, ``admin_revokeSession``)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import msgspec

from broker.events.stream_methods import served_methods
from broker.rpc.dispatch import CallContext, Dispatcher, Handler
from broker.rpc.networks import Networks
from broker.sessions import (
    ChainSupport,
    Identity,
    InvokeRequest,
    ScopeUpdate,
    Session,
    SessionStore,
    apply_support,
    authorize_invoke,
    diff_sessions,
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
from broker.sessions.approvals import ApprovalPolicy
from broker.sessions.client_profiles import METAMASK
from broker.sessions.dialects import create_result, get_result
from broker.sessions.metamask import (
    accounts_changed,
    as_metamask_reads,
    end_if_accountless,
    everything_served,
    kept_session_properties,
    without_unheld_accounts,
)
from broker.sessions.service._connected import ConnectedDapps
from broker.sessions.service._fanout import ChangeFanOut
from broker.sessions.wall_clock import WallClock
from schemas.errors import (
    InvalidParams,
    RpcError,
    SubscriptionsNeedWebSocket,
    Unauthorized,
    UnknownSessionError,
)

if TYPE_CHECKING:
    from broker.events.subscriptions import SubscriptionHub

log = logging.getLogger(__name__)


def _identity(ctx: CallContext) -> Identity:
    return Identity.of(ctx.api_key, ctx.origin)


class WalletMethods:
    """The ``wallet_*`` handlers of one process, over its session store."""

    def __init__(
        self,
        networks: Networks,
        dispatcher: Dispatcher,
        hub: SubscriptionHub,
        *,
        dapps: ConnectedDapps,
        fanout: ChangeFanOut,
        store: SessionStore,
        policy: ApprovalPolicy,
        max_expiry: timedelta,
        clock: WallClock,
    ) -> None:
        self._networks = networks
        self._dispatcher = dispatcher
        self._hub = hub
        self._dapps = dapps
        self._fanout = fanout
        self._store = store
        self._policy = policy
        self._max_expiry = max_expiry
        self._clock = clock

    def handlers(self) -> dict[str, Handler]:
        """The methods, by name, for the dispatcher."""
        return {
            "wallet_createSession": self._create,
            "wallet_getSession": self._get,
            "wallet_invokeMethod": self._invoke,
            "wallet_revokeSession": self._revoke,
        }

    def supported(self, chain: str) -> ChainSupport | None:
        """What the broker serves on ``chain`` (None: no network)."""
        if self._networks.by_chain(chain) is None:
            return None
        return ChainSupport(
            methods=self._networks.methods(chain) | served_methods(self._hub, chain),
            notifications=self._networks.notifications(chain),
            signing=bool(self._held(chain)),
        )

    def _held(self, chain: str) -> Sequence[str]:
        adapter = self._networks.accounts_for(chain)
        return adapter.accounts(chain) if adapter is not None else ()

    async def _current(self, identity: Identity, now: datetime) -> Session | None:
        session = await self._store.get(identity)
        if session is None:
            return None
        self._dapps.seen(identity, session)
        if is_expired(session, now):
            return None
        self._dapps.watch(identity, session)  # so its connections hear of its end
        return session

    # -- the dapp's calls -------------------------------------------------------------------------

    async def _create(self, ctx: CallContext, params: msgspec.Raw) -> Any:
        identity = _identity(ctx)
        kept: dict[str, Any] = {}
        if ctx.client == METAMASK:
            given = msgspec.json.decode(params)
            request = parse_create_session(as_metamask_reads(given), now=self._clock.now())
            request = without_unheld_accounts(
                everything_served(request, self.supported), self._held
            )
            # An object: parse_create_session refused anything else.
            kept = kept_session_properties(given.get("sessionProperties"))
        else:
            request = parse_create_session(params, now=self._clock.now())
        try:
            offer = apply_support(request, self.supported, served=[n.chain for n in self._networks])
            decision = await self._policy.decide_session(identity, offer, self._held)
            session = grant(
                offer,
                identity=identity,
                supported=self.supported,
                accounts=decision.accounts,
                now=self._clock.now(),
                max_expiry=self._max_expiry,
                keep=decision.scopes,
            )
            if kept:
                session = msgspec.structs.replace(session, properties=kept)
            previous = await self._store.modify(identity, lambda current: (session, current))
        except RpcError:
            raise
        except Exception as exc:
            log.exception("wallet_createSession failed")
            raise UnknownSessionError() from exc
        self._dapps.seen(identity, session)
        if previous is not None and is_expired(previous, self._clock.now()):
            previous = None  # its accounts were no longer permitted
        if diff_sessions(previous, session).changed or accounts_changed(previous, session):
            await self._fanout.announce(identity, session, ctx, previous=previous)
        return create_result(session)

    async def _get(self, ctx: CallContext, params: msgspec.Raw) -> Any:
        now = self._clock.now()
        identity = _identity(ctx)
        return get_result(await self._current(identity, now), now, self._dapps.dialect(identity))

    async def _revoke(self, ctx: CallContext, params: msgspec.Raw) -> Any:
        await self.revoke(
            _identity(ctx),
            parse_revoke_session(params),
            ctx,
            end_accountless=ctx.client == METAMASK,
        )
        return True

    async def _invoke(self, ctx: CallContext, params: msgspec.Raw) -> Any:
        now = self._clock.now()
        request = parse_invoke_method(params)
        session = await self._current(_identity(ctx), now)
        authorize_invoke(session, request, now=now)
        network = self._networks.by_chain(request.scope)
        if network is None:
            raise Unauthorized()
        inner = request.params if request.params is not None else []
        family = self._hub.families.get(network.chain)
        if family is not None and (
            request.method in family.methods or request.method in family.unsubscribe_methods()
        ):
            if ctx.peer is None:
                raise SubscriptionsNeedWebSocket()
            if request.method in family.methods:
                notification = family.parse(request.method, inner).notification
                self._check_subscription(ctx, session, request, notification, now)
                result: Any = await self._hub.subscribe(
                    ctx.peer, network.chain, request.method, inner, scope=request.scope
                )
            else:
                result = self._hub.unsubscribe(
                    ctx.peer, network.chain, request.method, inner, scope=request.scope
                )
        else:
            scoped = CallContext(
                network,
                ctx.api_key,
                ctx.origin,
                ctx.peer,
                accounts=permitted_addresses(session, request.scope, now=now),
                access=ctx.access,
                client=ctx.client,
            )
            result = await self._dispatcher.call(
                scoped, request.method, msgspec.Raw(msgspec.json.encode(inner))
            )
        if ctx.client == METAMASK:
            return result  # MetaMask answers the invoked method's result as it is
        return {"scope": request.scope, "result": {"method": request.method, "result": result}}

    def _check_subscription(
        self,
        ctx: CallContext,
        session: Session | None,
        request: InvokeRequest,
        notification: str,
        now: datetime,
    ) -> None:
        """A subscription inside the session: its notification granted on the scope, and the
        key's subscription limit not reached."""
        if not is_notification_granted(session, request.scope, notification, now=now):
            raise Unauthorized()
        if ctx.access is not None and ctx.peer is not None:
            ctx.access.check_subscriptions(self._hub.held(ctx.peer))

    # -- the operator's (and the dapp's) changes ------------------------------------------------

    async def revoke(
        self,
        identity: Identity,
        scopes: list[str] | None,
        ctx: CallContext | None = None,
        *,
        end_accountless: bool = False,
    ) -> bool:
        """Revoke some or all scopes of an identity's session; whether anything changed.
        ``end_accountless``: end the session when the scopes left permit no account (MetaMask)."""
        previous: list[Session | None] = [None]

        def revoked(current: Session | None) -> tuple[Session | None, ScopeUpdate]:
            previous[0] = current
            update = revoke_scopes(current, scopes)
            if end_accountless:
                update = end_if_accountless(update, current)
            return update.session, update

        try:
            update = await self._store.modify(identity, revoked)
        except RpcError:
            raise
        except Exception as exc:
            log.exception("wallet_revokeSession failed")
            raise UnknownSessionError() from exc
        if update.changed:
            await self._fanout.announce(identity, update.session, ctx, previous=previous[0])
        return update.changed

    async def update(self, identity: Identity, scopes: Any) -> Session | None:
        """The operator's replacement of an identity's scopes (validated like a request)."""

        previous: list[Session | None] = [None]

        def updated(current: Session | None) -> tuple[Session | None, ScopeUpdate]:
            if current is None:
                raise InvalidParams("no session for that apiKey and origin")
            previous[0] = current
            update = update_scopes(current, scopes, supported=self.supported)
            return update.session, update

        update = await self._store.modify(identity, updated)
        if update.changed:
            await self._fanout.announce(identity, update.session, None, previous=previous[0])
        return update.session
