"""The two dialects of CAIP-25 (sans-io): SPEC's and MetaMask's, and the 2025 text's.

SPEC and MetaMask's multichain API speak the dialect of 2022-2024: ``requiredScopes`` /
``optionalScopes``, ``scopedProperties`` and ``sessionProperties`` in, ``sessionScopes`` and
``sessionProperties`` out, scopes keyed by chain with CAIP-10 accounts. CAIP-25 as revised in
July and August 2025 renamed them: ``scopes`` (``requiredScopes`` is gone), ``capabilities``
and ``properties`` in, ``scopes`` and ``properties`` out; a namespace-keyed scope lists its chains
as bare references under ``chains`` and its accounts as bare addresses, and answers keep the
request's keys (CAIP-25: respondents must not restructure scopes).

A request is read in the dialect its member names say (mixing them is -32602); a 2025 request is
translated into the 2022 form and validated by the same code; a session answers, in
``wallet_createSession``, ``wallet_getSession`` and ``wallet_sessionChanged``, in the dialect it
was created in.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec
from msgspec import UNSET

from broker.sessions.model import (
    CURRENT,
    LEGACY,
    Session,
    create_session_result,
    format_expiry,
    get_session_result,
    is_expired,
    session_changed_params,
)
from schemas.caip import ScopeObject, is_chain_id, is_namespace, is_reference
from schemas.errors import InvalidParams, InvalidScopedProperties, InvalidSessionProperties
from schemas.wallet import CreateSessionParams

LEGACY_FIELDS = ("requiredScopes", "optionalScopes", "sessionProperties", "scopedProperties")
CURRENT_FIELDS = ("scopes", "properties", "capabilities")
#: How the 2022 names read in 2025 requests, for error messages.
CURRENT_NAMES = {
    "optionalScopes": "scopes",
    "sessionProperties": "properties",
    "scopedProperties": "capabilities",
}


def dialect_of(params: CreateSessionParams) -> str:
    """The dialect of ``wallet_createSession`` params (2022 when they name neither)."""
    legacy = [name for name in LEGACY_FIELDS if getattr(params, name) is not UNSET]
    current = [name for name in CURRENT_FIELDS if getattr(params, name) is not UNSET]
    if legacy and current:
        raise InvalidParams(
            f"params mix two CAIP-25 dialects: {', '.join(legacy)} (as SPEC and MetaMask) with "
            f"{', '.join(current)} (as CAIP-25 of 2025); use one of them"
        )
    return CURRENT if current else LEGACY


def _is_account_id(text: str) -> bool:
    return text.count(":") >= 2


def _hex_hint(namespace: str, reference: str) -> str:
    """For an EIP-155 chain id written in hex, the decimal reference CAIP-2 wants."""
    if namespace == "eip155" and reference.lower().startswith("0x"):
        try:
            return f" (eip155 references are decimal: write '{int(reference, 16)}')"
        except ValueError:
            return ""
    return ""


def to_legacy(
    params: CreateSessionParams,
) -> tuple[CreateSessionParams, dict[str, tuple[str, ...]]]:
    """A 2025 request in the 2022 form, and its layout (namespace key → the chain keys it named).

    Bare references in ``chains`` become ``references``; bare addresses become CAIP-10 ids on each
    chain of their scope; a scope's ``capabilities`` and the top-level ``capabilities`` become
    ``scopedProperties``; ``properties.expiry`` stays the expiry and the other properties become
    the session's global config.
    """
    scopes = params.scopes
    if not isinstance(scopes, dict) or not scopes:
        raise InvalidParams("scopes must be an object holding one or more scopes")
    optional: dict[Any, Any] = {}
    capabilities: dict[Any, Any] = {}
    layout: dict[str, tuple[str, ...]] = {}
    for key, scope in scopes.items():
        if not isinstance(scope, dict) or not isinstance(key, str):
            optional[key] = scope  # the shared validation says what is wrong
            continue
        converted = dict(scope)
        chains = converted.pop("chains", None)
        if "capabilities" in converted:
            capabilities[key] = converted.pop("capabilities")
        if "references" in converted:
            raise InvalidParams(f"scopes[{key!r}]: unsupported scope property 'references'")
        chain_keys: tuple[str, ...] = (key,) if is_chain_id(key) else ()
        if chains is not None:
            if not is_namespace(key):
                raise InvalidParams(f"scopes[{key!r}]: chains are allowed on a namespace key only")
            if not isinstance(chains, list) or not all(isinstance(c, str) for c in chains):
                raise InvalidParams(f"scopes[{key!r}]: chains must be an array of references")
            references = [c[len(key) + 1 :] if c.startswith(f"{key}:") else c for c in chains]
            for reference in references:
                if not is_reference(reference, key):
                    # Named as the caller wrote it: `chains`, never the 2022 form's `references`.
                    raise InvalidParams(
                        f"scopes[{key!r}]: chains: {reference!r} is not a chain reference of {key}"
                        + _hex_hint(key, reference)
                    )
            converted["references"] = references
            chain_keys = tuple(dict.fromkeys(f"{key}:{r}" for r in references))
            layout[key] = chain_keys
        accounts = converted.get("accounts")
        if isinstance(accounts, list) and all(isinstance(a, str) for a in accounts):
            converted["accounts"] = [
                account if _is_account_id(account) else f"{chain}:{account}"
                for account in accounts
                for chain in ((None,) if _is_account_id(account) else chain_keys)
            ]
        optional[key] = converted
    if params.capabilities is not UNSET:
        top = params.capabilities
        if not isinstance(top, dict):
            raise InvalidScopedProperties("capabilities must be an object")
        capabilities = {**top, **capabilities}
    session_properties: dict[str, Any] = {}
    if params.properties is not UNSET:
        properties = params.properties
        if not isinstance(properties, dict):
            raise InvalidSessionProperties("properties must be an object")
        if "expiry" in properties:
            session_properties["expiry"] = properties["expiry"]
        others = {k: v for k, v in properties.items() if k != "expiry"}
        if others:
            session_properties["globalConfig"] = others
    legacy = CreateSessionParams(
        optionalScopes=optional,
        scopedProperties=capabilities if capabilities else UNSET,
        sessionProperties=session_properties if session_properties else UNSET,
    )
    return legacy, layout


# -- answers --------------------------------------------------------------------------------------


def _bare(accounts: tuple[str, ...]) -> list[str]:
    return list(dict.fromkeys(account.rpartition(":")[2] for account in accounts))


def _entry(scope: ScopeObject, chains: list[str] | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    if chains is not None:
        entry["chains"] = chains
    entry["accounts"] = _bare(scope.accounts)
    entry["methods"] = list(scope.methods)
    entry["notifications"] = list(scope.notifications)
    if scope.rpc_documents:
        entry["rpcDocuments"] = list(scope.rpc_documents)
    if scope.rpc_endpoints:
        entry["rpcEndpoints"] = list(scope.rpc_endpoints)
    return entry


def current_scopes(session: Session | None) -> dict[str, Any]:
    """The granted scopes as the 2025 dialect answers them, in the request's structure.

    A namespace key keeps the chains it named whose grants are alike (same methods,
    notifications and accounts) as the first of them; the others are answered under their own
    chain keys, as CAIP-25's example does.
    """
    if session is None:
        return {}
    answer: dict[str, Any] = {}
    placed: set[str] = set()
    grouped_at: dict[str, str] = {}  # first chain key of a namespace group → namespace key
    for namespace, chain_keys in session.layout.items():
        granted = [chain for chain in chain_keys if chain in session.scopes]
        if not granted:
            continue
        lead = _entry(session.scopes[granted[0]])
        alike = [chain for chain in granted if _entry(session.scopes[chain]) == lead]
        placed.update(alike)
        grouped_at[alike[0]] = namespace
        answer[namespace] = _entry(
            session.scopes[alike[0]], [chain.split(":", 1)[1] for chain in alike]
        )
    ordered: dict[str, Any] = {}
    for chain, scope in session.scopes.items():
        if chain in grouped_at:
            ordered[grouped_at[chain]] = answer[grouped_at[chain]]
        elif chain not in placed:
            ordered[chain] = _entry(scope)
    return ordered


def current_properties(session: Session) -> dict[str, Any]:
    return {**session.properties, "expiry": format_expiry(session.expiry), **session.global_config}


def create_result(session: Session) -> Any:
    """The ``wallet_createSession`` result, in the session's dialect."""
    if session.dialect == CURRENT:
        return {"scopes": current_scopes(session), "properties": current_properties(session)}
    result = create_session_result(session)
    if not session.properties:
        return result
    # Kept properties (the metamask profile's) beside SPEC's expiry and globalConfig.
    answer: dict[str, Any] = msgspec.to_builtins(result)
    answer["sessionProperties"] = {**session.properties, **answer["sessionProperties"]}
    return answer


def get_result(session: Session | None, now: datetime, dialect: str) -> Any:
    """The ``wallet_getSession`` result in ``dialect`` (the session's, when there is one)."""
    if session is not None and not is_expired(session, now):
        dialect = session.dialect
    else:
        session = None
    if dialect == CURRENT:
        if session is None:
            return {"scopes": {}}
        return {"scopes": current_scopes(session), "properties": current_properties(session)}
    return get_session_result(session, now)


def changed_params(session: Session | None, dialect: str) -> Any:
    """The ``wallet_sessionChanged`` params in ``dialect`` (the session's, when there is one)."""
    if session is not None:
        dialect = session.dialect
    if dialect == CURRENT:
        return {"scopes": current_scopes(session)}
    return session_changed_params(session)
