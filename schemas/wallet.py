"""The params of the multichain methods (``wallet_createSession``, ``wallet_invokeMethod``,
``wallet_revokeSession``), as msgspec Structs with module-level decoders.

Both CAIP-25 dialects: SPEC's and MetaMask's (``requiredScopes``, ``optionalScopes``,
``sessionProperties``, ``scopedProperties``) and the 2025 text's (``scopes``, ``properties``,
``capabilities``). The members of ``wallet_createSession`` stay JSON values in
:class:`CreateSessionParams`: each fault has its own code, and the code a request with several
faults gets depends on a fixed order (5301 for ``scopedProperties`` inside a scope first, then
-32602 for the scopes, 5300, 5302) that a Struct, checking members in the order they arrive,
cannot keep. The parts read inside that order are Structs: a scope object
(:class:`ScopeRequest`) and the session properties (:class:`SessionPropertiesRequest`).

Read them with :func:`schemas.params.decode_named`; the session layer (``broker.sessions``) says
what each mistake means, in CAIP-25's codes.
"""

from __future__ import annotations

from typing import Annotated, Any, Final

import msgspec
from msgspec import UNSET, UnsetType

#: A method or notification name: not blank.
Name = Annotated[str, msgspec.Meta(pattern=r"\S")]
#: CAIP-217's ``rpcDocuments`` / ``rpcEndpoints`` entries: a URL with a scheme.
Url = Annotated[str, msgspec.Meta(pattern=r"\A[a-zA-Z][a-zA-Z0-9+.-]*://\S+\Z")]


class CreateSessionParams(msgspec.Struct, frozen=True, kw_only=True):
    """``wallet_createSession`` params, in either dialect (UNSET: not given)."""

    requiredScopes: Any = UNSET
    optionalScopes: Any = UNSET
    sessionProperties: Any = UNSET
    scopedProperties: Any = UNSET
    scopes: Any = UNSET
    properties: Any = UNSET
    capabilities: Any = UNSET


class ScopeRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One requested scope object (CAIP-217), in SPEC's dialect."""

    methods: list[Name]
    notifications: list[Name]
    #: Chain references of a namespace key (each checked against the key's namespace).
    references: list[str] | UnsetType = UNSET
    #: CAIP-10 account ids (each checked against the scope's chains).
    accounts: list[str] = []
    rpcDocuments: list[Url] = []
    rpcEndpoints: list[Url] = []


class SessionPropertiesRequest(msgspec.Struct, frozen=True):
    """Requested ``sessionProperties``: the expiry (ISO 8601) and the global config; other members
    are dropped."""

    expiry: str | UnsetType = UNSET
    globalConfig: dict[str, Any] = {}


class InvokedCall(msgspec.Struct, frozen=True):
    """The call a ``wallet_invokeMethod`` carries."""

    method: Annotated[str, msgspec.Meta(min_length=1)]
    params: list[Any] | dict[str, Any] = []


class InvokeMethodParams(msgspec.Struct, frozen=True):
    """``wallet_invokeMethod`` params ``{scope, request: {method, params}}``."""

    scope: str
    request: InvokedCall


class RevokeSessionParams(msgspec.Struct, frozen=True):
    """``wallet_revokeSession`` params: some scopes, or (``null``, absent) all of them."""

    scopes: list[str] | None = None


create_session_params: Final = msgspec.json.Decoder(CreateSessionParams)
invoke_method_params: Final = msgspec.json.Decoder(InvokeMethodParams)
#: An array (``[]``, as many clients send for no params) revokes every scope.
revoke_session_params: Final = msgspec.json.Decoder(RevokeSessionParams | list[Any])
