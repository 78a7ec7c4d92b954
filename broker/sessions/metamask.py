"""The session rules of the ``metamask`` client profile, where MetaMask's extension and its
``@metamask/multichain-api-middleware`` differ from SPEC (README "Client profiles").

Sans-io like the rest of :mod:`broker.sessions`:

* a malformed scope is dropped, not refused, and ``scopedProperties`` is not read;
* a granted scope holds every method and notification served on its chain, whatever the request
  listed (MetaMask keeps only the accounts of a scope and fills in its methods from what it
  supports; names it does not serve are dropped, never refused with 5101/5102);
* the ``sessionProperties`` MetaMask knows are kept and answered back (it drops the others);
* requested accounts the wallet does not hold are dropped before the approval policy decides;
* a partial ``wallet_revokeSession`` that leaves no account in the session ends it;
* ``metamask_accountsChanged`` tells the dapp's wallet-standard wallet which Solana account is
  selected whenever the Solana accounts a session permits change, if the session asked for it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from copy import deepcopy
from typing import Any, Final

import msgspec

from broker.sessions.grant import SupportLookup, support_of
from broker.sessions.model import ScopeUpdate, Session, SessionRequest
from broker.sessions.scopes import parse_scopes
from broker.sessions.updates import diff_sessions
from schemas.errors import RpcError

#: The ``sessionProperties`` MetaMask keeps (chain-agnostic-permission's KnownSessionProperties).
KNOWN_SESSION_PROPERTIES: Final = (
    "eip1193-compatible",
    "solana_accountChanged_notifications",
    "tron_accountChanged_notifications",
    "bip122_accountChanged_notifications",
)
#: The session property that asks for :data:`ACCOUNTS_CHANGED` on Solana scopes.
SOLANA_ACCOUNT_CHANGED: Final = "solana_accountChanged_notifications"
#: The notification (inside ``wallet_notify``) that names the selected Solana account.
ACCOUNTS_CHANGED: Final = "metamask_accountsChanged"
SOLANA: Final = "solana"


class AccountsChanged(msgspec.Struct, frozen=True, gc=False):
    """A ``metamask_accountsChanged`` due: on ``scope``, the selected account (or none).
    Untracked by the garbage collector: strings only, in no cycle."""

    scope: str
    accounts: tuple[str, ...]

    def params(self) -> dict[str, Any]:
        """The ``wallet_notify`` params that carry it."""
        return {
            "scope": self.scope,
            "notification": {"method": ACCOUNTS_CHANGED, "params": list(self.accounts)},
        }


#: The ``sessionProperties`` members SPEC's parser reads (the others are MetaMask's, or dropped).
_SPEC_PROPERTIES: Final = ("expiry", "globalConfig")


def as_metamask_reads(params: Any) -> Any:
    """``wallet_createSession`` params cut down to what MetaMask's middleware reads of them, for
    SPEC's parser (:func:`~broker.sessions.validation.parse_create_session`) to validate.

    MetaMask drops a malformed scope (an unknown member, a bad key, missing ``methods`` or
    ``notifications``) instead of refusing the request, never reads ``scopedProperties``, and
    refuses only an empty ``sessionProperties`` (5302). Params that are not an object are left as
    they are: -32602, as MetaMask's validator answers them.
    """
    if not isinstance(params, dict):
        return params
    read = {k: v for k, v in params.items() if k != "scopedProperties"}
    for field in ("requiredScopes", "optionalScopes"):
        if field in read:
            read[field] = _well_formed(read[field], field)
    properties = read.get("sessionProperties")
    if isinstance(properties, dict) and properties:
        spec = {k: v for k, v in properties.items() if k in _SPEC_PROPERTIES}
        if spec:
            read["sessionProperties"] = spec
        else:  # only MetaMask's (kept apart by kept_session_properties) or unknown ones
            del read["sessionProperties"]
    return read


def _well_formed(scopes: Any, field: str) -> dict[str, Any]:
    if not isinstance(scopes, dict):
        return {}
    kept = {}
    for key, scope in scopes.items():
        try:
            parse_scopes({key: scope}, field=field)
        except RpcError:  # -32602, or 5301 for scopedProperties inside the scope
            continue
        kept[key] = scope
    return kept


def kept_session_properties(session_properties: Any) -> dict[str, Any]:
    """The members of a request's ``sessionProperties`` MetaMask keeps (copies)."""
    if not isinstance(session_properties, dict):
        return {}
    return {
        name: deepcopy(value)
        for name, value in session_properties.items()
        if name in KNOWN_SESSION_PROPERTIES
    }


