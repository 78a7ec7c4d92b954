"""CAIP-2 / CAIP-10 parsing and the wire shapes of schemas.caip."""

from __future__ import annotations

import msgspec
import pytest

from schemas.caip import (
    AccountId,
    ChainId,
    CreateSessionResult,
    GetSessionResult,
    ScopeObject,
    SessionProperties,
    is_chain_id,
    is_namespace,
    is_reference,
    normalize_address,
    parse_account_id,
    parse_chain_id,
)

from .helpers import ADDRESS, ADDRESS_LOWER


@pytest.mark.parametrize("text", ["eip155", "abc", "wallet", "a-b-c-d1", "12345678", "---"])
def test_namespace_accepts(text: str) -> None:
    assert is_namespace(text)


@pytest.mark.parametrize(
    "text",
    ["ab", "abcdefghi", "EIP155", "eip_155", "eip.155", "", " eip155", "eip155\n", None, 155],
)
def test_namespace_rejects(text: object) -> None:
    assert not is_namespace(text)


@pytest.mark.parametrize(
    "text",
    [
        "eip155:1",
        "eip155:0",
        "eip155:1337",
        "bip122:000000000019d6689c085ae165831e93",
        "cosmos:cosmoshub-3",
        "cosmos:Binance-Chain-Tigris",
        "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp",
        "abc:a_b",
        "abc:" + "x" * 32,
        "abcdefgh:1",
        "wallet:eip155",
        "wallet:solana",
    ],
)
def test_chain_id_accepts(text: str) -> None:
    assert is_chain_id(text)
    assert str(parse_chain_id(text)) == text


@pytest.mark.parametrize(
    "text",
    [
        "eip155",
        "eip155:",
        ":1",
        "eip155:1:2",
        "eip155:1\n",
        " eip155:1",
        "eip155:1 ",
        "EIP155:1",
        "ab:1",
        "abcdefghi:1",
        "abc:" + "x" * 33,
        "abc:a.b",
        "abc:a%b",
        "eip155:01",  # eip155 profile: decimal without leading zeros
        "eip155:0x1",
        "eip155:-1",
        "wallet:EIP155",  # wallet scope: the reference is a namespace
        "wallet:ab",
        "",
    ],
)
def test_chain_id_rejects(text: str) -> None:
    assert not is_chain_id(text)
    with pytest.raises(ValueError, match="not a CAIP-2 chain id"):
        parse_chain_id(text)


def test_chain_id_rejects_non_strings() -> None:
    assert not is_chain_id(1)
    assert not is_chain_id(None)


def test_parse_chain_id_splits() -> None:
    assert parse_chain_id("cosmos:cosmoshub-3") == ChainId("cosmos", "cosmoshub-3")


def test_reference_profiles() -> None:
    assert is_reference("0x1")
    assert not is_reference("0x1", "eip155")
    assert is_reference("137", "eip155")
    assert is_reference("eip155", "wallet")
    assert not is_reference("EIP155", "wallet")
    assert not is_reference("", None)
    assert not is_reference(1)


def test_account_id_evm_lowercased() -> None:
    account = parse_account_id(f"eip155:1:{ADDRESS}")
    assert account == AccountId(ChainId("eip155", "1"), ADDRESS_LOWER)
    assert str(account) == f"eip155:1:{ADDRESS_LOWER}"


def test_account_id_other_namespaces_keep_case() -> None:
    text = "bip122:000000000019d6689c085ae165831e93:128Lkh3S7CkDTBZ8W7BbpsN3YYizJMp8p6"
    assert str(parse_account_id(text)) == text
    hedera = "hedera:mainnet:0.0.1234-vfmkw"
    assert parse_account_id(hedera).address == "0.0.1234-vfmkw"
    assert parse_account_id("abc:def:a%20b").address == "a%20b"
    assert parse_account_id("abc:def:" + "z" * 128).address == "z" * 128


def test_account_id_wallet_eip155_is_evm() -> None:
    assert parse_account_id(f"wallet:eip155:{ADDRESS}").address == ADDRESS_LOWER


@pytest.mark.parametrize(
    "text",
    [
        "eip155:1",
        "eip155:1:",
        f"eip155:1:{ADDRESS}:x",
        f"eip155:1:{ADDRESS}\n",
        f"eip155:01:{ADDRESS}",
        "eip155:1:0x1234",  # EVM profile: 20 bytes
        "eip155:1:" + "g" * 40,
        "eip155:1:0x" + "g" * 40,
        "abc:def:" + "z" * 129,
        "abc:def:a b",
        "abc:def:a/b",
        f"EIP155:1:{ADDRESS}",
        "",
    ],
)
def test_account_id_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="not a"):
        parse_account_id(text)


def test_normalize_address() -> None:
    assert normalize_address("eip155:1", ADDRESS) == ADDRESS_LOWER
    assert normalize_address("solana:abc", "AbC") == "AbC"
    with pytest.raises(ValueError, match="not an EVM address"):
        normalize_address("eip155:1", "AbC")
    with pytest.raises(ValueError, match="not a CAIP-10 account address"):
        normalize_address("solana:abc", "a:b")


def test_results_encode_in_camel_case() -> None:
    scopes = {"eip155:1": ScopeObject(methods=("eth_call",), notifications=(), accounts=())}
    result = CreateSessionResult(
        session_scopes=scopes,
        session_properties=SessionProperties(expiry="2025-01-01T00:00:00+00:00", global_config={}),
    )
    assert msgspec.json.decode(msgspec.json.encode(result)) == {
        "sessionScopes": {
            "eip155:1": {"methods": ["eth_call"], "notifications": [], "accounts": []}
        },
        "sessionProperties": {"expiry": "2025-01-01T00:00:00+00:00", "globalConfig": {}},
    }
    assert msgspec.json.encode(GetSessionResult(session_scopes={})) == b'{"sessionScopes":{}}'
