"""The accounts the approval policy grants keep their namespace's form (CAIP-10): EVM addresses
lowercase, base58 (Solana) case-sensitive, never a blanket lowercase. Its watchers (the operator
feed) hear every request start waiting and how it ended."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime

import pytest
import trio
import trio.testing

from adapters.base import SigningRequest
from broker.sessions import Identity, SessionRequest, parse_create_session
from broker.sessions.approvals import ApprovalPolicy, _operator_accounts, auto_accounts
from schemas.errors import UserRejected

NOW = datetime(2025, 1, 1, tzinfo=UTC)
SOLANA = "solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z"
SOL_ACCOUNT = "6LmSRCiu3z6NCSpF19oz1pHXkYkN4jWbj9K1nVELpDkT"
SOL_OTHER = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM"
EVM = "eip155:1337"
EVM_ACCOUNT = "0xAb5801a7D398351b8bE11C439e05C5B3259aeC9B"


def held(chain: str) -> list[str]:
    return [SOL_OTHER, SOL_ACCOUNT] if chain == SOLANA else [EVM_ACCOUNT]


def request(accounts: dict[str, list[str]]) -> SessionRequest:
    scopes = {
        chain: {"methods": ["m"], "notifications": [], "accounts": [f"{chain}:{a}" for a in given]}
        for chain, given in accounts.items()
    }
    return parse_create_session({"optionalScopes": scopes}, now=NOW)


def test_auto_keeps_base58_case_and_lowercases_evm() -> None:
    offer = request({SOLANA: [SOL_ACCOUNT], EVM: [EVM_ACCOUNT]})
    assert auto_accounts(offer, held) == {SOLANA: [SOL_ACCOUNT], EVM: [EVM_ACCOUNT.lower()]}
    unrequested = request({SOLANA: [], EVM: []})
    assert auto_accounts(unrequested, held) == {SOLANA: [SOL_OTHER], EVM: [EVM_ACCOUNT.lower()]}


def test_the_operator_names_accounts_in_their_own_case() -> None:
    offer = request({SOLANA: [], EVM: []})
    chosen = _operator_accounts(offer, held, [SOL_ACCOUNT, EVM_ACCOUNT.upper().replace("0X", "0x")])
    assert chosen == {SOLANA: [SOL_ACCOUNT], EVM: [EVM_ACCOUNT.lower()]}
    # base58 is case-sensitive: the lowercased address is another (unheld) account
    assert _operator_accounts(offer, held, [SOL_ACCOUNT.lower()]) == {SOLANA: [], EVM: []}
    assert _operator_accounts(offer, held, [f"{SOLANA}:{SOL_ACCOUNT}"]) == {
        SOLANA: [SOL_ACCOUNT],
        EVM: [],
    }


async def test_watchers_hear_each_request_start_and_how_it_ended(
    autojump_clock: trio.testing.MockClock,
) -> None:
    policy = ApprovalPolicy("manual", timeout=60)
    heard: list[tuple[str, str | None]] = []
    policy.watch(lambda pending, outcome: heard.append((pending.id, outcome)))
    signature = SigningRequest(EVM, "personal_sign", EVM_ACCOUNT.lower(), {"message": "hi"}, None)
    dapp = Identity.of("dev", "https://dapp.example")

    async def ask() -> None:
        with contextlib.suppress(UserRejected):
            await policy.approve_signature(dapp, signature)

    async with trio.open_nursery() as nursery:
        for _ in range(4):
            nursery.start_soon(ask)
        await trio.testing.wait_all_tasks_blocked()
        assert heard == [("1", None), ("2", None), ("3", None), ("4", None)]
        assert policy.pending()[0].describe()["expires"] > policy.pending()[0].created
        policy.approve("1")
        await trio.testing.wait_all_tasks_blocked()
        policy.reject("2")
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.deadline = trio.current_time() + 30  # "4": its dapp hangs up
        await trio.sleep(10)
        policy.approve("3")
    assert heard[4:] == [
        ("1", "approved"),
        ("2", "rejected"),
        ("3", "approved"),
        ("4", "withdrawn"),
    ]


async def test_a_request_nobody_answers_is_heard_timing_out(
    autojump_clock: trio.testing.MockClock,
) -> None:
    policy = ApprovalPolicy("manual", timeout=5)
    heard: list[str | None] = []
    policy.watch(lambda pending, outcome: heard.append(outcome))
    signature = SigningRequest(EVM, "personal_sign", EVM_ACCOUNT.lower(), {"message": "hi"}, None)
    with pytest.raises(UserRejected):
        await policy.approve_signature(Identity.of("dev", None), signature)
    assert heard == [None, "timedOut"]
