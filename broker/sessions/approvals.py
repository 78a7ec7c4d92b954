"""The approval policy: who says yes to a session and to every signature.

``auto`` (the dev default) answers at once: a session gets the requested accounts the wallet holds,
or the wallet's first account when none was requested; signatures are approved. ``manual`` parks each
request until the wallet operator approves it (optionally narrowing scopes and choosing accounts) or
rejects it (4001) through the operator API; a request nobody answers within the timeout is rejected.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

import trio

from adapters.base import SigningRequest
from broker.sessions import Identity, SessionRequest
from broker.sessions.wall_clock import SYSTEM_CLOCK, WallClock
from schemas.caip import ScopeObject, normalize_address, parse_account_id
from schemas.errors import InvalidParams, UserRejected

log = logging.getLogger(__name__)

HeldAccounts = Callable[[str], Sequence[str]]
"""The wallet's accounts on a chain (addresses in their namespace's canonical form)."""

Outcome = Literal["approved", "rejected", "timedOut", "withdrawn"]
"""How a request stopped waiting (``withdrawn``: its dapp hung up, or its call was cancelled)."""


@dataclass(frozen=True, slots=True)
class SessionDecision:
    """Accounts to grant per chain, and the operator's narrowed scopes (None: all offered)."""

    accounts: Mapping[str, Sequence[str]]
    scopes: Mapping[str, ScopeObject] | None = None


@dataclass(slots=True)
class PendingApproval:
    """A request waiting for the operator."""

    id: str
    kind: Literal["session", "signature"]
    identity: Identity
    summary: dict[str, Any]
    created: str
    expires: str = ""
    decided: trio.Event = field(default_factory=trio.Event)
    approved: bool = False
    accounts: list[str] | None = None
    scopes: dict[str, ScopeObject] | None = None
    #: Why it was rejected other than by the operator (``data.reason`` of the 4001).
    reason: str | None = None
    #: When it started waiting, on trio's clock.
    parked_at: float = field(default_factory=trio.current_time)

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "apiKey": self.identity.api_key,
            "origin": self.identity.origin,
            "created": self.created,
            "expires": self.expires,
            "request": self.summary,
        }


def _canonical(chain: str, addresses: Sequence[str]) -> list[str]:
    """``addresses`` in ``chain``'s canonical form (CAIP-10 rules: EVM lowercase, base58 and the
    other case-sensitive forms as given); ones that are not addresses there are dropped."""
    canonical = []
    for address in addresses:
        try:
            canonical.append(normalize_address(chain, address))
        except ValueError:
            continue
    return canonical


def auto_accounts(offer: SessionRequest, held: HeldAccounts) -> dict[str, list[str]]:
    """The accounts ``auto`` grants: requested ∩ held, else the first held account."""
    chosen: dict[str, list[str]] = {}
    for chain in offer.scopes:
        wallet = _canonical(chain, held(chain))
        requested = _canonical(chain, offer.requested_addresses(chain))
        if requested:
            chosen[chain] = [a for a in requested if a in wallet]
        else:
            chosen[chain] = wallet[:1]
    return chosen


def _operator_accounts(
    offer: SessionRequest, held: HeldAccounts, accounts: Sequence[str]
) -> dict[str, list[str]]:
    # The operator names accounts as CAIP-10 ids (one chain) or plain addresses (every offered
    # chain where the wallet holds them); their type was checked when the params were decoded.
    chosen: dict[str, list[str]] = {chain: [] for chain in offer.scopes}
    for item in accounts:
        if item.count(":") == 2:
            try:
                account = parse_account_id(item)
            except ValueError as exc:
                raise InvalidParams(f"invalid account {item!r}: {exc}") from exc
            named = {str(account.chain): account.address}
        else:
            named = {chain: item for chain in chosen}
        for chain, given in named.items():
            if chain not in chosen:
                continue
            address = next(iter(_canonical(chain, [given])), None)
            if address in _canonical(chain, held(chain)) and address not in chosen[chain]:
                chosen[chain].append(address)
    return chosen


ApprovalWatcher = Callable[[PendingApproval, Outcome | None], None]
"""Told when a request starts waiting (outcome None) and when it stops (its outcome)."""


