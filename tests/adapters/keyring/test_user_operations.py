"""ERC-4337 (EntryPoint v0.6) methods against a real py-evm chain.

Not deployed: the chain has no SimpleAccountFactory, so the sender is computed with CREATE2 from
the configured proxy creation code. Deployed: no real SimpleAccountFactory/EntryPoint bytecode is
available here, so hand-assembled contracts stand in for them on the chain: a "factory" answering
``getAddress`` with the address of a deployed "account", and an "entry point" answering
``getNonce``. Each reverts on any other selector, so a wrong encoding fails the test.
"""

from __future__ import annotations

from typing import Any

import pytest
from eth_abi.abi import encode
from eth_account import Account
from eth_account.messages import encode_defunct
from eth_tester import EthereumTester

from adapters.base import ChainReader
from adapters.keyring import (
    DEV_MNEMONIC,
    ENTRY_POINT_V06,
    SIMPLE_ACCOUNT_FACTORY_V06,
    KeyringAdapter,
    UserOpConfig,
)
from adapters.keyring._entry_point import GET_NONCE
from adapters.keyring._simple_account import (
    GET_ADDRESS,
    counterfactual_address,
    create_account_call,
)
from schemas.errors import InvalidParams, ServerError, Unauthorized
from tests.adapters.keyring import evm
from tests.adapters.keyring.conftest import ACCOUNT_0, ACCOUNT_1

PROXY_CODE = evm.deployment(b"\x00")
IMPLEMENTATION_V06 = "0x8abb13360b87be5eeb1b98647a016add927a136c"
STRANGER = "0x" + "ab" * 20
TARGET = "0x" + "11" * 20
BUNDLER = "http://127.0.0.1:4337/rpc"
PAYMASTER = "0x" + "99" * 20


async def started(scope: str, **config: Any) -> KeyringAdapter:
    adapter = KeyringAdapter(
        [scope], mnemonic=DEV_MNEMONIC, count=3, userop=UserOpConfig(bundler_url=BUNDLER, **config)
    )
    await adapter.start()
    return adapter


async def run(
    adapter: KeyringAdapter,
    scope: str,
    read: ChainReader,
    method: str,
    params: list[Any],
    permitted: list[str],
) -> Any:
    return await adapter.execute(adapter.prepare(scope, method, params, permitted), read)


def user_op(details: dict[str, Any], **changes: str) -> dict[str, str]:
    op = {
        "sender": details["sender"],
        "nonce": details["nonce"],
        "initCode": details["initCode"],
        "callData": details["callData"],
        **details["gasLimits"],
        "maxFeePerGas": hex(3 * 10**9),
        "maxPriorityFeePerGas": hex(10**9),
        "paymasterAndData": details["dummyPaymasterAndData"],
        "signature": details["dummySignature"],
    }
    op.update(changes)
    return op


def intent(to: str | None = TARGET, value: int = 0, data: str = "0x") -> dict[str, Any]:
    return {"to": to, "value": hex(value), "data": data}


# --- prepare --------------------------------------------------------------------------------


async def test_prepare_for_an_account_not_yet_deployed(scope: str, read: ChainReader) -> None:
    adapter = await started(scope, proxy_creation_code="0x" + PROXY_CODE.hex())
    request = adapter.prepare(
        scope, "eth_prepareUserOperation", [intent(value=10**18, data="0xa9059cbb")], [ACCOUNT_0]
    )
    assert request.account == ACCOUNT_0
    assert request.summary["owner"] == ACCOUNT_0
    assert request.summary["calls"] == [
        {
            "to": TARGET,
            "value": {"wei": str(10**18), "ether": "1"},
            "data": {"bytes": 4, "selector": "0xa9059cbb"},
        }
    ]
    details = await adapter.execute(request, read)
    sender = counterfactual_address(
        SIMPLE_ACCOUNT_FACTORY_V06, ACCOUNT_0, 0, PROXY_CODE, IMPLEMENTATION_V06
    )
    assert details["sender"] == sender
    assert (
        details["initCode"] == SIMPLE_ACCOUNT_FACTORY_V06 + create_account_call(ACCOUNT_0, 0).hex()
    )
    assert details["nonce"] == "0x0"
    expected_call = bytes.fromhex("b61d27f6") + encode(
        ["address", "uint256", "bytes"], [TARGET, 10**18, b"\xa9\x05\x9c\xbb"]
    )
    assert details["callData"] == "0x" + expected_call.hex()
    assert details["gasLimits"] == {
        "callGasLimit": hex(100_000),
        "verificationGasLimit": hex(400_000),
        "preVerificationGas": hex(60_000),
    }
    assert len(bytes.fromhex(details["dummySignature"][2:])) == 65
    assert details["dummyPaymasterAndData"] == "0x"
    assert details["bundlerUrl"] == BUNDLER


