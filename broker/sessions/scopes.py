"""CAIP-217 scopes objects: validation and normalisation to one scope per chain.

A scopes object maps scope keys to scope objects. A key is either a CAIP-2 chain id (``eip155:1``,
``wallet:eip155``) or a bare namespace (``eip155``, ``wallet``). A bare namespace stands for the
chains listed in its ``references``; CAIP-25 and CAIP-217 say an absent or empty ``references``
authorises *no* chain of the namespace, never all of them, so such a key normalises to nothing.
The one exception is ``wallet``, which names the wallet's own chainless functions and stays a key.

A scope object is read as a :class:`schemas.wallet.ScopeRequest`. Faults raise
:class:`~schemas.errors.InvalidParams` naming the scope and what is wrong (in a scope object with
several, the first in the request's order), except a ``scopedProperties`` key inside a scope
object, which is CAIP-25's 5301 and is looked for first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from msgspec import UNSET, UnsetType

from schemas.caip import (
    WALLET,
    ScopeObject,
    is_chain_id,
    is_namespace,
    is_reference,
    parse_account_id,
)
from schemas.errors import InvalidParams, ScopedPropertiesInsideScope
from schemas.params import Mistake, convert_named
from schemas.wallet import ScopeRequest


def reject_nested_scoped_properties(scopes_objects: Iterable[tuple[str, object]]) -> None:
    """Raise 5301 when any scope object carries ``scopedProperties``.

    Runs before every other scope check so that this key gets its own code rather than the generic
    "unknown property" error, whatever else is wrong with the request.

    Args:
        scopes_objects: ``(field name, scopes object)`` pairs; values that are not objects are
            left for :func:`parse_scopes` to reject.
    """
    for field, scopes in scopes_objects:
        if not isinstance(scopes, dict):
            continue
        for key, scope in scopes.items():
            if isinstance(scope, dict) and "scopedProperties" in scope:
                raise ScopedPropertiesInsideScope(
                    f"{_where(field, key)}: scopedProperties can only be outside of sessionScopes"
                )


def parse_scopes(scopes: object, *, field: str) -> dict[str, ScopeObject]:
    """Validate a scopes object and normalise it to one :class:`ScopeObject` per chain key.

    Namespace keys expand into one chain key per reference, each keeping only its own accounts;
    keys that end up equal are merged (union of methods, notifications and accounts, first-seen
    order). Requested ``accounts`` default to ``()``.

    Args:
        scopes: The decoded JSON value of the scopes object.
        field: The params member it came from, for error messages (``optionalScopes``).

    Raises:
        ScopedPropertiesInsideScope: a scope object has a ``scopedProperties`` key (5301).
        InvalidParams: anything else is malformed.
    """
    reject_nested_scoped_properties([(field, scopes)])
    if not isinstance(scopes, dict):
        raise InvalidParams(f"{field} must be an object")
    normalized: dict[str, ScopeObject] = {}
    for key, scope in scopes.items():
        merge_into(normalized, _parse_scope(field, key, scope))
    return normalized


def merge_into(target: dict[str, ScopeObject], scopes: Mapping[str, ScopeObject]) -> None:
    """Add ``scopes`` to ``target``, merging scopes with the same key (CAIP-25: no duplicate keys)."""
    for key, scope in scopes.items():
        existing = target.get(key)
        target[key] = scope if existing is None else merge_scope(existing, scope)


def merge_scope(first: ScopeObject, second: ScopeObject) -> ScopeObject:
    """The union of two scopes of the same key, first-seen order kept."""
    return ScopeObject(
        methods=_union(first.methods, second.methods),
        notifications=_union(first.notifications, second.notifications),
        accounts=_union(first.accounts, second.accounts),
        rpc_documents=_union(first.rpc_documents, second.rpc_documents),
        rpc_endpoints=_union(first.rpc_endpoints, second.rpc_endpoints),
    )


def _union(first: tuple[str, ...], second: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys((*first, *second)))


def _where(field: str, key: object) -> str:
    return f"{field}[{key!r}]"


#: What a mistake in each member of a scope object means (``{key}``: the scope key).
_SCOPE_MISTAKES = {
    "methods": "methods must be an array of non-empty strings",
    "notifications": "notifications must be an array of non-empty strings",
    "references": "references must be an array of {key} chain references",
    "accounts": "accounts must be an array of CAIP-10 account ids",
    "rpcDocuments": "rpcDocuments must be an array of URLs",
    "rpcEndpoints": "rpcEndpoints must be an array of URLs",
}


def _scope_request(where: str, key: str, scope: object) -> ScopeRequest:
    """A scope object as a :class:`ScopeRequest`; a mistake names the scope and the member."""

    def explain(mistake: Mistake) -> InvalidParams:
        member = mistake.member
        if member is None:
            return InvalidParams(f"{where}: scope must be an object")
        if mistake.kind == "unknown":
            return InvalidParams(f"{where}: unsupported scope property {member!r}")
        if mistake.kind == "missing" and len(mistake.path) == 1:
            return InvalidParams(f"{where}: {member} is required")
        return InvalidParams(f"{where}: {_SCOPE_MISTAKES[member].format(key=key)}")

    return convert_named(scope, ScopeRequest, explain)


def _parse_scope(field: str, key: object, scope: object) -> dict[str, ScopeObject]:
    where = _where(field, key)
    if not isinstance(key, str) or not (is_chain_id(key) or is_namespace(key)):
        raise InvalidParams(f"{where}: scope key is neither a CAIP-2 chain id nor a namespace")
    request = _scope_request(where, key, scope)
    methods = tuple(dict.fromkeys(request.methods))
    notifications = tuple(dict.fromkeys(request.notifications))
    chains = _chains(where, key, request.references)
    accounts = _accounts(where, request.accounts, chains)
    documents = tuple(dict.fromkeys(request.rpcDocuments))
    endpoints = tuple(dict.fromkeys(request.rpcEndpoints))
    return {
        chain: ScopeObject(
            methods=methods,
            notifications=notifications,
            accounts=tuple(account for account, owner in accounts if owner == chain),
            rpc_documents=documents,
            rpc_endpoints=endpoints,
        )
        for chain in chains
    }


def _chains(where: str, key: str, references: list[str] | UnsetType) -> tuple[str, ...]:
    """The chain keys a scope object stands for."""
    if is_chain_id(key):
        if references is not UNSET:
            raise InvalidParams(f"{where}: references are not allowed on a key that names a chain")
        return (key,)
    if references is UNSET:
        # A bare namespace without references authorises no chain; `wallet` is a scope of its own.
        return (key,) if key == WALLET else ()
    if not all(is_reference(reference, key) for reference in references):
        raise InvalidParams(f"{where}: {_SCOPE_MISTAKES['references'].format(key=key)}")
    return tuple(dict.fromkeys(f"{key}:{reference}" for reference in references))


def _accounts(where: str, requested: list[str], chains: tuple[str, ...]) -> list[tuple[str, str]]:
    """The requested accounts as ``(CAIP-10 id, chain)`` pairs, each on one of ``chains``."""
    accounts: dict[str, str] = {}
    for text in requested:
        try:
            account = parse_account_id(text)
        except ValueError as exc:
            raise InvalidParams(f"{where}: {exc}") from None
        chain = str(account.chain)
        if chain not in chains:
            raise InvalidParams(f"{where}: account {text!r} is not on a chain of this scope")
        accounts[str(account)] = chain
    return list(accounts.items())