class ApprovalPolicy:
    """Decides on sessions and signatures, at once (auto) or through the operator (manual)."""

    def __init__(
        self,
        mode: Literal["auto", "manual"] = "auto",
        *,
        timeout: float = 300.0,
        clock: WallClock = SYSTEM_CLOCK,
    ) -> None:
        """``clock`` dates the requests (the operator sees when each stops waiting); the wait
        itself runs on trio's clock."""
        self.mode = mode
        self.timeout = timeout
        self._clock = clock
        self._pending: dict[str, PendingApproval] = {}
        self._ids = itertools.count(1)
        self._watchers: list[ApprovalWatcher] = []

    def pending(self) -> list[PendingApproval]:
        return list(self._pending.values())

    def watch(self, watcher: ApprovalWatcher) -> None:
        """Tell ``watcher`` of every request that starts waiting, and of how each one ended."""
        self._watchers.append(watcher)

    def _tell(self, pending: PendingApproval, outcome: Outcome | None) -> None:
        for watcher in self._watchers:
            try:
                watcher(pending, outcome)
            except Exception:
                log.exception("approval watcher failed")

    async def decide_session(
        self, identity: Identity, offer: SessionRequest, held: HeldAccounts
    ) -> SessionDecision:
        """Accounts and scopes for a session request (raises ``UserRejected``)."""
        if self.mode == "auto":
            return SessionDecision(auto_accounts(offer, held))
        summary = {
            "method": "wallet_createSession",
            "scopes": {
                chain: {
                    "methods": list(scope.methods),
                    "notifications": list(scope.notifications),
                    "requestedAccounts": list(offer.requested_addresses(chain)),
                    "walletAccounts": list(held(chain)),
                }
                for chain, scope in offer.scopes.items()
            },
        }
        pending = await self._park("session", identity, summary)
        scopes = pending.scopes
        # Accounts the operator names, in the approval or in its narrowed scopes (CAIP-10 ids).
        named = list(pending.accounts or ())
        if scopes is not None:
            named.extend(account for scope in scopes.values() for account in scope.accounts)
        if pending.accounts is None and not named:
            return SessionDecision(auto_accounts(offer, held), scopes)
        return SessionDecision(_operator_accounts(offer, held, named), scopes)

    async def approve_signature(self, identity: Identity, request: SigningRequest) -> None:
        """Return when the signature may be made; raise ``UserRejected`` otherwise."""
        if self.mode == "auto":
            return
        summary = {"method": request.method, "chain": request.chain, **dict(request.summary)}
        await self._park("signature", identity, summary)

    async def _park(
        self, kind: Literal["session", "signature"], identity: Identity, summary: dict[str, Any]
    ) -> PendingApproval:
        now = self._clock.now()
        pending = PendingApproval(
            id=str(next(self._ids)),
            kind=kind,
            identity=identity,
            summary=summary,
            created=now.isoformat(timespec="seconds"),
            expires=(now + timedelta(seconds=self.timeout)).isoformat(timespec="milliseconds"),
        )
        self._pending[pending.id] = pending
        log.info("approval %s (%s) waiting for the operator", pending.id, kind)
        self._tell(pending, None)
        outcome: Outcome = "withdrawn"
        try:
            with trio.move_on_after(self.timeout):
                await pending.decided.wait()
            if not pending.decided.is_set():
                outcome = "timedOut"
            else:
                outcome = "approved" if pending.approved else "rejected"
        finally:
            self._pending.pop(pending.id, None)
            self._tell(pending, outcome)
        if not pending.decided.is_set():
            raise UserRejected("User rejected the request.", data={"reason": "approval timed out"})
        if not pending.approved:
            raise (
                UserRejected()
                if pending.reason is None
                else UserRejected("User rejected the request.", data={"reason": pending.reason})
            )
        return pending

    def approve(
        self,
        approval_id: str,
        *,
        accounts: list[str] | None = None,
        scopes: dict[str, ScopeObject] | None = None,
    ) -> bool:
        """The operator's yes; False when no such request is waiting."""
        pending = self._pending.get(approval_id)
        if pending is None or pending.decided.is_set():
            return False
        pending.approved = True
        pending.accounts = accounts
        pending.scopes = scopes
        pending.decided.set()
        return True

    def reject(self, approval_id: str, *, reason: str | None = None) -> bool:
        """The operator's no (or the server's, saying why in ``reason``); False when no such
        request is waiting."""
        pending = self._pending.get(approval_id)
        if pending is None or pending.decided.is_set():
            return False
        pending.reason = reason
        pending.decided.set()
        return True

    def reject_all(self, reason: str) -> list[PendingApproval]:
        """Reject every waiting request with 4001 and ``data.reason`` (the server is stopping:
        the dapps get an answer now rather than a dropped connection later); returns them."""
        waiting = [p for p in self._pending.values() if not p.decided.is_set()]
        for pending in waiting:
            self.reject(pending.id, reason=reason)
        return waiting
