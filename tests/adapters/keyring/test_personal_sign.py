from __future__ import annotations

import pytest
from eth_account import Account
from eth_account.messages import encode_defunct

from adapters.base import ChainReader
from adapters.keyring import KeyringAdapter
from schemas.errors import InvalidParams, Unauthorized
from tests.adapters.keyring.conftest import ACCOUNT_0, ACCOUNT_1

CHECKSUMMED_0 = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"


async def sign(keyring: KeyringAdapter, scope: str, read: ChainReader, params: list[object]) -> str:
    request = keyring.prepare(scope, "personal_sign", params, [ACCOUNT_0, ACCOUNT_1])
    signature = await keyring.execute(request, read)
    assert isinstance(signature, str)
    return signature


async def test_signs_hex_utf8_with_eip191_prefix(
    keyring: KeyringAdapter, scope: str, read: ChainReader
) -> None:
    text = "Sign in to example.org\nNonce: 42 ✓"
    request = keyring.prepare(
        scope, "personal_sign", ["0x" + text.encode().hex(), ACCOUNT_1], [ACCOUNT_1]
    )
    assert request.account == ACCOUNT_1
    assert request.summary == {"account": ACCOUNT_1, "message": text, "encoding": "utf-8"}
    signature = await keyring.execute(request, read)
    assert len(bytes.fromhex(signature[2:])) == 65
    recovered = Account.recover_message(encode_defunct(text.encode()), signature=signature)
    assert recovered.lower() == ACCOUNT_1


async def test_checksummed_address_and_binary_message(
    keyring: KeyringAdapter, scope: str, read: ChainReader
) -> None:
    message = bytes(range(250, 256)) + b"\x00"
    request = keyring.prepare(
        scope, "personal_sign", ["0x" + message.hex(), CHECKSUMMED_0], [ACCOUNT_0]
    )
    assert request.summary["encoding"] == "hex"
    assert request.summary["message"] == "0x" + message.hex()
    signature = await keyring.execute(request, read)
    assert (
        Account.recover_message(encode_defunct(message), signature=signature).lower() == ACCOUNT_0
    )


async def test_plain_text_is_signed_as_text(
    keyring: KeyringAdapter, scope: str, read: ChainReader
) -> None:
    signature = await sign(keyring, scope, read, ["hello world", ACCOUNT_0])
    assert (
        Account.recover_message(encode_defunct(text="hello world"), signature=signature).lower()
        == ACCOUNT_0
    )


async def test_account_not_permitted(keyring: KeyringAdapter, scope: str) -> None:
    with pytest.raises(Unauthorized) as caught:
        keyring.prepare(scope, "personal_sign", ["0x00", ACCOUNT_1], [ACCOUNT_0])
    assert caught.value.code == 4100


async def test_account_not_held(keyring: KeyringAdapter, scope: str) -> None:
    stranger = "0x" + "ab" * 20
    with pytest.raises(Unauthorized):
        keyring.prepare(scope, "personal_sign", ["0x00", stranger], [stranger])


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ([], "missing value for required argument 0"),
        (["0x00"], "missing value for required argument 1"),
        (["0x00", ACCOUNT_0, "extra"], "too many arguments, want at most 2"),
        ([42, ACCOUNT_0], "invalid argument 0: want a hex-encoded message string"),
        (["0x00", "0x1234"], "invalid argument 1: want a 0x-prefixed 20-byte hex address"),
        (
            ["0x00", "0xF39Fd6e51aad88F6F4ce6aB8827279cffFb92266"],
            "invalid argument 1: address has an invalid EIP-55 checksum",
        ),
    ],
)
async def test_malformed_params(
    keyring: KeyringAdapter, scope: str, params: list[object], message: str
) -> None:
    with pytest.raises(InvalidParams) as caught:
        keyring.prepare(scope, "personal_sign", params, [ACCOUNT_0])
    assert caught.value.code == -32602
    assert caught.value.message == message


async def test_eth_sign_is_personal_sign_with_the_params_reversed(
    keyring: KeyringAdapter, scope: str, read: ChainReader
) -> None:
    """geth's eth_sign: [address, data], the personal-message prefix over the data."""
    data = "0x" + b"Sign in to example.org".hex()
    request = keyring.prepare(scope, "eth_sign", [CHECKSUMMED_0, data], [ACCOUNT_0])
    assert request.summary == {
        "account": ACCOUNT_0,
        "message": "Sign in to example.org",
        "encoding": "utf-8",
    }
    signature = await keyring.execute(request, read)
    assert signature == await sign(keyring, scope, read, [data, ACCOUNT_0])
    recovered = Account.recover_message(encode_defunct(hexstr=data), signature=signature)
    assert recovered.lower() == ACCOUNT_0


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (["0x68656c6c6f", ACCOUNT_0], "invalid argument 0: want a 0x-prefixed 20-byte hex address"),
        ([ACCOUNT_0, "hello"], "invalid argument 1: want 0x-prefixed hex data"),
        ([ACCOUNT_0], "missing value for required argument 1"),
    ],
)
async def test_eth_sign_wants_an_address_then_hex_data(
    keyring: KeyringAdapter, scope: str, params: list[object], message: str
) -> None:
    with pytest.raises(InvalidParams) as caught:
        keyring.prepare(scope, "eth_sign", params, [ACCOUNT_0])
    assert caught.value.message.startswith(message)


async def test_eth_sign_for_an_account_not_permitted(keyring: KeyringAdapter, scope: str) -> None:
    with pytest.raises(Unauthorized):
        keyring.prepare(scope, "eth_sign", [ACCOUNT_1, "0x00"], [ACCOUNT_0])
