"""Submitting transactions of every type, as a wallet would, and the pool's admission rules."""

from __future__ import annotations

import msgspec
import pytest
import rlp
from eth_hash.auto import keccak

from adapters.devchain import DevChainAdapter
from adapters.devchain.token import transfer_calldata
from schemas.errors import ServerError

from .conftest import GWEI, Rpc, Wallet, dev_spec

ACCESS_LIST = [
    {"address": "0x" + "11" * 20, "storageKeys": ["0x" + "00" * 31 + "01", "0x" + "22" * 32]}
]


async def test_legacy_transaction(wallet: Wallet, rpc: Rpc) -> None:
    tx_hash = await wallet.send(1, {"to": wallet.address(2), "value": 5, "gasPrice": 3 * GWEI})
    tx = await rpc("eth_getTransactionByHash", tx_hash)
    assert tx["type"] == "0x0"
    assert tx["chainId"] == "0x539"
    assert int(tx["v"], 16) in (1337 * 2 + 35, 1337 * 2 + 36)
    assert "yParity" not in tx
    assert "accessList" not in tx
    assert "maxFeePerGas" not in tx
    assert tx["gasPrice"] == hex(3 * GWEI)
    assert tx["from"] == wallet.address(1)
    receipt = await rpc("eth_getTransactionReceipt", tx_hash)
    assert receipt["effectiveGasPrice"] == hex(3 * GWEI)
    assert receipt["gasUsed"] == "0x5208"
    assert receipt["status"] == "0x1"
    assert "root" not in receipt


async def test_access_list_transaction(wallet: Wallet, rpc: Rpc) -> None:
    tx_hash = await wallet.send(
        1,
        {"type": 1, "to": wallet.address(2), "gasPrice": 3 * GWEI, "accessList": ACCESS_LIST},
    )
    tx = await rpc("eth_getTransactionByHash", tx_hash)
    assert tx["type"] == "0x1"
    assert tx["accessList"] == ACCESS_LIST
    assert tx["v"] == tx["yParity"]
    assert tx["gasPrice"] == hex(3 * GWEI)
    assert "maxFeePerGas" not in tx


async def test_dynamic_fee_transaction_pays_base_fee_plus_tip(wallet: Wallet, rpc: Rpc) -> None:
    tx_hash = await wallet.send(1, {"type": 2, "to": wallet.address(2), "value": 1})
    tx = await rpc("eth_getTransactionByHash", tx_hash)
    block = await rpc("eth_getBlockByHash", tx["blockHash"], False)
    expected = int(block["baseFeePerGas"], 16) + GWEI
    assert tx["gasPrice"] == hex(expected)
    assert tx["maxFeePerGas"] == hex(10 * GWEI)
    receipt = await rpc("eth_getTransactionReceipt", tx_hash)
    assert receipt["effectiveGasPrice"] == hex(expected)


async def test_blob_transaction(wallet: Wallet, rpc: Rpc) -> None:
    versioned_hash = "0x01" + "22" * 31
    raw = await wallet.sign(
        1,
        {
            "type": 3,
            "to": wallet.address(2),
            "maxFeePerBlobGas": GWEI,
            "blobVersionedHashes": [bytes.fromhex(versioned_hash[2:])],
        },
    )
    # Sent in the network form: the consensus fields, then a (here empty) sidecar.
    network_form = raw[:1] + rlp.encode([rlp.decode(raw[1:]), b"\x01", [], [], []])
    tx_hash = await rpc("eth_sendRawTransaction", "0x" + network_form.hex())
    assert tx_hash == "0x" + keccak(raw).hex()
    tx = await rpc("eth_getTransactionByHash", tx_hash)
    assert tx["type"] == "0x3"
    assert tx["maxFeePerBlobGas"] == hex(GWEI)
    assert tx["blobVersionedHashes"] == [versioned_hash]
    receipt = await rpc("eth_getTransactionReceipt", tx_hash)
    assert receipt["blobGasUsed"] == hex(131072)
    assert receipt["blobGasPrice"] == "0x1"
    block = await rpc("eth_getBlockByHash", tx["blockHash"], False)
    assert block["blobGasUsed"] == hex(131072)


async def test_set_code_transaction(wallet: Wallet, rpc: Rpc, adapter: DevChainAdapter) -> None:
    authority = wallet.accounts[3]
    nonce = int(await rpc("eth_getTransactionCount", authority.address, "latest"), 16)
    authorization = authority.sign_authorization(
        {"chainId": 1337, "address": adapter.token_address, "nonce": nonce}
    )
    tx_hash = await wallet.send(
        1,
        {"type": 4, "to": wallet.address(1), "authorizationList": [authorization]},
    )
    tx = await rpc("eth_getTransactionByHash", tx_hash)
    assert tx["type"] == "0x4"
    (rendered,) = tx["authorizationList"]
    assert rendered == {
        "chainId": "0x539",
        "address": adapter.token_address,
        "nonce": hex(nonce),
        "yParity": hex(authorization.y_parity),
        "r": hex(authorization.r),
        "s": hex(authorization.s),
    }
    code = await rpc("eth_getCode", authority.address, "latest")
    assert code == "0xef0100" + adapter.token_address[2:]  # the delegation designator


