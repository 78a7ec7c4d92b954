"""The metamask profile's session rules (sans-io): grants, kept properties, the accountless
revoke, and when ``metamask_accountsChanged`` is due."""

from __future__ import annotations

import msgspec

from broker.sessions import ChainSupport, Session, SessionRequest, revoke_scopes
from broker.sessions.metamask import (
    AccountsChanged,
    accounts_changed,
    as_metamask_reads,
    end_if_accountless,
    everything_served,
    kept_session_properties,
    without_unheld_accounts,
)
from tests.broker.sessions.helpers import ADDRESS_LOWER, make_session, scope

SOLANA = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"
DEVNET = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"
ALICE = "7EcDhSYGxXyscszYEp35KHN8vvw3svAuLKTzXwCFLtV"
BOB = "GrAkKfEpTKQuVHG2Y97Y2FF4i7y7Q5AHLK94JBy7Y5yv"
EVM = "eip155:1337"
SUPPORTED = {
    SOLANA: ChainSupport(
        methods=frozenset({"signMessage", "getBalance"}),
        notifications=frozenset({"accountNotification"}),
    ),
    EVM: ChainSupport(methods=frozenset({"eth_call"}), notifications=frozenset()),
}
ASKED = {"solana_accountChanged_notifications": True}


def solana_session(*accounts: str, properties: dict[str, object] | None = None) -> Session:
    session = make_session(
        {
            EVM: scope(("eth_call",), (), (f"{EVM}:{ADDRESS_LOWER}",)),
            SOLANA: scope(accounts=tuple(f"{SOLANA}:{a}" for a in accounts)),
        }
    )
    return msgspec.structs.replace(session, properties=ASKED if properties is None else properties)


def test_every_served_method_is_granted_whatever_was_listed() -> None:
    request = SessionRequest(
        scopes={
            SOLANA: scope(),
            EVM: scope(("eth_call", "made_up")),
            "cosmos:hub": scope(("x",)),
        }
    )
    granted = everything_served(request, SUPPORTED)
    assert granted.scopes[SOLANA] == scope(("getBalance", "signMessage"), ("accountNotification",))
    assert granted.scopes[EVM] == scope(("eth_call",))
    assert granted.scopes["cosmos:hub"] == request.scopes["cosmos:hub"]  # dropped later (5100)


def test_only_the_session_properties_metamask_knows_are_kept() -> None:
    given = {**ASKED, "eip1193-compatible": True, "expiry": "2030-01-01", "mine": {"a": 1}}
    assert kept_session_properties(given) == {**ASKED, "eip1193-compatible": True}
    assert kept_session_properties(None) == {}


def test_a_revoke_that_leaves_no_account_ends_the_session() -> None:
    session = make_session({SOLANA: scope(accounts=(f"{SOLANA}:{ALICE}",)), DEVNET: scope()})
    update = end_if_accountless(revoke_scopes(session, [SOLANA]), session)
    assert update.session is None
    assert update.changed
    assert set(update.removed) == {SOLANA, DEVNET}
    kept = solana_session(ALICE)
    partial = revoke_scopes(kept, [SOLANA])
    assert end_if_accountless(partial, kept) == partial


def test_accounts_changed_names_the_first_solana_account_when_the_accounts_change() -> None:
    before = solana_session(ALICE)
    assert accounts_changed(None, before) == AccountsChanged(SOLANA, (ALICE,))
    assert accounts_changed(before, before) is None
    assert accounts_changed(before, solana_session(BOB, ALICE)) == AccountsChanged(SOLANA, (BOB,))
    assert accounts_changed(before, None) == AccountsChanged(SOLANA, ())
    only_evm = make_session({EVM: scope(accounts=(f"{EVM}:{ADDRESS_LOWER}",))})
    only_evm = msgspec.structs.replace(only_evm, properties=ASKED)
    assert accounts_changed(before, only_evm) == AccountsChanged(SOLANA, ())
    assert AccountsChanged(SOLANA, ()).params() == {
        "scope": SOLANA,
        "notification": {"method": "metamask_accountsChanged", "params": []},
    }


def test_accounts_changed_only_when_the_session_asked_for_it() -> None:
    unasked = solana_session(ALICE, properties={})
    assert accounts_changed(None, unasked) is None
    assert accounts_changed(unasked, None) is None
    # Asked before or after the change: due (MetaMask checks both).
    assert accounts_changed(solana_session(ALICE), unasked) is None
    assert accounts_changed(solana_session(BOB), unasked) == AccountsChanged(SOLANA, (ALICE,))


def test_requested_accounts_the_wallet_does_not_hold_are_dropped() -> None:
    evm = "0x" + "ab" * 20
    request = SessionRequest(
        scopes={
            SOLANA: scope(accounts=(f"{SOLANA}:{ALICE}", f"{SOLANA}:{BOB}")),
            EVM: scope(accounts=(f"{EVM}:{evm}",)),
        }
    )
    held = {SOLANA: [BOB], EVM: [evm.upper().replace("0X", "0x")]}
    kept = without_unheld_accounts(request, lambda chain: held.get(chain, []))
    assert kept.scopes[SOLANA].accounts == (f"{SOLANA}:{BOB}",)  # base58: exactly as held
    assert kept.scopes[EVM].accounts == (f"{EVM}:{evm}",)  # EVM: in any case


def test_malformed_scopes_are_dropped_and_scoped_properties_not_read() -> None:
    good = {"methods": [], "notifications": []}
    params = {
        "optionalScopes": {
            SOLANA: good,
            "eip155:x1": good,  # not a chain id
            EVM: {"methods": []},  # notifications missing
            "eip155:1": {**good, "extra": 1},  # an unknown member
            "eip155:5": {**good, "scopedProperties": {}},  # 5301 under SPEC
        },
        "requiredScopes": "not an object",
        "scopedProperties": {"nowhere:1": 5},
        "sessionProperties": {"solana_accountChanged_notifications": True, "other": 1},
    }
    assert as_metamask_reads(params) == {"optionalScopes": {SOLANA: good}, "requiredScopes": {}}
    assert as_metamask_reads({"sessionProperties": {}}) == {"sessionProperties": {}}  # 5302
    expiry = {"sessionProperties": {"expiry": "2030-01-01T00:00:00Z", "mine": 2}}
    assert as_metamask_reads(expiry) == {"sessionProperties": {"expiry": "2030-01-01T00:00:00Z"}}
    assert as_metamask_reads([1]) == [1]  # -32602, from SPEC's parser