def everything_served(request: SessionRequest, supported: SupportLookup) -> SessionRequest:
    """``request`` with every served method and notification on each of its served chains.

    MetaMask's caveat keeps a scope's accounts only and answers its methods from what the wallet
    supports on the chain (``getNonEvmSupportedMethods`` on a non-EVM chain, every known method on
    an EVM one), so a scope listing none, or a subset, is granted all of them. Unserved chains stay
    as they are: :func:`~broker.sessions.grant.apply_support` drops them (5100 when none is left).
    """
    scopes = {}
    for chain, scope in request.scopes.items():
        support = support_of(supported, chain)
        if support is None:
            scopes[chain] = scope
            continue
        scopes[chain] = msgspec.structs.replace(
            scope,
            methods=tuple(sorted(support.methods)),
            notifications=tuple(sorted(support.notifications)),
        )
    return msgspec.structs.replace(request, scopes=scopes)


def without_unheld_accounts(
    request: SessionRequest, held: Callable[[str], Sequence[str]]
) -> SessionRequest:
    """``request`` without the requested accounts the wallet does not hold on their chain: MetaMask
    drops them before it asks the user (EVM addresses compared in any case, the others exactly), so
    a dapp asking for an unknown account is offered the wallet's own instead of none."""
    scopes = {}
    for chain, scope in request.scopes.items():
        wallet = {_comparable(chain, address) for address in held(chain)}
        kept = tuple(
            account
            for account in scope.accounts
            if _comparable(chain, account.rpartition(":")[2]) in wallet
        )
        scopes[chain] = msgspec.structs.replace(scope, accounts=kept)
    return msgspec.structs.replace(request, scopes=scopes)


def _comparable(chain: str, address: str) -> str:
    return address.lower() if chain.startswith("eip155:") else address


def end_if_accountless(update: ScopeUpdate, previous: Session | None) -> ScopeUpdate:
    """A partial revoke as MetaMask's ``wallet_revokeSession`` makes it: when the scopes left
    permit no account, the whole session ends."""
    session = update.session
    if session is None or any(scope.accounts for scope in session.scopes.values()):
        return update
    return diff_sessions(previous, None)


def _solana_accounts(session: Session | None) -> tuple[tuple[str, ...], str | None]:
    """The addresses a session permits on its Solana scopes (first granted first, no repeats),
    and its first Solana scope."""
    if session is None:
        return (), None
    addresses: dict[str, None] = {}
    first = None
    for chain, scope in session.scopes.items():
        if chain.partition(":")[0] != SOLANA:
            continue
        first = first or chain
        for account in scope.accounts:
            addresses[account.rpartition(":")[2]] = None
    return tuple(addresses), first


def _asked(session: Session | None) -> bool:
    return session is not None and bool(session.properties.get(SOLANA_ACCOUNT_CHANGED))


def accounts_changed(previous: Session | None, current: Session | None) -> AccountsChanged | None:
    """The ``metamask_accountsChanged`` a change from ``previous`` to ``current`` calls for.

    Due when either state of the session asked for it and the Solana accounts it permits differ;
    it names the first one permitted now (MetaMask: the one last selected), or none once the
    session permits none. MetaMask sends it on Solana mainnet's scope whatever the dapp asked for;
    here it goes on the session's first Solana scope (mainnet's when a dev chain claims it).
    """
    if not (_asked(previous) or _asked(current)):
        return None
    before, before_scope = _solana_accounts(previous)
    after, after_scope = _solana_accounts(current)
    scope = after_scope or before_scope
    if before == after or scope is None:
        return None
    return AccountsChanged(scope, after[:1])
