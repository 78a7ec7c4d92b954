"""eth_signTransaction: every type is signed, mined by a real (py-evm) chain and recovered."""

from __future__ import annotations

from typing import Any

import pytest
from eth_account import Account
from eth_tester import EthereumTester

from adapters.base import ChainReader
from adapters.keyring import KeyringAdapter
from schemas.errors import InvalidParams, Unauthorized
from tests.adapters.keyring import evm
from tests.adapters.keyring.conftest import ACCOUNT_0, ACCOUNT_1

GWEI = 10**9


def transaction(tester: EthereumTester, **fields: Any) -> dict[str, Any]:
    sender = fields.get("from", ACCOUNT_0)
    base: dict[str, Any] = {
        "type": "0x2",
        "nonce": hex(tester.get_nonce(sender) if sender in (ACCOUNT_0, ACCOUNT_1) else 0),
        "to": ACCOUNT_1,
        "from": ACCOUNT_0,
        "value": hex(10**18),
        "data": "0x",
        "gasLimit": hex(21_000),
        "maxFeePerGas": hex(3 * GWEI),
        "maxPriorityFeePerGas": hex(GWEI),
        "chainId": hex(evm.chain_id_of(tester)),
    }
    base.update(fields)
    return {name: value for name, value in base.items() if value is not ...}


async def sign_and_send(
    keyring: KeyringAdapter,
    scope: str,
    read: ChainReader,
    tester: EthereumTester,
    tx: dict[str, Any],
) -> dict[str, Any]:
    request = keyring.prepare(scope, "eth_signTransaction", [tx], [ACCOUNT_0, ACCOUNT_1])
    result = await keyring.execute(request, read)
    assert set(result) == {"v", "r", "s", "raw"}
    assert Account.recover_transaction(result["raw"]).lower() == tx["from"]
    tx_hash = tester.send_raw_transaction(result["raw"])
    receipt = tester.get_transaction_receipt(tx_hash)
    assert receipt["status"] == 1
    mined = tester.get_transaction_by_hash(tx_hash)
    assert mined["from"].lower() == tx["from"]
    assert int(result["r"], 16) == mined["r"]
    assert int(result["s"], 16) == mined["s"]
    assert len(result["r"]) == len(result["s"]) == 66
    return {"result": result, "receipt": receipt, "mined": mined, "summary": request.summary}


async def test_eip1559_transfer(
    keyring: KeyringAdapter, scope: str, read: ChainReader, tester: EthereumTester
) -> None:
    before = tester.get_balance(ACCOUNT_1)
    sent = await sign_and_send(keyring, scope, read, tester, transaction(tester))
    assert tester.get_balance(ACCOUNT_1) == before + 10**18
    assert sent["result"]["v"] in ("0x0", "0x1")  # typed transactions carry y-parity
    summary = sent["summary"]
    assert summary["from"] == ACCOUNT_0
    assert summary["to"] == ACCOUNT_1
    assert summary["value"] == {"wei": str(10**18), "ether": "1"}
    assert summary["fees"]["maxFeePerGas"] == {"wei": str(3 * GWEI), "gwei": "3"}
    assert summary["chainId"] == evm.chain_id_of(tester)


async def test_legacy_transaction_is_eip155(
    keyring: KeyringAdapter, scope: str, read: ChainReader, tester: EthereumTester
) -> None:
    tx = transaction(
        tester,
        type="0x0",
        gasPrice=hex(2 * GWEI),
        maxFeePerGas=...,
        maxPriorityFeePerGas=...,
        **{"from": ACCOUNT_1, "to": ACCOUNT_0},
    )
    sent = await sign_and_send(keyring, scope, read, tester, tx)
    chain_id = evm.chain_id_of(tester)
    assert int(sent["result"]["v"], 16) in (chain_id * 2 + 35, chain_id * 2 + 36)


async def test_access_list_transaction(
    keyring: KeyringAdapter, scope: str, read: ChainReader, tester: EthereumTester
) -> None:
    tx = transaction(
        tester,
        type="0x1",
        gasPrice=hex(2 * GWEI),
        gasLimit=hex(30_000),
        maxFeePerGas=...,
        maxPriorityFeePerGas=...,
        accessList=[{"address": ACCOUNT_1, "storageKeys": ["0x" + "00" * 31 + "01"]}],
    )
    sent = await sign_and_send(keyring, scope, read, tester, tx)
    assert sent["summary"]["accessListEntries"] == 1
    assert sent["mined"]["access_list"][0]["storage_keys"][0].endswith("01")


