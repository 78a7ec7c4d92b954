"""The trio shell of the access rules: checks a request's key at the door (Origin, secret, token),
then admits its calls (rate), its WebSocket (connection cap) and its subscriptions.

:meth:`AccessControl.check` runs where the API key is checked, for HTTP requests and WebSocket
upgrades alike, and leaves a :class:`KeyAccess` on the call context; the dispatcher asks it before
each request or batch (:meth:`KeyAccess.admit`) and each call (:meth:`KeyAccess.check_method`).
A key without a ``[keys.*]`` table gets no :class:`KeyAccess`: nothing is checked or counted.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hmac
import logging
import math
import time
from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal
from urllib.parse import parse_qs

import msgspec
import trio
from prometheus_client import CollectorRegistry, Counter

from broker.access._keys import KeyPolicy
from broker.access._limiter import Limiter, LimiterUnavailable
from broker.access._policy import Rate, Taken, origin_allowed, retry_after_seconds
from broker.access._tokens import Claims, verify_token
from broker.rpc.dispatch import CallContext
from broker.sessions.wall_clock import SYSTEM_CLOCK, WallClock
from broker.transport.http import JSON_HEADERS, HttpRequest, HttpResponse, Upgrade, json_error
from broker.transport.websocket import WebSocketConnection
from schemas.access import refresh_token_params
from schemas.errors import (
    AccessDenied,
    InvalidParams,
    InvalidRequest,
    MethodNotAllowed,
    OverLimit,
    RpcError,
    Unauthenticated,
    rate_limited,
)

log = logging.getLogger(__name__)

#: The close code of a WebSocket whose token expired ``token_grace`` seconds ago, unrenewed.
CLOSE_TOKEN_EXPIRED: Final = 4011
#: The method that renews a WebSocket's token: ``scopecast_refreshToken(["<jwt>"])``.
REFRESH_METHOD: Final = "scopecast_refreshToken"
#: ``Retry-After`` of an upgrade over ``max_connections`` (nothing says when a socket will close).
CONNECTION_RETRY_AFTER: Final = 5
#: How often expired tokens are looked for: a socket closes within this of its deadline.
TOKEN_CHECK_INTERVAL: Final = 1.0
#: At most one "limits without Redis" warning this often.
DOWN_LOG_INTERVAL: Final = 30.0
_BASIC: Final = b"basic "
_BEARER: Final = b"bearer "

WhenDown = Literal["open", "closed"]


class AccessMetrics:
    """The counts of ``/metrics``, labelled only with configured keys (never with a request's)."""

    def __init__(self, registry: CollectorRegistry, keys: Iterable[str]) -> None:
        def per_key(name: str, documentation: str) -> Counter:
            return Counter(name, documentation, ["key"], registry=registry)

        self.limited = per_key(
            "scopecast_requests_limited", "Calls refused over their key's requests_per_second"
        )
        self.connections_refused = per_key(
            "scopecast_connections_refused",
            "WebSocket upgrades refused over their key's max_connections",
        )
        self.subscriptions_refused = per_key(
            "scopecast_subscriptions_refused",
            "Subscriptions refused over their key's max_subscriptions",
        )
        self.refused = Counter(
            "scopecast_access_refused",
            "Requests and upgrades refused at the door (reason: origin, secret, token)",
            ["key", "reason"],
            registry=registry,
        )
        self.limiter_unavailable = Counter(
            "scopecast_limiter_unavailable",
            "Limit decisions taken without Redis (decision: open or closed)",
            ["decision"],
            registry=registry,
        )
        for key in keys:  # every series exists from the start, at 0
            self.limited.labels(key)
            self.connections_refused.labels(key)
            self.subscriptions_refused.labels(key)
            for reason in ("origin", "secret", "token"):
                self.refused.labels(key, reason)


def _header_token(request: HttpRequest) -> str | None:
    authorization = request.header(b"authorization") or b""
    if authorization[: len(_BEARER)].lower() == _BEARER:
        return authorization[len(_BEARER) :].strip().decode("latin-1")
    _, _, query = request.target.partition(b"?")
    tokens = parse_qs(query.decode("latin-1")).get("token")
    return tokens[0] if tokens else None


def _basic_password(request: HttpRequest) -> bytes | None:
    authorization = request.header(b"authorization") or b""
    if authorization[: len(_BASIC)].lower() != _BASIC:
        return None
    try:
        decoded = base64.b64decode(authorization[len(_BASIC) :].strip(), validate=True)
    except (binascii.Error, ValueError):
        return None
    return decoded.partition(b":")[2]


class AccessControl:
    """The rules of every configured key, and where their counts live."""

    def __init__(
        self,
        policies: Mapping[str, KeyPolicy],
        limiter: Limiter,
        metrics: AccessMetrics,
        *,
        when_down: WhenDown = "open",
        token_grace: float = 30.0,
        clock: WallClock = SYSTEM_CLOCK,
    ) -> None:
        """``clock``: the wall clock tokens are checked by (``exp`` is wall-clock time), when
        they are presented and every ``TOKEN_CHECK_INTERVAL`` (trio's clock) on open sockets."""
        self.policies = dict(policies)
        self.limiter = limiter
        self.metrics = metrics
        self.when_down = when_down
        self.token_grace = token_grace
        self._clock = clock
        self._watched: dict[WebSocketConnection, KeyAccess] = {}
        self._down_logged = -math.inf

    @property
    def uses_tokens(self) -> bool:
        """Whether some key takes tokens (then WebSockets are watched for their expiry)."""
        return any(p.token_key is not None for p in self.policies.values())

    def _now(self) -> float:
        """The wall clock's time in Unix seconds, as tokens state it."""
        return self._clock.now().timestamp()

    # -- at the door ----------------------------------------------------------------------------

    def governs(self, api_key: str) -> bool:
        """Whether ``api_key`` has rules or limits (a ``[keys.*]`` table) to check."""
        return api_key in self.policies

    def check(self, request: HttpRequest, context: CallContext) -> HttpResponse | None:
        """Refuse a request its key's Origin, secret or token rules refuse; else leave the key's
        :class:`KeyAccess` on ``context`` (nothing for a key without a ``[keys.*]`` table)."""
        policy = self.policies.get(context.api_key)
        if policy is None:
            return None
        raw_origin = request.header(b"origin")
        origin = None if raw_origin is None else raw_origin.decode("latin-1")
        if not origin_allowed(policy.origins, origin):
            return self._refuse(policy, "origin", 403, _origin_denied(origin))
        if policy.secret is not None:
            password = _basic_password(request)
            if password is None or not hmac.compare_digest(password, policy.secret):
                error = Unauthenticated(
                    "missing or wrong secret: send it with HTTP Basic auth (the password)"
                )
                refusal = self._refuse(policy, "secret", 401, error)
                refusal.headers = [*JSON_HEADERS, (b"www-authenticate", b'Basic realm="scopecast"')]
                return refusal
        claims = None
        if policy.token_key is not None:
            token = _header_token(request)
            if token is None:
                error = Unauthenticated(
                    "missing token: send Authorization: Bearer <JWT> (or ?token=<JWT>)"
                )
                return self._refuse(policy, "token", 401, error)
            try:
                claims = verify_token(token, policy.token_key, policy.name, now=self._now())
            except Unauthenticated as exc:
                return self._refuse(policy, "token", 401, exc)
            if not origin_allowed(claims.origins, origin):
                return self._refuse(policy, "origin", 403, _origin_denied(origin))
        context.access = KeyAccess(self, policy, claims, origin)
        if policy.client is not None:
            context.client = policy.client
        return None

    def _refuse(self, policy: KeyPolicy, reason: str, status: int, error: RpcError) -> HttpResponse:
        self.metrics.refused.labels(policy.name, reason).inc()
        return json_error(status, error)

    # -- counting -------------------------------------------------------------------------------

    async def take(self, policy: KeyPolicy, rate: Rate, cost: int) -> Taken:
        """``cost`` calls from the key's bucket; without Redis, all or none (``when_down``)."""
        try:
            return await self.limiter.take(policy.name, rate, cost)
        except LimiterUnavailable as exc:
            self._limiter_down(exc)
            return Taken(cost, 0, 0) if self.when_down == "open" else Taken(0, 1_000_000, 0)

    def _limiter_down(self, exc: LimiterUnavailable) -> None:
        self.metrics.limiter_unavailable.labels(self.when_down).inc()
        now = time.monotonic()
        if now - self._down_logged >= DOWN_LOG_INTERVAL:
            self._down_logged = now
            log.warning(
                "limits without Redis (%s): failing %s, as [server] limits_when_redis_down says",
                exc,
                self.when_down,
            )

    async def open_connection(
        self, context: CallContext, upgrade: Upgrade
    ) -> HttpResponse | Upgrade:
        """The upgrade, holding one of the key's ``max_connections`` slots while it runs; or 429."""
        access = context.access
        if not isinstance(access, KeyAccess) or access.policy.max_connections is None:
            return upgrade
        policy = access.policy
        assert policy.max_connections is not None
        slot: str | None
        try:
            slot = await self.limiter.open_slot(policy.name, policy.max_connections)
        except LimiterUnavailable as exc:
            self._limiter_down(exc)
            if self.when_down == "closed":
                slot = None
            else:
                return upgrade
        if slot is None:
            self.metrics.connections_refused.labels(policy.name).inc()
            refusal = json_error(
                429,
                OverLimit(data={"limit": "max_connections", "max": policy.max_connections}),
            )
            refusal.headers = [*JSON_HEADERS, (b"retry-after", b"%d" % CONNECTION_RETRY_AFTER)]
            return refusal
        held = slot

        async def run(stream: trio.SocketStream, trailing: bytes) -> None:
            try:
                await upgrade(stream, trailing)
            finally:
                with trio.CancelScope(shield=True):
                    # Unrefreshed from now on, a slot Redis did not hear about expires there.
                    with contextlib.suppress(LimiterUnavailable):
                        await self.limiter.close_slot(policy.name, held)

        return run

    # -- tokens on WebSockets -------------------------------------------------------------------

    def watch(self, conn: WebSocketConnection) -> None:
        """Close ``conn`` once its token expired ``token_grace`` ago (if it came with one)."""
        access = conn.context.access
        if isinstance(access, KeyAccess) and access.claims is not None:
            self._watched[conn] = access

    def unwatch(self, conn: WebSocketConnection) -> None:
        """Forget ``conn`` (it ended)."""
        self._watched.pop(conn, None)

    def expired(self, now: float) -> list[WebSocketConnection]:
        """The watched connections whose token (plus grace) is over at ``now`` (Unix seconds)."""
        return [
            conn
            for conn, access in self._watched.items()
            if access.claims is not None and access.claims.expires + self.token_grace <= now
        ]

    async def start(self, nursery: trio.Nursery) -> None:
        """Start the limiter's upkeep and the token expiry checks in ``nursery`` (the composition
        root starts it with the broker's services)."""
        await nursery.start(self.limiter.serve)
        if self.uses_tokens:
            nursery.start_soon(self._close_expired)

    async def _close_expired(self) -> None:
        while True:
            await trio.sleep(TOKEN_CHECK_INTERVAL)
            for conn in self.expired(self._now()):
                self.unwatch(conn)
                conn.close(CLOSE_TOKEN_EXPIRED, "token expired")

    async def refresh_token(self, ctx: CallContext, params: msgspec.Raw) -> Any:
        """``scopecast_refreshToken(["<jwt>"])``: a WebSocket's fresh token, before its old one
        expires (plus ``token_grace``); answers the new expiry (Unix seconds)."""
        # No checkpoint: a method handler answered from memory; the call's own task has one.
        access = ctx.access
        if ctx.peer is None or not isinstance(access, KeyAccess) or access.claims is None:
            raise InvalidRequest(f"{REFRESH_METHOD}: only on a WebSocket opened with a token")
        try:
            fresh = refresh_token_params.decode(params).token
        except msgspec.DecodeError:  # not JSON, or not one string
            raise InvalidParams(f"{REFRESH_METHOD} takes one parameter: the token") from None
        key = access.policy.token_key
        assert key is not None
        claims = verify_token(fresh, key, access.policy.name, now=self._now())
        if not origin_allowed(claims.origins, access.origin):
            raise _origin_denied(access.origin)
        access.claims = claims
        return {"expires": int(claims.expires)}


def _origin_denied(origin: str | None) -> AccessDenied:
    shown = "no Origin" if origin is None else f"the origin {origin}"
    return AccessDenied(f"{shown} is not allowed for this key")


class KeyAccess:
    """One request's (or one WebSocket's) key: what :class:`~broker.rpc.dispatch.Access` asks."""

    __slots__ = ("_control", "claims", "origin", "policy", "refused_for_us")

    def __init__(
        self, control: AccessControl, policy: KeyPolicy, claims: Claims | None, origin: str | None
    ) -> None:
        self._control = control
        self.policy = policy
        self.claims = claims
        self.origin = origin
        #: Set when a request's every call was refused: how long until one more is admitted.
        self.refused_for_us: int | None = None

    async def admit(self, calls: int) -> tuple[int, RpcError | None]:
        """How many of ``calls`` the key's rate admits now, and the error for the others."""
        rate = self.policy.rate
        if rate is None:
            return calls, None
        taken = await self._control.take(self.policy, rate, calls)
        if taken.admitted >= calls:
            return calls, None
        self._control.metrics.limited.labels(self.policy.name).inc(calls - taken.admitted)
        if taken.admitted == 0:
            self.refused_for_us = taken.retry_after_us
        return taken.admitted, rate_limited(math.ceil(taken.retry_after_us / 1000))

    def check_method(self, method: str) -> None:
        """Raise :class:`MethodNotAllowed` naming the rule (the key's, or its token's) that
        refuses ``method``."""
        if method == REFRESH_METHOD:  # part of holding a token, whatever the key's methods
            return
        for rule in (self.policy.methods, self.claims.methods if self.claims else None):
            if rule is not None and not rule.allows(method):
                raise MethodNotAllowed(method, rule.describe())

    def check_subscriptions(self, held: int) -> None:
        """Raise :class:`OverLimit` when a connection holding ``held`` subscriptions is full."""
        limit = self.policy.max_subscriptions
        if limit is not None and held >= limit:
            self._control.metrics.subscriptions_refused.labels(self.policy.name).inc()
            raise OverLimit(data={"limit": "max_subscriptions", "max": limit})

    def http_response(self, body: bytes) -> HttpResponse:
        """The HTTP answer carrying ``body``: 429 with ``Retry-After`` when every call was
        refused over the rate, else 200 (refused calls of a batch carry their own -32005)."""
        if self.refused_for_us is None:
            return HttpResponse(200, body, JSON_HEADERS)
        retry = b"%d" % retry_after_seconds(self.refused_for_us)
        return HttpResponse(429, body, [*JSON_HEADERS, (b"retry-after", retry)])
