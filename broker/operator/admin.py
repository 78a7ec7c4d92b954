"""The wallet operator API: ``POST /admin``, JSON-RPC, ``Authorization: Bearer <token>``.

``admin_listSessions``, ``admin_updateSession {apiKey, origin, sessionScopes}``,
``admin_revokeSession {apiKey, origin, scopes?}``, ``admin_listApprovals``,
``admin_approve {id, accounts?, sessionScopes?}``, ``admin_reject {id}``; and, where webhooks are
delivered, ``admin_createWebhook {url, chain, subscription, allowPrivate?}``, ``admin_listWebhooks``,
``admin_deleteWebhook {id}``, ``admin_replayWebhook {id, cursor}`` (:mod:`broker.events.webhooks`).
"""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING, Any

import msgspec

from broker.access.origins import loopback_host, same_origin
from broker.rpc.dispatch import CallContext, Dispatcher
from broker.sessions import Identity, Session, create_session_result, is_expired
from broker.sessions.scopes import parse_scopes
from broker.transport.http import JSON_HEADERS, HttpRequest, HttpResponse, json_error
from schemas.admin import (
    DappParams,
    approve_params,
    create_webhook_params,
    reject_params,
    replay_webhook_params,
    revoke_session_params,
    update_session_params,
    webhook_id_params,
)
from schemas.errors import InvalidParams, Unauthenticated, Unauthorized

if TYPE_CHECKING:
    from broker.events.webhooks import WebhookOperations
    from broker.metrics import Metrics
    from broker.rpc.networks import Networks
    from broker.sessions.service import SessionService


WRONG_TOKEN = "missing or wrong admin token"
DISABLED = "the operator API needs --admin-token (or SCOPECAST_ADMIN_TOKEN) off loopback"
FOREIGN_ORIGIN = "the operator API answers scripts (no Origin) and the console of its own origin, not other sites"


def _identity(params: DappParams) -> Identity:
    return Identity.of(params.apiKey, params.origin)


def describe_session(session: Session) -> dict[str, Any]:
    """A session as the operator sees it: its dapp, scopes and expiry."""
    return {
        "apiKey": session.identity.api_key,
        "origin": session.identity.origin,
        **msgspec.to_builtins(create_session_result(session)),
    }


def _not_waiting(approval_id: str) -> InvalidParams:
    return InvalidParams(
        f"no request {approval_id!r} is waiting: answered already, timed out, or its dapp hung up"
    )


