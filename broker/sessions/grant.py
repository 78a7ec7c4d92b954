"""Granting a session: what is requested, cut down to what is served and what was approved.

The I/O shell drives three steps, with the approval policy in the middle::

    request = parse_create_session(params, now=now)          # -32602, 5300, 5301, 5302
    offer = apply_support(request, supported)                # 5100, 5101, 5102
    decision = await policy.decide_session(identity, offer, held)  # 4001 on a no
    session = grant(offer, identity=identity, supported=supported, accounts=decision.accounts,
                    keep=decision.scopes, now=now, max_expiry=max_expiry)

:func:`grant` applies the support lookup again (it is idempotent), so a granted scope never holds
more than is served even if the shell skips the middle step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeAlias

import msgspec

from broker.sessions.model import DEFAULT_MAX_EXPIRY, Identity, Session, SessionRequest, as_utc
from schemas.caip import ScopeObject, is_chain_id, normalize_address
from schemas.errors import (
    InvalidSessionProperties,
    MethodsUnsupported,
    NetworksUnsupported,
    NotificationsNotSupported,
    UserRejected,
)


@dataclass(frozen=True, slots=True)
class ChainSupport:
    """What the broker serves on one chain key: callable methods and deliverable notifications."""

    methods: frozenset[str]
    notifications: frozenset[str]
    #: Whether the wallet holds accounts there: without, no signing method is offered (a 5101
    #: for them says so).
    signing: bool = True


SupportLookup: TypeAlias = Mapping[str, ChainSupport] | Callable[[str], ChainSupport | None]
"""Per chain key, what is served (None or absent: nobody serves that chain)."""


def support_of(supported: SupportLookup, chain: str) -> ChainSupport | None:
    """What ``supported`` says about ``chain``."""
    if isinstance(supported, Mapping):
        return supported.get(chain)
    return supported(chain)


def apply_support(
    request: SessionRequest, supported: SupportLookup, *, served: Sequence[str] = ()
) -> SessionRequest:
    """Cut a request down to what is served: the offer to show the approval policy.

    Scopes whose chain nobody serves are dropped; the others keep only the requested methods and
    notifications that are served there, and all requested accounts. ``served`` lists the chains
    served (a mapping ``supported`` lists its own), named in ``data.supported`` of a 5100.

    Raises:
        NetworksUnsupported: no requested chain is served (5100).
        MethodsUnsupported: methods were requested on the served chains, and none is served (5101).
        NotificationsNotSupported: likewise for notifications (5102).
    """
    wanted: dict[str, ScopeObject] = {}
    offered: dict[str, ScopeObject] = {}
    for chain, scope in request.scopes.items():
        support = support_of(supported, chain)
        if support is None:
            continue
        wanted[chain] = scope
        offered[chain] = msgspec.structs.replace(
            scope,
            methods=tuple(m for m in scope.methods if m in support.methods),
            notifications=tuple(n for n in scope.notifications if n in support.notifications),
        )
    chains = list(supported) if isinstance(supported, Mapping) else list(served)
    if not request.scopes:
        reason = _chainless_reason(request.chainless) or "no scope was requested"
        raise NetworksUnsupported(data={"reason": reason, "supported": chains})
    if not offered:
        raise NetworksUnsupported(data={"unsupported": list(request.scopes), "supported": chains})
    if _any(wanted, "methods") and not _any(offered, "methods"):
        data: dict[str, object] = {"unsupported": _all(wanted, "methods")}
        unsigned = [c for c in wanted if not _signing(supported, c)]
        if unsigned:
            data["reason"] = (
                f"the wallet holds no signing accounts on {', '.join(unsigned)}, so no signing "
                "method is offered there (the server's [accounts] configures them)"
            )
        raise MethodsUnsupported(data=data)
    if _any(wanted, "notifications") and not _any(offered, "notifications"):
        raise NotificationsNotSupported(data={"unsupported": _all(wanted, "notifications")})
    return msgspec.structs.replace(request, scopes=offered)


def _signing(supported: SupportLookup, chain: str) -> bool:
    support = support_of(supported, chain)
    return support is not None and support.signing


def _chainless_reason(keys: Sequence[str]) -> str | None:
    """Why scope keys that named no chain gave no scope (None: there were none)."""
    if not keys:
        return None
    hints = [
        # A bare number is a chain reference without its namespace, not a namespace of that name.
        f"{key!r} reads as a namespace; a chain is written with one, e.g. 'eip155:{key}'"
        if key.isdigit()
        else f"{key!r} is a namespace without references: write '{key}:<reference>' or add "
        "references"
        for key in keys
    ]
    return "no scope names a chain: " + "; ".join(hints)


def _all(scopes: Mapping[str, ScopeObject], field: str) -> list[str]:
    return list(dict.fromkeys(name for scope in scopes.values() for name in getattr(scope, field)))


def _any(scopes: Mapping[str, ScopeObject], field: str) -> bool:
    return any(getattr(scope, field) for scope in scopes.values())


def grant(
    request: SessionRequest,
    *,
    identity: Identity,
    supported: SupportLookup,
    accounts: Mapping[str, Sequence[str]],
    now: datetime,
    max_expiry: timedelta = DEFAULT_MAX_EXPIRY,
    keep: Mapping[str, ScopeObject] | None = None,
) -> Session:
    """The session granted for a request once the approval policy has said yes.

    Args:
        request: The validated request, or the offer :func:`apply_support` made of it.
        identity: Whose session it is.
        supported: What is served per chain key.
        accounts: Per chain key, the addresses the policy chose (``0x`` hex for EVM chains; any
            case). Every granted scope gets ``accounts``, empty for chains not listed here.
        now: The current time (timezone-aware).
        max_expiry: The longest the session may live; a later requested expiry is capped to it.
        keep: The scopes the operator approved, when it narrowed the request: only these chain
            keys are granted, each with no more methods and notifications than it lists (a
            narrowing never widens the offer). None keeps everything offered.

    Raises:
        NetworksUnsupported, MethodsUnsupported, NotificationsNotSupported: as
            :func:`apply_support` (5100, 5101, 5102).
        UserRejected: ``keep`` leaves no scope: the operator approved nothing (4001).
        InvalidSessionProperties: the requested expiry has passed while approval ran (5302).
        ValueError: the shell passed bad arguments (an address that is not one, accounts for the
            chainless ``wallet`` scope, a naive ``now``, a non-positive ``max_expiry``): a bug,
            which the shell answers with 5000.
    """
    now = as_utc(now)
    if max_expiry <= timedelta(0):
        raise ValueError("max_expiry must be positive")
    offer = apply_support(request, supported)
    scopes: dict[str, ScopeObject] = {}
    for chain, offered in offer.scopes.items():
        if keep is not None and chain not in keep:
            continue  # the operator did not approve this chain
        scope = offered if keep is None else _narrow_scope(offered, keep[chain])
        scopes[chain] = msgspec.structs.replace(
            scope, accounts=_granted_accounts(chain, accounts.get(chain, ()))
        )
    if not scopes:
        raise UserRejected()
    return Session(
        identity=identity,
        scopes=scopes,
        expiry=_capped_expiry(offer.expiry, now, max_expiry),
        global_config=offer.global_config,
        created_at=now,
        dialect=offer.dialect,
        layout=offer.layout,
    )


def _narrow_scope(scope: ScopeObject, limit: ScopeObject) -> ScopeObject:
    """``scope`` with only the methods and notifications ``limit`` lists too (its accounts kept)."""
    return msgspec.structs.replace(
        scope,
        methods=tuple(m for m in scope.methods if m in limit.methods),
        notifications=tuple(n for n in scope.notifications if n in limit.notifications),
    )


def _granted_accounts(chain: str, addresses: Sequence[str]) -> tuple[str, ...]:
    if not addresses:
        return ()
    if not is_chain_id(chain):
        raise ValueError(f"scope {chain!r} names no chain and cannot hold accounts")
    return tuple(dict.fromkeys(f"{chain}:{normalize_address(chain, a)}" for a in addresses))


def _capped_expiry(requested: datetime | None, now: datetime, max_expiry: timedelta) -> datetime:
    latest = now + max_expiry
    # Whole seconds: the stored expiry is exactly the one reported in sessionProperties.
    expiry = (latest if requested is None else min(requested, latest)).replace(microsecond=0)
    if expiry <= now:
        raise InvalidSessionProperties("sessionProperties.expiry must be in the future")
    return expiry
