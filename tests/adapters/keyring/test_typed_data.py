"""eth_signTypedData_v4, checked against the EIP-712 specification's own example."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from eth_account import Account
from eth_account.messages import encode_typed_data
from eth_utils.crypto import keccak

from adapters.base import ChainReader
from adapters.keyring import KeyringAdapter
from schemas.errors import InvalidParams, Unauthorized
from tests.adapters.keyring.conftest import ACCOUNT_0
from tests.adapters.keyring.test_keys import write_keystore

# The "Mail" example of EIP-712 (eips.ethereum.org/EIPS/eip-712, assets/eip-712/Example.js):
# signed with the private key keccak256("cow"), address 0xCD2a…D826, it gives v = 28,
# r = 0x4355c47d…1c9d and s = 0x07299936…1562; the same 65 bytes appear as the expected result in
# MetaMask's eth-sig-util tests ("signTypedData V3/V4 ... returns the expected value").
COW_KEY = keccak(text="cow")
COW = "0xcd2a3d9f938e13cd947ec05abc7fe734df8dd826"
MAIL_SIGNATURE = (
    "0x4355c47d63924e8a72e509b65029052eb6c299d53a04e167c5775fd466751c9d"
    "07299936d304c153f6443dfa05f40ff007d72911b6f72307f996231605b91562"
    "1c"
)
MAIL_DIGEST = "0xbe609aee343fb3c4b28e1df9e632fca64fcfaede20f02e86244efddf30957bd2"
MAIL: dict[str, Any] = {
    "types": {
        "EIP712Domain": [
            {"name": "name", "type": "string"},
            {"name": "version", "type": "string"},
            {"name": "chainId", "type": "uint256"},
            {"name": "verifyingContract", "type": "address"},
        ],
        "Person": [{"name": "name", "type": "string"}, {"name": "wallet", "type": "address"}],
        "Mail": [
            {"name": "from", "type": "Person"},
            {"name": "to", "type": "Person"},
            {"name": "contents", "type": "string"},
        ],
    },
    "primaryType": "Mail",
    "domain": {
        "name": "Ether Mail",
        "version": "1",
        "chainId": 1,
        "verifyingContract": "0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC",
    },
    "message": {
        "from": {"name": "Cow", "wallet": "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826"},
        "to": {"name": "Bob", "wallet": "0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB"},
        "contents": "Hello, Bob!",
    },
}
MAINNET = "eip155:1"


@pytest.fixture
async def cow_keyring(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> KeyringAdapter:
    write_keystore(tmp_path, "cow.json", COW_KEY, "moo")
    monkeypatch.setenv("COW_PASSPHRASE", "moo")
    adapter = KeyringAdapter([MAINNET], keystore_dir=tmp_path, passphrase_env="COW_PASSPHRASE")
    await adapter.start()
    return adapter


def mail(**changes: Any) -> dict[str, Any]:
    document = copy.deepcopy(MAIL)
    for path, value in changes.items():
        *parents, leaf = path.split("__")
        target = document
        for parent in parents:
            target = target[parent]
        if value is ...:
            del target[leaf]
        else:
            target[leaf] = value
    return document


async def test_eip712_mail_example(cow_keyring: KeyringAdapter, read: ChainReader) -> None:
    assert cow_keyring.accounts(MAINNET) == (COW,)
    request = cow_keyring.prepare(MAINNET, "eth_signTypedData_v4", [COW, MAIL], [COW])
    assert request.account == COW
    assert request.summary["domain"] == MAIL["domain"]
    assert request.summary["primaryType"] == "Mail"
    assert request.summary["message"]["contents"] == "Hello, Bob!"
    signature = await cow_keyring.execute(request, read)
    assert signature == MAIL_SIGNATURE
    signable = encode_typed_data(full_message=MAIL)
    digest = keccak(b"\x19" + signable.version + signable.header + signable.body)
    assert "0x" + digest.hex() == MAIL_DIGEST
    recovered = Account.recover_message(signable, signature=signature)
    assert recovered.lower() == COW


async def test_typed_data_as_json_text(cow_keyring: KeyringAdapter, read: ChainReader) -> None:
    request = cow_keyring.prepare(MAINNET, "eth_signTypedData_v4", [COW, json.dumps(MAIL)], [COW])
    assert await cow_keyring.execute(request, read) == MAIL_SIGNATURE


async def test_hex_chain_id_and_salt_domain(keyring: KeyringAdapter, read: ChainReader) -> None:
    document = mail(domain__chainId="0x1", domain__salt="0x" + "ab" * 32)
    document["types"]["EIP712Domain"].append({"name": "salt", "type": "bytes32"})
    request = keyring.prepare(MAINNET, "eth_signTypedData_v4", [ACCOUNT_0, document], [ACCOUNT_0])
    assert request.summary["domain"]["salt"] == "0x" + "ab" * 32
    signature = await keyring.execute(request, read)
    assert (
        Account.recover_message(
            encode_typed_data(full_message=document), signature=signature
        ).lower()
        == ACCOUNT_0
    )


async def test_domain_of_another_chain_is_unauthorized(keyring: KeyringAdapter, scope: str) -> None:
    with pytest.raises(Unauthorized) as caught:
        keyring.prepare(scope, "eth_signTypedData_v4", [ACCOUNT_0, MAIL], [ACCOUNT_0])
    assert caught.value.code == 4100


async def test_account_not_permitted(cow_keyring: KeyringAdapter) -> None:
    with pytest.raises(Unauthorized):
        cow_keyring.prepare(MAINNET, "eth_signTypedData_v4", [COW, MAIL], [ACCOUNT_0])


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (mail(primaryType=...), "invalid argument 1: missing field `primaryType`"),
        (mail(types__EIP712Domain=...), "invalid argument 1: missing field `types.EIP712Domain`"),
        (
            mail(primaryType="Letter"),
            "invalid argument 1: field `primaryType`: names no type in `types`",
        ),
        (
            mail(message__contents=...),
            "invalid argument 1: field `message.contents`: missing value of type string",
        ),
        (
            mail(message__to__wallet=...),
            "invalid argument 1: field `message.to.wallet`: missing value of type address",
        ),
        (
            mail(message__from="Cow"),
            "invalid argument 1: field `message.from`: want an object of type Person",
        ),
        (
            mail(domain__version=...),
            "invalid argument 1: field `domain.version`: missing value of type string",
        ),
        (
            mail(domain__chainId="one"),
            "invalid argument 1: field `domain.chainId`: want a chain id",
        ),
        ("{not json", "invalid argument 1: typed data string is not JSON"),
        (["not", "an", "object"], "invalid argument 1: expected `object`, got `array`"),
    ],
)
async def test_malformed_typed_data(
    cow_keyring: KeyringAdapter, document: Any, message: str
) -> None:
    with pytest.raises(InvalidParams) as caught:
        cow_keyring.prepare(MAINNET, "eth_signTypedData_v4", [COW, document], [COW])
    assert caught.value.message == message


async def test_unknown_domain_field(cow_keyring: KeyringAdapter) -> None:
    document = mail(domain__origin="https://example.org")
    document["types"]["EIP712Domain"].append({"name": "origin", "type": "string"})
    with pytest.raises(
        InvalidParams, match=r"field `types.EIP712Domain`: unknown domain field 'origin'"
    ):
        cow_keyring.prepare(MAINNET, "eth_signTypedData_v4", [COW, document], [COW])


async def test_value_the_encoder_rejects(cow_keyring: KeyringAdapter) -> None:
    with pytest.raises(InvalidParams, match="invalid argument 1: cannot encode typed data"):
        cow_keyring.prepare(
            MAINNET, "eth_signTypedData_v4", [COW, mail(message__to__wallet="0x12")], [COW]
        )


async def test_address_argument(cow_keyring: KeyringAdapter) -> None:
    with pytest.raises(
        InvalidParams, match="invalid argument 0: want a 0x-prefixed 20-byte hex address"
    ):
        cow_keyring.prepare(MAINNET, "eth_signTypedData_v4", [MAIL, COW], [COW])