async def test_token_transfer_logs(wallet: Wallet, rpc: Rpc, adapter: DevChainAdapter) -> None:
    to = bytes.fromhex(wallet.address(5)[2:])
    calldata = transfer_calldata(to, 7)
    tx_hash = await wallet.send(4, {"to": adapter.token_address, "data": calldata})
    receipt = await rpc("eth_getTransactionReceipt", tx_hash)
    (log,) = receipt["logs"]
    assert log["address"] == adapter.token_address
    assert log["topics"][0] == "0x" + keccak(b"Transfer(address,address,uint256)").hex()
    assert log["topics"][1][-40:] == wallet.address(4)[2:]
    assert log["topics"][2][-40:] == wallet.address(5)[2:]
    assert int(log["data"], 16) == 7


async def test_rejections_use_geth_texts(wallet: Wallet, rpc: Rpc) -> None:
    cases = [
        ({"to": wallet.address(2), "nonce": 0}, "nonce too low: next nonce 0, tx nonce"),
        ({"to": wallet.address(2), "gas": 20_000}, "intrinsic gas too low: gas 20000"),
        ({"to": wallet.address(2), "value": 10**30}, "insufficient funds for gas * price + value"),
        ({"to": wallet.address(2), "chainId": 1}, "invalid chain id for signer"),
        (
            {"to": wallet.address(2), "maxFeePerGas": 1, "maxPriorityFeePerGas": 1},
            "max fee per gas",
        ),
        ({"to": wallet.address(2), "gas": 40_000_000}, "exceeds block gas limit"),
    ]
    await wallet.send(1, {"to": wallet.address(2)})  # so that nonce 0 is spent
    for fields, message in cases:
        raw = await wallet.sign(1, fields)
        error = await rpc.error("eth_sendRawTransaction", "0x" + raw.hex())
        assert isinstance(error, ServerError), fields
        assert error.message.startswith(message.replace("next nonce 0", "next nonce 1")), (
            error.message
        )
    error = await rpc.error("eth_sendRawTransaction", "0x02c0")
    assert error.message.startswith("invalid transaction")


async def test_pending_transactions_wait_for_the_next_block() -> None:
    adapter = DevChainAdapter(dev_spec(block_time=5))  # no ingestion task: the timer never runs
    await adapter.start()
    rpc, wallet = Rpc(adapter), Wallet(adapter)
    first = await wallet.send(1, {"to": wallet.address(2), "value": 1})
    second = await wallet.send(1, {"to": wallet.address(2), "value": 2})
    future = await wallet.send(1, {"to": wallet.address(2), "nonce": 5})
    assert await rpc("eth_blockNumber") == "0x2"
    pending = await rpc("eth_getTransactionByHash", first)
    assert pending["blockHash"] is None
    assert pending["blockNumber"] is None
    assert pending["transactionIndex"] is None
    assert pending["gasPrice"] == hex(10 * GWEI)
    assert await rpc("eth_getTransactionReceipt", first) is None
    assert await rpc("eth_getTransactionCount", wallet.address(1), "pending") == "0x2"
    assert await rpc("eth_getTransactionCount", wallet.address(1), "latest") == "0x0"
    raw = await wallet.sign(1, {"to": wallet.address(2), "value": 1, "nonce": 0})
    assert (await rpc.error("eth_sendRawTransaction", "0x" + raw.hex())).message == "already known"
    cheap = await wallet.sign(1, {"to": wallet.address(2), "value": 9, "nonce": 0})
    error = await rpc.error("eth_sendRawTransaction", "0x" + cheap.hex())
    assert error.message == "replacement transaction underpriced"
    assert await rpc("evm_mine") == "0x0"
    block = await rpc("eth_getBlockByNumber", "latest", False)
    assert block["transactions"] == [first, second]
    assert (await rpc("eth_getTransactionByHash", future))["blockHash"] is None


async def test_automine_mines_each_transaction(wallet: Wallet, rpc: Rpc) -> None:
    tx_hash = await wallet.send(1, {"to": wallet.address(2)})
    block = await rpc("eth_getBlockByNumber", "latest", False)
    assert block["number"] == "0x3"
    assert block["transactions"] == [tx_hash]


async def test_evm_mine_options(rpc: Rpc) -> None:
    latest = await rpc("eth_getBlockByNumber", "latest", False)
    stamp = int(latest["timestamp"], 16) + 1000
    assert await rpc("evm_mine", hex(stamp)) == "0x0"
    block = await rpc("eth_getBlockByNumber", "latest", False)
    assert block["timestamp"] == hex(stamp)
    assert await rpc("evm_mine", {"blocks": 3}) == "0x0"
    assert await rpc("eth_blockNumber") == "0x6"
    timestamps = [
        int((await rpc("eth_getBlockByNumber", hex(n), False))["timestamp"], 16) for n in range(7)
    ]
    assert timestamps == sorted(set(timestamps))
    assert (await rpc.error("evm_mine", {"blocks": 0})).code == -32602


@pytest.mark.parametrize("count", [0, 1])
async def test_accounts_option(count: int) -> None:
    adapter = DevChainAdapter(dev_spec(accounts=count))
    await adapter.start()
    assert len(adapter.accounts) == count
    assert adapter.token_address is None
    assert await Rpc(adapter)("eth_blockNumber") == "0x0"


async def test_custom_mnemonic() -> None:
    mnemonic = "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about"
    adapter = DevChainAdapter(dev_spec(mnemonic=mnemonic, accounts=2))
    await adapter.start()
    assert adapter.accounts[0].hex_address == "0x9858effd232b4033e47d90003d41ec34ecaeda94"
    assert "key=" not in repr(adapter.accounts[0])  # keys never show up in logs
    assert msgspec.json.encode(await Rpc(adapter)("eth_chainId")) == b'"0x539"'
