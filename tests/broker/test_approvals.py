"""The accounts the approval policy grants keep their namespace's form (CAIP-10): EVM addresses
lowercase, base58 (Solana) case-sensitive, never a blanket lowercase."""

from __future__ import annotations

from datetime import UTC, datetime

from broker.approvals import _operator_accounts, auto_accounts
from broker.sessions import SessionRequest, parse_create_session

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
