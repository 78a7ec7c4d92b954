"""What a session allows: ``wallet_invokeMethod`` calls, notifications, signing accounts.

Every check takes the session as stored (or None) and the current time: an expired session allows
nothing, exactly like no session.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from broker.sessions.model import Session, is_expired
from schemas.caip import WALLET, ScopeObject, is_chain_id
from schemas.errors import InvalidParams, Unauthorized
from schemas.params import Mistake, decode_named
from schemas.wallet import invoke_method_params


class InvokeRequest(msgspec.Struct, frozen=True):
    """Validated ``wallet_invokeMethod`` params.

    Attributes:
        scope: The chain key the call is for (``eip155:1``, ``wallet``, ``wallet:eip155``).
        method: The inner method.
        params: The inner params as decoded JSON: a list or an object (``[]`` when absent).
    """

    scope: str
    method: str
    params: list[Any] | dict[str, Any]


#: What a mistake in each member of ``wallet_invokeMethod`` params means.
_INVOKE_MISTAKES = {
    "": "wallet_invokeMethod params must be an object",
    "scope": "scope must be a CAIP-2 chain id",
    "request": "request must be an object",
    "request.method": "request.method must be a non-empty string",
    "request.params": "request.params must be an array or an object",
}


def _invoke_mistake(mistake: Mistake) -> InvalidParams:
    return InvalidParams(_INVOKE_MISTAKES[mistake.where])


def parse_invoke_method(params: object) -> InvokeRequest:
    """Validate ``wallet_invokeMethod`` params ``{scope, request: {method, params}}``.

    Args:
        params: The params' JSON (as they arrive) or the JSON value it decodes to.

    Raises:
        InvalidParams: the params do not have that shape (-32602).
    """
    given = decode_named(params, invoke_method_params, _invoke_mistake)
    if not (given.scope == WALLET or is_chain_id(given.scope)):
        raise InvalidParams(_INVOKE_MISTAKES["scope"])
    return InvokeRequest(
        scope=given.scope, method=given.request.method, params=given.request.params
    )


def granted_scope(session: Session | None, scope: str, now: datetime) -> ScopeObject | None:
    """The scope as granted in a live session, or None."""
    if session is None or is_expired(session, now):
        return None
    return session.scopes.get(scope)


def authorize_invoke(
    session: Session | None, request: InvokeRequest, *, now: datetime
) -> ScopeObject:
    """Check that a live session grants ``request.method`` on ``request.scope``.

    Returns:
        The granted scope (its ``accounts`` bound what the call may sign with).

    Raises:
        Unauthorized: no live session, scope not granted, or method not granted there (4100).
    """
    if session is None or is_expired(session, now):
        raise Unauthorized(data={"reason": "no session: call wallet_createSession first"})
    scope = session.scopes.get(request.scope)
    if scope is None:
        granted = ", ".join(session.scopes) or "none"
        raise Unauthorized(
            data={"reason": f"scope {request.scope} is not granted (granted: {granted})"}
        )
    if request.method not in scope.methods:
        raise Unauthorized(
            data={"reason": f"method {request.method} is not granted on {request.scope}"}
        )
    return scope


def is_notification_granted(
    session: Session | None, scope: str, notification: str, *, now: datetime
) -> bool:
    """Whether a live session lets ``notification`` reach the dapp on ``scope`` (``wallet_notify``)."""
    granted = granted_scope(session, scope, now)
    return granted is not None and notification in granted.notifications


def permitted_addresses(session: Session | None, scope: str, *, now: datetime) -> tuple[str, ...]:
    """The addresses a live session permits on ``scope`` (EVM ones lowercase ``0x`` hex)."""
    granted = granted_scope(session, scope, now)
    if granted is None:
        return ()
    return tuple(account.rpartition(":")[2] for account in granted.accounts)