async def test_prepare_for_a_deployed_account(
    scope: str, read: ChainReader, tester: EthereumTester
) -> None:
    account = evm.deploy(tester, b"\x00")
    factory = evm.deploy(tester, evm.answering(GET_ADDRESS, bytes(12) + bytes.fromhex(account[2:])))
    entry_point = evm.deploy(tester, evm.answering(GET_NONCE, (7).to_bytes(32, "big")))
    adapter = await started(scope, factory=factory, entry_point=entry_point)
    details = await run(
        adapter,
        scope,
        read,
        "eth_prepareUserOperation",
        [intent(), intent(ACCOUNT_1, data="0x01")],
        [ACCOUNT_0],
    )
    assert details["sender"] == account
    assert details["initCode"] == "0x"
    assert details["nonce"] == "0x7"
    assert details["callData"][:10] == "0x18dfb3c7"  # executeBatch(address[],bytes[])
    assert details["gasLimits"]["verificationGasLimit"] == hex(150_000)


async def test_prepare_without_factory_or_proxy_code(scope: str, read: ChainReader) -> None:
    adapter = await started(scope)
    with pytest.raises(ServerError, match="proxy_creation_code"):
        await run(adapter, scope, read, "eth_prepareUserOperation", [intent()], [ACCOUNT_0])


async def test_paymaster_is_offered_as_the_dummy(scope: str, read: ChainReader) -> None:
    adapter = await started(
        scope,
        proxy_creation_code="0x" + PROXY_CODE.hex(),
        paymaster=PAYMASTER,
        paymaster_data="0xcafe",
    )
    details = await run(adapter, scope, read, "eth_prepareUserOperation", [intent()], [ACCOUNT_0])
    assert details["dummyPaymasterAndData"] == PAYMASTER + "cafe"


async def test_owner_is_the_first_permitted_account_held(scope: str) -> None:
    adapter = await started(scope)
    request = adapter.prepare(
        scope, "eth_prepareUserOperation", [intent()], [STRANGER, ACCOUNT_1, ACCOUNT_0]
    )
    assert request.account == ACCOUNT_1
    with pytest.raises(Unauthorized) as caught:
        adapter.prepare(scope, "eth_prepareUserOperation", [intent()], [STRANGER])
    assert caught.value.code == 4100


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ([], "invalid argument 0: want at least one transaction intent"),
        (
            [intent(to=None)],
            "invalid argument 0: field `to`: a SimpleAccount cannot create contracts",
        ),
        ([{"to": TARGET, "value": "0x0"}], "invalid argument 0: missing field `data`"),
        (
            [intent(), intent(value=1)],
            "invalid argument 1: field `value`: must be 0x0 in a batch: SimpleAccount v0.6 executeBatch sends no value",
        ),
        (
            [intent(data="0x1")],
            "invalid argument 0: field `data`: want 0x-prefixed hex data with an even number of digits",
        ),
        (
            [intent(to="0x12")],
            "invalid argument 0: field `to`: want a 0x-prefixed 20-byte hex address",
        ),
    ],
)
async def test_malformed_intents(scope: str, params: list[Any], message: str) -> None:
    adapter = await started(scope)
    with pytest.raises(InvalidParams) as caught:
        adapter.prepare(scope, "eth_prepareUserOperation", params, [ACCOUNT_0])
    assert caught.value.message == message


# --- patch ------------------------------------------------------------------------------------


async def test_patch(scope: str, read: ChainReader) -> None:
    plain = await started(scope, proxy_creation_code="0x" + PROXY_CODE.hex())
    details = await run(plain, scope, read, "eth_prepareUserOperation", [intent()], [ACCOUNT_0])
    patched = await run(
        plain, scope, read, "eth_patchUserOperation", [user_op(details)], [ACCOUNT_0]
    )
    assert patched == {"paymasterAndData": "0x"}
    sponsored = await started(scope, paymaster=PAYMASTER, paymaster_data="0x0102")
    patched = await run(
        sponsored, scope, read, "eth_patchUserOperation", [user_op(details)], [ACCOUNT_0]
    )
    assert patched == {"paymasterAndData": PAYMASTER + "0102"}


# --- sign -------------------------------------------------------------------------------------


def recover(op_hash: str, signature: str) -> str:
    message = encode_defunct(bytes.fromhex(op_hash[2:]))
    return str(Account.recover_message(message, signature=signature)).lower()


async def test_prepare_patch_sign_for_a_new_account(scope: str, read: ChainReader) -> None:
    adapter = await started(scope, proxy_creation_code="0x" + PROXY_CODE.hex())
    details = await run(
        adapter, scope, read, "eth_prepareUserOperation", [intent(value=5)], [ACCOUNT_1]
    )
    patch = await run(
        adapter, scope, read, "eth_patchUserOperation", [user_op(details)], [ACCOUNT_1]
    )
    op = user_op(details, **patch)
    request = adapter.prepare(scope, "eth_signUserOperation", [op, ENTRY_POINT_V06], [ACCOUNT_1])
    assert request.account == ACCOUNT_1
    assert request.summary["sender"] == details["sender"]
    assert request.summary["deploysAccount"] is True
    assert request.summary["calls"][0]["to"] == TARGET
    assert request.summary["calls"][0]["value"]["wei"] == "5"
    signature = await adapter.execute(request, read)
    assert recover(request.summary["userOpHash"], signature) == ACCOUNT_1


