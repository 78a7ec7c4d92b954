"""The EntryPoint v0.6 userOpHash against published vectors."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.keyring import DEV_MNEMONIC, KeyringAdapter
from adapters.keyring._entry_point import UserOp, get_nonce_call, user_op_hash
from tests.adapters.keyring.conftest import ACCOUNT_0

ADDRESS_1234 = "0x1234567890123456789012345678901234567890"


def viem_op(**changes: Any) -> UserOp:
    fields: dict[str, Any] = {
        "sender": ADDRESS_1234,
        "nonce": 0,
        "init_code": b"",
        "call_data": b"",
        "call_gas_limit": 6942069,
        "verification_gas_limit": 6942069,
        "pre_verification_gas": 6942069,
        "max_fee_per_gas": 69420,
        "max_priority_fee_per_gas": 69,
        "paymaster_and_data": b"",
        "signature": b"",
    }
    fields.update(changes)
    return UserOp(**fields)


# viem's own vectors: wevm/viem, src/account-abstraction/utils/userOperation/
# getUserOperationHash.test.ts, describe("entryPoint: 0.6") — chainId 1, entry point 0x1234…7890.
@pytest.mark.parametrize(
    ("op", "expected"),
    [
        (viem_op(), "0xe331591ab320e956b5e93f04e1dcf706bc128bc7b510602d2e0553f8be25fcba"),
        (
            viem_op(init_code=bytes.fromhex("1234567890123456789012345678901234567890deadbeef")),
            "0xaa4a4fa863b3018e0e23291ca82a8747d06c6a92548eb9198f54f4a63540d06e",
        ),
        (
            viem_op(paymaster_and_data=bytes.fromhex("1234567890123456789012345678901234567890")),
            "0x72bb2d82af9e9da2079fab165bc219c967c6ca0a63dfa55f382c5914ba2f77c5",
        ),
    ],
    ids=["default", "initCode", "paymasterAndData"],
)
def test_viem_vectors(op: UserOp, expected: str) -> None:
    assert "0x" + user_op_hash(op, ADDRESS_1234, 1).hex() == expected


def test_the_signature_is_not_hashed() -> None:
    signed = viem_op(signature=b"\x01" * 65)
    assert user_op_hash(signed, ADDRESS_1234, 1) == user_op_hash(viem_op(), ADDRESS_1234, 1)


# A user operation mined on Sepolia through the canonical EntryPoint v0.6 (a Safe 4337 account's
# deployment), from safe-global/safe-eth-py gnosis/eth/tests/mocks/mock_bundler.py
# (user_operation_mock / safe_4337_user_operation_hash_mock); the same hash is topic 1 of the
# EntryPoint's UserOperationEvent in that mock's receipt, i.e. what the chain computed.
SEPOLIA = 11155111
SEPOLIA_OP_HASH = "0x39b3e2171c04539d9b3f848d04364dfaa42cc0b412ff65ce2a85c566cf8bf281"
SEPOLIA_OP = {
    "sender": "0xB0B5c0578Aa134b0496a6C0e51A7aae47C522861",
    "nonce": "0x0",
    "initCode": (
        "0x4e1dcf7ad4e460cfd30791ccc4f9c8a4f820ec671688f0b9"
        "00000000000000000000000029fcb43b46531bca003ddc8fcb67ffe91900c762"
        "0000000000000000000000000000000000000000000000000000000000000060"
        "0000000000000000000000000000000000000000000000000000000000000000"
        "00000000000000000000000000000000000000000000000000000000000001e4"
        "b63e800d00000000000000000000000000000000000000000000000000000000"
        "0000010000000000000000000000000000000000000000000000000000000000"
        "000000010000000000000000000000008ecd4ec46d4d2a6b64fe960b3d64e8b9"
        "4b2234eb00000000000000000000000000000000000000000000000000000000"
        "00000140000000000000000000000000a581c4a4db7175302464ff3c06380bc3"
        "270b403700000000000000000000000000000000000000000000000000000000"
        "0000000000000000000000000000000000000000000000000000000000000000"
        "0000000000000000000000000000000000000000000000000000000000000000"
        "0000000000000000000000000000000000000000000000000000000000000000"
        "000000010000000000000000000000005ac255889882acd3da2aa939679e3f3d"
        "4cea221e00000000000000000000000000000000000000000000000000000000"
        "000000648d0dc49f000000000000000000000000000000000000000000000000"
        "0000000000000020000000000000000000000000000000000000000000000000"
        "0000000000000001000000000000000000000000a581c4a4db7175302464ff3c"
        "06380bc3270b4037000000000000000000000000000000000000000000000000"
        "0000000000000000000000000000000000000000000000000000000000000000"
    ),
    "callData": (
        "0x7bb37428"
        "00000000000000000000000002270bd144e70ce6963ba02f575776a16184e1e6"
        "00000000000000000000000000000000000000000000000000005af3107a4000"
        "0000000000000000000000000000000000000000000000000000000000000080"
        "0000000000000000000000000000000000000000000000000000000000000000"
        "0000000000000000000000000000000000000000000000000000000000000000"
    ),
    "callGasLimit": "0x6000",
    "verificationGasLimit": "0x76766",
    "preVerificationGas": "0xc814",
    "maxFeePerGas": "0x50bd27ea",
    "maxPriorityFeePerGas": "0x3b9aca00",
    "paymasterAndData": "0x",
    "signature": (
        "0x000000000000000000000000ce4599307d2e53cf78c31a110c6930e41a2b46bc"
        "eda18c88416000ff13be239c7afdcef5c22ee68bc7ad70cdf27da35160f14ceba88336e686e0533fcc293f3f1b"
    ),
}


async def test_sepolia_vector_through_the_adapter_params() -> None:
    """The JSON user operation, parsed as eth_signUserOperation parses it, hashes as on Sepolia."""
    adapter = KeyringAdapter([f"eip155:{SEPOLIA}"], mnemonic=DEV_MNEMONIC, count=1)
    await adapter.start()
    request = adapter.prepare(
        f"eip155:{SEPOLIA}",
        "eth_signUserOperation",
        [SEPOLIA_OP, "0x5FF137D4b0FDCD49DcA30c7CF57E578a026d2789"],
        [ACCOUNT_0],
    )
    assert request.summary["userOpHash"] == SEPOLIA_OP_HASH
    assert request.summary["sender"] == SEPOLIA_OP["sender"].lower()
    assert request.summary["deploysAccount"] is True
    assert request.summary["factory"] == "0x4e1dcf7ad4e460cfd30791ccc4f9c8a4f820ec67"


def test_get_nonce_calldata() -> None:
    call = get_nonce_call(ADDRESS_1234)
    assert call[:4].hex() == "35567e1a"  # getNonce(address,uint192)
    assert call[4:].hex() == "00" * 12 + ADDRESS_1234[2:] + "00" * 32