class AdminApi:
    """Serves ``/admin`` for one broker."""

    def __init__(
        self,
        networks: Networks,
        metrics: Metrics,
        sessions: SessionService,
        token: str | None,
        *,
        public_token: bool = False,
        webhooks: WebhookOperations | None = None,
    ) -> None:
        """``token`` None: no token was configured off loopback, so every request gets 401.
        ``public_token``: it is the public dev token (loopback only): then a request must name a
        loopback host (see :mod:`broker.access.origins` on DNS rebinding). ``webhooks``: the webhooks
        this broker delivers (None: no ``admin_*Webhook`` methods)."""
        self.public_token = public_token
        self._sessions = sessions
        self.webhooks = webhooks
        self._token = token.encode() if token is not None else None
        self._dispatcher = Dispatcher(networks, metrics, chain_calls=False)
        self._context = CallContext(networks.default, "admin", "admin")
        for name in (
            "listSessions",
            "updateSession",
            "revokeSession",
            "listApprovals",
            "approve",
            "reject",
        ):
            self._dispatcher.register(f"admin_{name}", getattr(self, f"_{name}"))
        if webhooks is not None:
            for name in ("createWebhook", "listWebhooks", "deleteWebhook", "replayWebhook"):
                self._dispatcher.register(f"admin_{name}", getattr(self, f"_{name}"))

    def accepts(self, token: str) -> bool:
        """Whether ``token`` opens the API (the banner says when it is the public dev token)."""
        return self._token is not None and hmac.compare_digest(self._token, token.encode())

    @property
    def enabled(self) -> bool:
        """Whether a token can open the API (False: every request gets 401, :data:`DISABLED`)."""
        return self._token is not None

    def refusal(self, request: HttpRequest, *, token_optional: bool = False) -> HttpResponse | None:
        """The 401 for a request without the bearer token (None: it may go on).

        ``token_optional``: a request with no ``Authorization`` header may go on too, when the API
        is enabled (a browser's WebSocket cannot send one: the operator feed reads the token from
        the first message instead); a wrong header is refused all the same.
        """
        if self._token is None:
            return json_error(401, Unauthenticated(DISABLED))
        auth = request.header(b"authorization")
        if auth is None and token_optional:
            return None
        if not hmac.compare_digest(auth or b"", b"Bearer " + self._token):
            return json_error(401, Unauthenticated(WRONG_TOKEN))
        return None

    async def respond(self, request: HttpRequest) -> HttpResponse:
        """Answer one operator request: only from this server's own origin (its console) or from
        a script (no ``Origin``), before the token is even looked at."""
        host = request.header(b"host")
        if not same_origin(request.header(b"origin"), host) or (
            self.public_token and not loopback_host(host)
        ):
            return json_error(403, Unauthorized(FOREIGN_ORIGIN))
        refused = self.refusal(request)
        if refused is not None:
            return refused
        if request.method != b"POST":
            return HttpResponse(405, b"method not allowed", [(b"allow", b"POST")])
        reply = await self._dispatcher.handle(request.body, self._context)
        return HttpResponse(200, reply or b"", JSON_HEADERS)

    __call__ = respond  # the broker's admin responder

    async def _listSessions(self, ctx: CallContext, params: msgspec.Raw) -> Any:
        now = self._sessions.clock.now()
        sessions = await self._sessions.store.list_sessions()
        return [describe_session(s) for s in sessions if not is_expired(s, now)]

    async def _updateSession(self, ctx: CallContext, params: msgspec.Raw) -> Any:
        update = update_session_params.decode(params)
        session = await self._sessions.update(_identity(update), update.sessionScopes)
        if session is None:
            return {"sessionScopes": {}}
        return {
            "sessionScopes": msgspec.to_builtins(create_session_result(session))["sessionScopes"]
        }

    async def _revokeSession(self, ctx: CallContext, params: msgspec.Raw) -> Any:
        revoke = revoke_session_params.decode(params)
        return await self._sessions.revoke(_identity(revoke), revoke.scopes)

    # These three do not checkpoint: answered from memory, in a request whose read has one.
    async def _listApprovals(self, ctx: CallContext, params: msgspec.Raw) -> Any:
        return [p.describe() for p in self._sessions.policy.pending()]

    async def _approve(self, ctx: CallContext, params: msgspec.Raw) -> Any:
        answer = approve_params.decode(params)
        # Validated like a request's scopes; the approval narrows to them, never widens.
        scopes = answer.sessionScopes
        narrowed = parse_scopes(scopes, field="sessionScopes") if scopes is not None else None
        approval_id = answer.approval_id
        if not self._sessions.policy.approve(
            approval_id, accounts=answer.accounts, scopes=narrowed
        ):
            raise _not_waiting(approval_id)
        return True

    async def _reject(self, ctx: CallContext, params: msgspec.Raw) -> Any:
        approval_id = reject_params.decode(params).approval_id
        if not self._sessions.policy.reject(approval_id):
            raise _not_waiting(approval_id)
        return True

    def _hooks(self) -> WebhookOperations:
        assert self.webhooks is not None  # registered only with them
        return self.webhooks

    async def _createWebhook(self, ctx: CallContext, params: msgspec.Raw) -> Any:
        create = create_webhook_params.decode(params)
        return await self._hooks().create(
            create.url,
            create.chain,
            create.subscription.method,
            create.subscription.params,
            allow_private=create.allowPrivate,
        )

    async def _listWebhooks(self, ctx: CallContext, params: msgspec.Raw) -> Any:
        return await self._hooks().describe()

    async def _deleteWebhook(self, ctx: CallContext, params: msgspec.Raw) -> Any:
        return await self._hooks().delete(webhook_id_params.decode(params).id)

    async def _replayWebhook(self, ctx: CallContext, params: msgspec.Raw) -> Any:
        replay = replay_webhook_params.decode(params)
        return await self._hooks().replay(replay.id, replay.cursor)
