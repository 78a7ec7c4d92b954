"""``rpc.discover`` (EIP-1901): an OpenRPC 1.x document of what a caller can use on a network.

The method list is the dispatcher's own (:meth:`Dispatcher.methods`: the broker's handlers, the
network's chain adapter and its account adapter), so the document cannot promise a method that is
not answered, nor miss one. Each method is described by whoever serves it: the adapters'
:meth:`~adapters.base.ChainAdapter.method_docs`, and below for the broker's own methods, whose
results are typed by the msgspec Structs of :mod:`schemas.caip`. Notifications (no reply) are
listed as methods without a result, marked ``x-notification``; the operator API, served on
``/admin``, with that URL as its server.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

import msgspec

from adapters.base import MethodDoc, MethodDocs, ParamDoc
from adapters.evm.openrpc import ref
from schemas import caip

if TYPE_CHECKING:
    from broker.rpc.dispatch import CallContext, Dispatcher
    from broker.rpc.networks import Network

OPENRPC_VERSION: Final = "1.3.2"
_REF: Final = "#/components/schemas/{name}"
_, _CAIP_COMPONENTS = msgspec.json.schema_components(
    [caip.CreateSessionResult, caip.GetSessionResult, caip.SessionChangedParams],
    ref_template=_REF,
)

_SCOPES = {"type": "object", "additionalProperties": ref("ScopeObject")}
#: A waiting request's id: a string as admin_listApprovals gives it, or the same number.
_APPROVAL_ID = {"oneOf": [{"type": "string"}, {"type": "integer"}]}
_UNAUTHORIZED = (4100, "The requested account and/or method has not been authorized by the user.")
_SESSION_ERRORS = (
    (-32602, "invalid params (the member and the fault)"),
    (4001, "User rejected the request."),
    (5000, "Unknown error with request"),
    (5100, "Requested networks are not supported"),
    (5101, "Requested methods are not supported"),
    (5102, "Requested notifications are not supported"),
    (5300, "Invalid scopedProperties requested"),
    (5301, "scopedProperties can only be outside of sessionScopes"),
    (5302, "Invalid sessionProperties requested"),
)


_doc = MethodDoc.of


BROKER_METHODS: Final[dict[str, MethodDoc]] = {
    "rpc.discover": _doc("This document (OpenRPC)", (), {"type": "object"}),
    "wallet_createSession": _doc(
        "Ask the wallet for a CAIP-25 session; SPEC's dialect (optionalScopes, sessionProperties) "
        "or CAIP-25 of 2025 (scopes, properties), answered in the same dialect",
        (
            ParamDoc("optionalScopes", _SCOPES, False),
            ParamDoc("requiredScopes", _SCOPES, False, "merged into optionalScopes"),
            ParamDoc("scopedProperties", {"type": "object"}, False),
            ParamDoc("sessionProperties", {"type": "object"}, False),
            ParamDoc("scopes", {"type": "object"}, False, "2025 dialect"),
            ParamDoc("properties", {"type": "object"}, False, "2025 dialect"),
        ),
        {"oneOf": [ref("CreateSessionResult"), {"type": "object", "required": ["scopes"]}]},
        *_SESSION_ERRORS,
        by_name=True,
    ),
    "wallet_getSession": _doc(
        "The caller's session (empty scopes when none)",
        (),
        {"oneOf": [ref("GetSessionResult"), {"type": "object", "required": ["scopes"]}]},
        by_name=True,
    ),
    "wallet_invokeMethod": _doc(
        "Call a method of a granted scope",
        (
            ParamDoc("scope", {"type": "string"}),
            ParamDoc(
                "request",
                {
                    "type": "object",
                    "required": ["method"],
                    "properties": {"method": {"type": "string"}, "params": {}},
                },
            ),
        ),
        {"type": "object", "properties": {"scope": {"type": "string"}, "result": {}}},
        _UNAUTHORIZED,
        (4001, "User rejected the request."),
        by_name=True,
    ),
    "wallet_revokeSession": _doc(
        "End the session, or only some of its scopes",
        (ParamDoc("scopes", {"type": "array", "items": {"type": "string"}}, False),),
        {"type": "boolean"},
        (-32602, "scopes must be an array of scope strings"),
        by_name=True,
    ),
    "scopecast_refreshToken": _doc(
        "Renew the token of this WebSocket (keys with jwt_public_key) before it expires; answers "
        "the new expiry (Unix seconds)",
        (ParamDoc("token", {"type": "string"}),),
        {"type": "object", "properties": {"expires": {"type": "integer"}}},
        (-32001, "invalid token: ..."),
        (-32002, "the origin X is not allowed for this key"),
    ),
}

NOTIFICATIONS: Final[dict[str, MethodDoc]] = {
    "wallet_notify": _doc(
        "A session subscription's event, scoped",
        (
            ParamDoc("scope", {"type": "string"}),
            ParamDoc("notification", {"type": "object", "required": ["method", "params"]}),
        ),
        None,
        by_name=True,
    ),
    "wallet_sessionChanged": _doc(
        "The session's scopes changed (empty: it ended); in the session's dialect",
        (ParamDoc("sessionScopes", _SCOPES, False), ParamDoc("scopes", _SCOPES, False)),
        None,
        by_name=True,
    ),
}

ADMIN_METHODS: Final[dict[str, MethodDoc]] = {
    "admin_listApprovals": _doc("Requests waiting for the operator", (), {"type": "array"}),
    "admin_approve": _doc(
        "Approve a waiting request (a session may be narrowed with sessionScopes)",
        (ParamDoc("id", _APPROVAL_ID), ParamDoc("sessionScopes", _SCOPES, False)),
        {"type": "boolean"},
        by_name=True,
    ),
    "admin_reject": _doc(
        "Reject a waiting request (the dapp gets 4001)",
        (ParamDoc("id", _APPROVAL_ID),),
        {"type": "boolean"},
        by_name=True,
    ),
    "admin_listSessions": _doc("Every live session", (), {"type": "array"}),
    "admin_updateSession": _doc(
        "Replace a dapp's scopes",
        (
            ParamDoc("apiKey", {"type": "string"}),
            ParamDoc("origin", {"type": "string"}),
            ParamDoc("sessionScopes", _SCOPES),
        ),
        {"type": "object"},
        by_name=True,
    ),
    "admin_revokeSession": _doc(
        "End a dapp's session, or some of its scopes",
        (
            ParamDoc("apiKey", {"type": "string"}),
            ParamDoc("origin", {"type": "string"}),
            ParamDoc("scopes", {"type": "array", "items": {"type": "string"}}, False),
        ),
        {"type": "boolean"},
        by_name=True,
    ),
    "admin_createWebhook": _doc(
        "Deliver a chain subscription to a URL, signed (Standard Webhooks)",
        (
            ParamDoc("url", {"type": "string"}),
            ParamDoc("chain", {"type": "string"}),
            ParamDoc("subscription", {"type": "object", "required": ["method"]}),
            ParamDoc("allowPrivate", {"type": "boolean"}, False),
        ),
        {"type": "object", "required": ["id", "secret"]},
        by_name=True,
    ),
    "admin_listWebhooks": _doc("Every webhook and its delivery state", (), {"type": "array"}),
    "admin_deleteWebhook": _doc(
        "Stop and forget a webhook",
        (ParamDoc("id", {"type": "string"}),),
        {"type": "boolean"},
        by_name=True,
    ),
    "admin_replayWebhook": _doc(
        "Deliver again every event after a cursor (a failed webhook becomes active)",
        (ParamDoc("id", {"type": "string"}), ParamDoc("cursor", {"type": "string"})),
        {"type": "object", "required": ["replayed"]},
        by_name=True,
    ),
}


def _content(name: str, schema: Mapping[str, Any], required: bool = True, doc: str = "") -> Any:
    descriptor: dict[str, Any] = {"name": name, "schema": dict(schema), "required": required}
    if doc:
        descriptor["description"] = doc
    return descriptor


def method_object(name: str, doc: MethodDoc | None) -> dict[str, Any]:
    """One OpenRPC method object (a method no one describes is listed with untyped params)."""
    if doc is None:
        return {
            "name": name,
            "summary": "(not described by its adapter)",
            "params": [],
            "result": _content("result", {}),
            "x-undescribed": True,
        }
    method: dict[str, Any] = {
        "name": name,
        "summary": doc.summary,
        "paramStructure": "by-name" if doc.by_name else "by-position",
        "params": [_content(p.name, p.schema, p.required, p.description) for p in doc.params],
    }
    if doc.result is None:
        method["x-notification"] = True
    else:
        method["result"] = _content("result", doc.result)
    if doc.errors:
        method["errors"] = [{"code": code, "message": message} for code, message in doc.errors]
    return method


def document(dispatcher: Dispatcher, network: Network, admin: Iterable[str]) -> dict[str, Any]:
    """The OpenRPC document of ``network`` as ``dispatcher`` serves it, with the operator API."""
    chain = network.chain
    docs = dict(BROKER_METHODS)
    chain_docs = network.adapter.method_docs(chain)
    # The chain's family describes the subscription (and filter) methods the broker serves for it,
    # and the notifications they send.
    family = network.adapter.subscription_family(chain)
    family_docs = family.method_docs() if family is not None else MethodDocs()
    components: dict[str, Any] = {
        **family_docs.components,
        **chain_docs.components,
        **_CAIP_COMPONENTS,
    }
    notifications = {n: d for n, d in family_docs.methods.items() if d.result is None}
    docs.update({n: d for n, d in family_docs.methods.items() if d.result is not None})
    docs.update(chain_docs.methods)
    for accounts in dispatcher.account_adapters(chain):
        account_docs = accounts.method_docs(chain)
        docs.update(account_docs.methods)
        components.update(account_docs.components)
    methods = [method_object(name, docs.get(name)) for name in sorted(dispatcher.methods(network))]
    notifications.update(NOTIFICATIONS)
    methods += [method_object(name, doc) for name, doc in notifications.items()]
    operator = [{"name": "operator API", "url": "/admin"}]
    methods += [
        {**method_object(name, ADMIN_METHODS.get(name)), "servers": operator}
        for name in sorted(admin)
    ]
    return {
        "openrpc": OPENRPC_VERSION,
        "info": {
            "title": f"scopecast: network {network.name} ({chain})",
            "version": "1",
            "description": "What this API key can call here. Notifications are the methods "
            "marked x-notification; the operator API is served on /admin.",
        },
        "methods": methods,
        "components": {"schemas": components},
    }


class DiscoverMethod:
    """The ``rpc.discover`` handler: each network's document built once, at its first call (the
    method set is fixed once serving)."""

    def __init__(self, dispatcher: Dispatcher, *, operator_api: bool) -> None:
        """``operator_api``: the operator API is served (its methods are listed)."""
        self._dispatcher = dispatcher
        self._admin: Iterable[str] = ADMIN_METHODS if operator_api else ()
        self._documents: dict[str, bytes] = {}

    async def __call__(self, ctx: CallContext, params: msgspec.Raw) -> msgspec.Raw:
        # No checkpoint: a method handler answered from memory; the call's own task has one.
        found = self._documents.get(ctx.network.name)
        if found is None:
            found = msgspec.json.encode(document(self._dispatcher, ctx.network, self._admin))
            self._documents[ctx.network.name] = found
        return msgspec.Raw(found)