async def test_contract_creation(
    keyring: KeyringAdapter, scope: str, read: ChainReader, tester: EthereumTester
) -> None:
    code = evm.deployment(bytes.fromhex("600160005260206000f3"))  # returns 1
    tx = transaction(tester, to=None, value="0x0", data="0x" + code.hex(), gasLimit=hex(100_000))
    sent = await sign_and_send(keyring, scope, read, tester, tx)
    assert sent["summary"]["contractCreation"] is True
    assert sent["summary"]["data"] == {"bytes": len(code), "selector": "0x" + code[:4].hex()}
    created = sent["receipt"]["contract_address"]
    assert tester.get_code(created) == "0x600160005260206000f3"


async def test_wrong_chain_is_unauthorized(
    keyring: KeyringAdapter, scope: str, tester: EthereumTester
) -> None:
    with pytest.raises(Unauthorized) as caught:
        keyring.prepare(
            scope, "eth_signTransaction", [transaction(tester, chainId="0x1")], [ACCOUNT_0]
        )
    assert caught.value.code == 4100


async def test_other_account_is_unauthorized(
    keyring: KeyringAdapter, scope: str, tester: EthereumTester
) -> None:
    with pytest.raises(Unauthorized):
        keyring.prepare(scope, "eth_signTransaction", [transaction(tester)], [ACCOUNT_1])


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"to": ...},
            "invalid argument 0: field `data`: a contract creation (no `to`) needs init code",
        ),
        ({"nonce": ...}, "invalid argument 0: missing field `nonce`"),
        ({"from": ...}, "invalid argument 0: missing field `from`"),
        (
            {"data": "0x01", "input": "0x02"},
            "invalid argument 0: field `data`: data and input differ; send one of them",
        ),
        (
            {"type": ..., "maxFeePerGas": ..., "maxPriorityFeePerGas": ...},
            "invalid argument 0: field `gasPrice`: missing gasPrice, or maxFeePerGas and "
            "maxPriorityFeePerGas",
        ),
        ({"type": 3}, "invalid argument 0: field `type`: unsupported type 3; want 0x0, 0x1 or 0x2"),
        (
            {"chainId": "0x53g"},
            "invalid argument 0: field `chainId`: want a 0x-prefixed hex quantity",
        ),
        (
            {"gas": "0x5209"},
            "invalid argument 0: field `gas`: gas and gasLimit differ; send one of them",
        ),
        (
            {"gasLimit": ...},
            "invalid argument 0: field `gasLimit`: missing (gasLimit, or gas as wallets send it)",
        ),
        (
            {"gasLimit": ..., "gas": "21000"},
            "invalid argument 0: field `gas`: want a 0x-prefixed hex quantity",
        ),
        ({"gasLimit": ..., "gass": "0x5208"}, "invalid argument 0: unknown field `gass`"),
        (
            {"nonce": -1},
            "invalid argument 0: field `nonce`: want a quantity between 0 and 2**256 - 1",
        ),
        (
            {"nonce": 1.5},
            "invalid argument 0: field `nonce`: expected `int | str`, got `float`",
        ),
        (
            {"value": True},
            "invalid argument 0: field `value`: expected `int | str`, got `bool`",
        ),
        ({"nonce": "0x"}, "invalid argument 0: field `nonce`: want a 0x-prefixed hex quantity"),
        ({"value": "1000"}, "invalid argument 0: field `value`: want a 0x-prefixed hex quantity"),
        (
            {"data": "0xabc"},
            "invalid argument 0: field `data`: want 0x-prefixed hex data with an even number of digits",
        ),
        ({"to": "0x12"}, "invalid argument 0: field `to`: want a 0x-prefixed 20-byte hex address"),
        (
            {"from": "0xzz"},
            "invalid argument 0: field `from`: want a 0x-prefixed 20-byte hex address",
        ),
        (
            {"type": "0x3"},
            "invalid argument 0: field `type`: unsupported type 0x3; want 0x0, 0x1 or 0x2",
        ),
        ({"maxFeePerGas": ...}, "invalid argument 0: missing field `maxFeePerGas`"),
        (
            {"gasPrice": "0x1"},
            "invalid argument 0: field `gasPrice`: a type 0x2 transaction uses the EIP-1559 fees",
        ),
        (
            {"maxPriorityFeePerGas": hex(4 * GWEI)},
            "invalid argument 0: field `maxPriorityFeePerGas`: exceeds maxFeePerGas",
        ),
        (
            {"type": "0x0", "maxFeePerGas": ..., "maxPriorityFeePerGas": ...},
            "invalid argument 0: missing field `gasPrice`",
        ),
        (
            {"type": "0x0", "gasPrice": "0x1"},
            "invalid argument 0: field `maxFeePerGas`: not used by a type 0x0 transaction",
        ),
        (
            {"accessList": [{"address": ACCOUNT_1, "storageKeys": ["0x01"]}]},
            "invalid argument 0: field `accessList[0].storageKeys[0]`: want 32 bytes, got 1",
        ),
        (
            {"accessList": [{"storageKeys": []}]},
            "invalid argument 0: missing field `accessList[0].address`",
        ),
        (
            {"to": None, "data": "0x"},
            "invalid argument 0: field `data`: a contract creation (no `to`) needs init code",
        ),
    ],
)
async def test_malformed_transaction(
    keyring: KeyringAdapter,
    scope: str,
    tester: EthereumTester,
    fields: dict[str, Any],
    message: str,
) -> None:
    with pytest.raises(InvalidParams) as caught:
        keyring.prepare(scope, "eth_signTransaction", [transaction(tester, **fields)], [ACCOUNT_0])
    assert caught.value.message == message