async def test_sign_for_a_deployed_account(
    scope: str, read: ChainReader, tester: EthereumTester
) -> None:
    account = evm.deploy(tester, b"\x00")
    factory = evm.deploy(tester, evm.answering(GET_ADDRESS, bytes(12) + bytes.fromhex(account[2:])))
    entry_point = evm.deploy(tester, evm.answering(GET_NONCE, (3).to_bytes(32, "big")))
    adapter = await started(scope, factory=factory, entry_point=entry_point)
    details = await run(adapter, scope, read, "eth_prepareUserOperation", [intent()], [ACCOUNT_0])
    request = adapter.prepare(
        scope, "eth_signUserOperation", [user_op(details), entry_point], [ACCOUNT_0]
    )
    assert request.summary["nonce"] == 3
    assert request.summary["deploysAccount"] is False
    signature = await adapter.execute(request, read)
    assert recover(request.summary["userOpHash"], signature) == ACCOUNT_0


async def test_sign_refuses_a_sender_the_owner_does_not_own(scope: str, read: ChainReader) -> None:
    adapter = await started(scope, proxy_creation_code="0x" + PROXY_CODE.hex())
    details = await run(adapter, scope, read, "eth_prepareUserOperation", [intent()], [ACCOUNT_0])
    request = adapter.prepare(
        scope,
        "eth_signUserOperation",
        [user_op(details, sender=STRANGER), ENTRY_POINT_V06],
        [ACCOUNT_0],
    )
    with pytest.raises(Unauthorized) as caught:
        await adapter.execute(request, read)
    assert caught.value.code == 4100
    # ACCOUNT_1's session cannot have ACCOUNT_0's smart account sign either.
    request = adapter.prepare(
        scope, "eth_signUserOperation", [user_op(details), ENTRY_POINT_V06], [ACCOUNT_1]
    )
    with pytest.raises(Unauthorized):
        await adapter.execute(request, read)


async def test_sign_needs_a_permitted_held_owner(scope: str, read: ChainReader) -> None:
    adapter = await started(scope, proxy_creation_code="0x" + PROXY_CODE.hex())
    details = await run(adapter, scope, read, "eth_prepareUserOperation", [intent()], [ACCOUNT_0])
    with pytest.raises(Unauthorized):
        adapter.prepare(
            scope, "eth_signUserOperation", [user_op(details), ENTRY_POINT_V06], [STRANGER]
        )


SAMPLE_OP = {
    "sender": TARGET,
    "nonce": "0x0",
    "initCode": "0x",
    "callData": "0x",
    "callGasLimit": "0x1",
    "verificationGasLimit": "0x1",
    "preVerificationGas": "0x1",
    "maxFeePerGas": "0x1",
    "maxPriorityFeePerGas": "0x1",
    "paymasterAndData": "0x",
    "signature": "0x",
}


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ([SAMPLE_OP], "missing value for required argument 1"),
        (
            [{**SAMPLE_OP, "signature": ...}, ENTRY_POINT_V06],
            "invalid argument 0: missing field `signature`",
        ),
        (
            [{**SAMPLE_OP, "factory": TARGET}, ENTRY_POINT_V06],
            "invalid argument 0: unknown field `factory`",
        ),
        (
            [{**SAMPLE_OP, "nonce": "7"}, ENTRY_POINT_V06],
            "invalid argument 0: field `nonce`: want a 0x-prefixed hex quantity",
        ),
        (
            [{**SAMPLE_OP, "sender": "0x00"}, ENTRY_POINT_V06],
            "invalid argument 0: field `sender`: want a 0x-prefixed 20-byte hex address",
        ),
        (
            [{**SAMPLE_OP, "callData": "0xz0"}, ENTRY_POINT_V06],
            "invalid argument 0: field `callData`: want 0x-prefixed hex data with an even number of digits",
        ),
        ([SAMPLE_OP, "0xentry"], "invalid argument 1: want a 0x-prefixed 20-byte hex address"),
        (
            [SAMPLE_OP, TARGET],
            f"invalid argument 1: entry point {TARGET} is not this keyring's {ENTRY_POINT_V06}",
        ),
    ],
)
async def test_malformed_user_operations(scope: str, params: list[Any], message: str) -> None:
    adapter = await started(scope)
    params = [
        {k: v for k, v in p.items() if v is not ...} if isinstance(p, dict) else p for p in params
    ]
    with pytest.raises(InvalidParams) as caught:
        adapter.prepare(scope, "eth_signUserOperation", params, [ACCOUNT_0])
    assert caught.value.message == message


async def test_patch_checks_the_operation(scope: str) -> None:
    adapter = await started(scope)
    with pytest.raises(InvalidParams, match="invalid argument 0: missing field `paymasterAndData`"):
        adapter.prepare(
            scope,
            "eth_patchUserOperation",
            [{k: v for k, v in SAMPLE_OP.items() if k != "paymasterAndData"}],
            [ACCOUNT_0],
        )
