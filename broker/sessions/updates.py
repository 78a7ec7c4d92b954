"""Changes to a granted session, each reported as a :class:`ScopeUpdate`.

The shell stores ``update.session`` (or deletes the session when it is None), ends the
subscriptions of ``update.removed`` scopes and, when ``update.changed``, sends every connection of
the identity ``wallet_sessionChanged`` with :func:`session_changed_params`.
"""

from __future__ import annotations

from collections.abc import Collection

import msgspec

from broker.sessions.grant import SupportLookup, support_of
from broker.sessions.model import ScopeUpdate, Session
from broker.sessions.scopes import parse_scopes
from schemas.caip import ScopeObject
from schemas.errors import InvalidParams
from schemas.params import Mistake, decode_named
from schemas.wallet import RevokeSessionParams, revoke_session_params


def diff_sessions(old: Session | None, new: Session | None) -> ScopeUpdate:
    """What changed between two states of one identity's session.

    Also serves ``wallet_createSession`` over an existing session: the new session replaces the
    old one, and the old scopes it lacks are ``removed``.
    """
    old_scopes = {} if old is None else old.scopes
    new_scopes = {} if new is None else new.scopes
    removed = tuple(chain for chain in old_scopes if chain not in new_scopes)
    # A session created again in the other CAIP-25 dialect is a change too: every tab must hear
    # it, in the dialect its session now speaks.
    redialected = old is not None and new is not None and old.dialect != new.dialect
    changed = dict(old_scopes) != dict(new_scopes) or redialected
    return ScopeUpdate(session=new, changed=changed, removed=removed)


def update_scopes(
    session: Session, new_scopes: object, *, supported: SupportLookup | None = None
) -> ScopeUpdate:
    """Replace a session's scopes with ones the wallet operator set.

    ``new_scopes`` is a complete scopes object in request form (accounts as CAIP-10 ids), checked
    with the same rules as a ``wallet_createSession`` scope; it replaces all current scopes.

    Args:
        session: The current session.
        new_scopes: The decoded JSON scopes object.
        supported: When given, scopes of chains nobody serves are dropped and methods and
            notifications are cut to the served ones, as when granting.

    Returns:
        The update; its session is None when no scope remains.

    Raises:
        InvalidParams: ``new_scopes`` is malformed (-32602).
        ScopedPropertiesInsideScope: a scope carries ``scopedProperties`` (5301).
    """
    scopes = parse_scopes(new_scopes, field="sessionScopes")
    if supported is not None:
        scopes = _served(scopes, supported)
    new = msgspec.structs.replace(session, scopes=scopes) if scopes else None
    return diff_sessions(session, new)


def _served(scopes: dict[str, ScopeObject], supported: SupportLookup) -> dict[str, ScopeObject]:
    served: dict[str, ScopeObject] = {}
    for chain, scope in scopes.items():
        support = support_of(supported, chain)
        if support is not None:
            served[chain] = msgspec.structs.replace(
                scope,
                methods=tuple(m for m in scope.methods if m in support.methods),
                notifications=tuple(n for n in scope.notifications if n in support.notifications),
            )
    return served


def _revoke_mistake(mistake: Mistake) -> InvalidParams:
    if mistake.member == "scopes":
        return InvalidParams("scopes must be an array of scope strings")
    return InvalidParams("params must be an object")


def parse_revoke_session(params: object) -> list[str] | None:
    """The scopes ``wallet_revokeSession`` params name (None: all of them; an array is all too).

    Args:
        params: The params' JSON (as they arrive) or the JSON value it decodes to.

    Raises:
        InvalidParams: params that are neither an object nor an array, or ``scopes`` that is not
            an array of strings (-32602).
    """
    given = decode_named(params, revoke_session_params, _revoke_mistake)
    return given.scopes if isinstance(given, RevokeSessionParams) else None


def revoke_scopes(session: Session | None, scopes: Collection[str] | None = None) -> ScopeUpdate:
    """Take scopes away from a session.

    Args:
        session: The current session, or None (then nothing changes).
        scopes: The chain keys to revoke (unknown ones are ignored); None revokes all of them,
            as ``wallet_revokeSession`` does.

    Returns:
        The update; its session is None when no scope remains.
    """
    if session is None:
        return diff_sessions(None, None)
    kept = (
        {}
        if scopes is None
        else {chain: scope for chain, scope in session.scopes.items() if chain not in scopes}
    )
    new = msgspec.structs.replace(session, scopes=kept) if kept else None
    return diff_sessions(session, new)