async def test_transaction_must_be_an_object(keyring: KeyringAdapter, scope: str) -> None:
    with pytest.raises(InvalidParams, match="invalid argument 0: expected `object`, got `array`"):
        keyring.prepare(scope, "eth_signTransaction", [[]], [ACCOUNT_0])
    with pytest.raises(InvalidParams, match="missing value for required argument 0"):
        keyring.prepare(scope, "eth_signTransaction", [], [ACCOUNT_0])


async def test_gas_is_accepted_for_gas_limit_as_wallets_send_it(
    keyring: KeyringAdapter, scope: str, tester: EthereumTester
) -> None:
    with_limit = keyring.prepare(scope, "eth_signTransaction", [transaction(tester)], [ACCOUNT_0])
    with_gas = keyring.prepare(
        scope,
        "eth_signTransaction",
        [transaction(tester, gasLimit=..., gas=hex(21_000))],
        [ACCOUNT_0],
    )
    assert with_gas.payload == with_limit.payload
    assert with_gas.summary["gasLimit"] == 21_000


async def test_what_web3py_sends_is_signed_as_type_2(
    keyring: KeyringAdapter, scope: str, read: ChainReader, tester: EthereumTester
) -> None:
    """No ``type``, no ``data``, ``gas`` and JSON numbers: as geth and anvil take it."""
    tx = {
        "from": ACCOUNT_0,
        "to": ACCOUNT_1,
        "value": 10**15,
        "gas": 21_000,
        "maxFeePerGas": 3 * GWEI,
        "maxPriorityFeePerGas": GWEI,
        "nonce": tester.get_nonce(ACCOUNT_0),
        "chainId": evm.chain_id_of(tester),
    }
    sent = await sign_and_send(keyring, scope, read, tester, tx)
    assert sent["result"]["raw"].startswith("0x02")
    assert sent["mined"]["value"] == 10**15
    assert sent["mined"]["data"] == "0x"
    assert sent["mined"]["max_fee_per_gas"] == 3 * GWEI


@pytest.mark.parametrize(
    ("fields", "prefix"),
    [
        ({"maxFeePerGas": ..., "maxPriorityFeePerGas": ..., "gasPrice": hex(2 * GWEI)}, "0xf8"),
        (
            {
                "maxFeePerGas": ...,
                "maxPriorityFeePerGas": ...,
                "gasPrice": hex(2 * GWEI),
                "gasLimit": hex(30_000),
                "accessList": [],
            },
            "0x01",
        ),
        ({}, "0x02"),
    ],
)
async def test_type_is_inferred_from_the_fee_fields(
    keyring: KeyringAdapter,
    scope: str,
    read: ChainReader,
    tester: EthereumTester,
    fields: dict[str, Any],
    prefix: str,
) -> None:
    tx = transaction(tester, type=..., data=..., **fields)
    sent = await sign_and_send(keyring, scope, read, tester, tx)
    assert sent["result"]["raw"].startswith(prefix)  # an RLP list (legacy) or the type byte


async def test_input_is_data_and_chain_id_defaults_to_the_scope(
    keyring: KeyringAdapter, scope: str, read: ChainReader, tester: EthereumTester
) -> None:
    code = evm.deployment(bytes.fromhex("600160005260206000f3"))
    tx = transaction(
        tester,
        to=...,
        data=...,
        chainId=...,
        value=...,
        input="0x" + code.hex(),
        gasLimit=hex(100_000),
    )
    sent = await sign_and_send(keyring, scope, read, tester, tx)
    assert sent["summary"]["contractCreation"] is True
    assert sent["summary"]["chainId"] == evm.chain_id_of(tester)
