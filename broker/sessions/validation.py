"""Validation of ``wallet_createSession`` params into a :class:`SessionRequest`.

Checks run in a fixed order, so a request with several faults always gets the same error:

1. params is not an object: -32602;
2. a scope object carries ``scopedProperties``: 5301 (before any other scope check);
3. ``requiredScopes`` / ``optionalScopes`` malformed: -32602 naming the scope and the fault;
4. ``scopedProperties`` malformed: 5300;
5. ``sessionProperties`` malformed: 5302.

Other params members (``sessionId`` and future extensions) are ignored, as CAIP-25 asks. A request
in the 2025 dialect (``scopes``, ``capabilities``, ``properties``) is translated by
:mod:`broker.sessions.dialects` and checked by the same rules, under its own member names. The
params are the Structs of :mod:`schemas.wallet`.
"""

from __future__ import annotations

from collections.abc import Mapping
from copy import deepcopy
from datetime import UTC, datetime
from typing import Any

import msgspec
from msgspec import UNSET

from broker.sessions.dialects import CURRENT_NAMES, dialect_of, to_legacy
from broker.sessions.model import CURRENT, SessionRequest, as_utc
from broker.sessions.scopes import merge_into, parse_scopes, reject_nested_scoped_properties
from schemas.caip import ScopeObject
from schemas.errors import InvalidParams, InvalidScopedProperties, InvalidSessionProperties
from schemas.params import Mistake, convert_named, decode_named
from schemas.wallet import CreateSessionParams, SessionPropertiesRequest, create_session_params

_SCOPES_FIELDS = ("requiredScopes", "optionalScopes")


def _not_an_object(mistake: Mistake) -> InvalidParams:
    return InvalidParams("wallet_createSession params must be an object")


def parse_create_session(params: object, *, now: datetime) -> SessionRequest:
    """Validate and normalise ``wallet_createSession`` params.

    Required scopes are treated as optional: both are merged into one scope per chain key.

    Args:
        params: The params' JSON (as they arrive) or the JSON value it decodes to.
        now: The current time (timezone-aware); ``sessionProperties.expiry`` must be after it.

    Raises:
        InvalidParams: params or a scope is malformed (-32602).
        ScopedPropertiesInsideScope: a scope object carries ``scopedProperties`` (5301).
        InvalidScopedProperties: ``scopedProperties`` is malformed (5300).
        InvalidSessionProperties: ``sessionProperties`` is malformed (5302).
    """
    now = as_utc(now)
    given = decode_named(params, create_session_params, _not_an_object)
    if dialect_of(given) == CURRENT:
        legacy, layout = to_legacy(given)
        request = _parse(legacy, now, CURRENT_NAMES)
        return msgspec.structs.replace(request, dialect=CURRENT, layout=layout)
    return _parse(given, now, {})


def _parse(params: CreateSessionParams, now: datetime, names: Mapping[str, str]) -> SessionRequest:
    """Validate 2022-dialect params; ``names`` renames members in error messages (2025 callers
    read ``scopes`` where the 2022 form says ``optionalScopes``)."""
    present = [
        (names.get(f, f), getattr(params, f))
        for f in _SCOPES_FIELDS
        if getattr(params, f) is not UNSET
    ]
    reject_nested_scoped_properties(present)
    scopes: dict[str, ScopeObject] = {}
    # Keys as requested (`eip155`) and as normalised (`eip155:1`): what scopedProperties may name.
    requested: set[str] = set()
    chainless: dict[str, None] = {}
    for field, value in present:
        parsed = parse_scopes(value, field=field)
        merge_into(scopes, parsed)
        requested.update(parsed)
        if isinstance(value, dict):  # always, once parse_scopes accepted it
            requested.update(value)
            chainless.update(dict.fromkeys(k for k in value if k not in parsed and ":" not in k))
    scoped_properties = _scoped_properties(
        params.scopedProperties, requested, names.get("scopedProperties", "scopedProperties")
    )
    expiry, global_config = _session_properties(
        params.sessionProperties, now, names.get("sessionProperties", "sessionProperties")
    )
    return SessionRequest(
        scopes=scopes,
        expiry=expiry,
        global_config=global_config,
        scoped_properties=scoped_properties,
        chainless=tuple(k for k in chainless if not any(c.startswith(f"{k}:") for c in scopes)),
    )


def _scoped_properties(value: Any, requested: set[str], name: str) -> dict[str, Mapping[str, Any]]:
    """``scopedProperties``: an object of objects, each keyed by a requested scope (``{}`` is one).

    A key may be a scope key as requested (``eip155``) or one of the chain keys it expands to
    (``eip155:1``): both name a requested scope. A map keyed by the request's own scopes: no
    Struct says that, so it is checked here.
    """
    if value is UNSET:
        return {}
    if not isinstance(value, dict):
        raise InvalidScopedProperties(f"{name} must be an object")
    for key, properties in value.items():
        if key not in requested:
            raise InvalidScopedProperties(f"{name}[{key!r}]: not a requested scope")
        if not isinstance(properties, dict):
            raise InvalidScopedProperties(f"{name}[{key!r}] must be an object")
    # Copies, so that a session never shares mutable JSON with the caller's params.
    return deepcopy(value)


def _session_properties(
    value: Any, now: datetime, name: str
) -> tuple[datetime | None, Mapping[str, Any]]:
    """``sessionProperties``: the requested expiry and global config; other members are dropped."""
    if value is UNSET:
        return None, {}
    if not isinstance(value, dict) or not value:
        raise InvalidSessionProperties(f"{name} must be a non-empty object")

    def explain(mistake: Mistake) -> InvalidSessionProperties:
        if mistake.member == "expiry":
            return InvalidSessionProperties(f"{name}.expiry must be an ISO 8601 timestamp")
        return InvalidSessionProperties(f"{name}.globalConfig must be an object")

    properties = convert_named(value, SessionPropertiesRequest, explain)
    expiry = properties.expiry
    return (
        None if expiry is UNSET else _expiry(expiry, now, f"{name}.expiry"),
        # A copy, so that a session never shares mutable JSON with the caller's params.
        deepcopy(properties.globalConfig),
    )


def _expiry(value: str, now: datetime, name: str) -> datetime:
    """A requested expiry: ISO 8601 text of a moment after ``now``; without an offset it is UTC."""
    try:
        expiry = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidSessionProperties(f"{name} must be an ISO 8601 timestamp") from None
    try:
        expiry = expiry.replace(tzinfo=UTC) if expiry.tzinfo is None else expiry.astimezone(UTC)
    except OverflowError:  # 9999-12-31T23:59:59-23:59 is past the last representable moment
        raise InvalidSessionProperties(f"{name} is outside the representable range") from None
    if expiry <= now:
        raise InvalidSessionProperties(f"{name} must be in the future")
    return expiry
