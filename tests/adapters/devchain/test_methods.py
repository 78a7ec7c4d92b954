"""The read methods on a real dev chain: identity, blocks, transactions, receipts, state, fees."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from adapters.devchain import DevChainAdapter
from adapters.devchain.assembler import assemble, deployer
from adapters.devchain.token import RUNTIME, TOTAL_SUPPLY, TRANSFER_TOPIC
from schemas import eth as schema
from schemas.errors import MethodNotFound, ServerError, WireError

from .conftest import CHAIN, GWEI, Rpc, Wallet, dev_spec

ZERO_HASH = "0x" + "00" * 32
FIRST = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"


@pytest.fixture
def shared(shared_adapter: DevChainAdapter) -> Rpc:
    return Rpc(shared_adapter)


async def test_identity(shared: Rpc) -> None:
    assert await shared("eth_chainId") == "0x539"
    assert await shared("net_version") == "1337"
    assert (await shared("web3_clientVersion")).startswith("scopecast-devchain/")
    assert await shared("eth_blockNumber") == "0x2"
    assert await shared("eth_syncing") is False
    assert await shared("net_listening") is True
    accounts = await shared("eth_accounts")  # the dev accounts, as anvil and hardhat list theirs
    assert len(accounts) == 10
    assert accounts[0] == "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"


async def test_methods_list(shared_adapter: DevChainAdapter) -> None:
    methods = shared_adapter.methods(CHAIN)
    assert {"eth_getLogs", "eth_sendRawTransaction", "evm_mine", "evm_snapshot", "evm_revert"} <= (
        methods
    )
    assert not methods & {"eth_newFilter", "eth_getFilterChanges", "eth_subscribe"}
    with pytest.raises(MethodNotFound, match="the method eth_newFilter does not exist"):
        await shared_adapter.call(CHAIN, "eth_newFilter", msgspec.Raw(b"[]"))
    with pytest.raises(ValueError, match="serves eip155:1337"):
        await shared_adapter.call("eip155:1", "eth_chainId", msgspec.Raw(b"[]"))


async def test_genesis_block_has_prague_fields(shared: Rpc) -> None:
    genesis = await shared("eth_getBlockByNumber", "0x0", False)
    assert genesis["number"] == "0x0"
    assert genesis["parentHash"] == ZERO_HASH
    assert genesis["transactions"] == []
    assert genesis["uncles"] == []
    assert genesis["withdrawals"] == []
    assert genesis["requestsHash"] == (
        "0xe3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )
    assert list(genesis) == sorted(genesis)  # geth writes blocks as Go maps: sorted keys
    assert "totalDifficulty" not in genesis
    assert await shared("eth_getBlockByHash", genesis["hash"], False) == genesis
    assert await shared("eth_getBlockByNumber", "earliest", True) == genesis


async def test_tags(shared: Rpc) -> None:
    latest = await shared("eth_getBlockByNumber", "latest", False)
    assert latest["number"] == "0x2"
    for tag in ("safe", "finalized"):  # pending: the next block, see below
        assert await shared("eth_getBlockByNumber", tag, False) == latest
    assert await shared("eth_getBlockByNumber", 2, False) == latest  # a decimal JSON integer


async def test_missing_blocks_are_null(shared: Rpc) -> None:
    assert await shared("eth_getBlockByNumber", "0x3e8", True) is None
    assert await shared("eth_getBlockByHash", "0x" + "de" * 32, True) is None
    assert await shared("eth_getBlockReceipts", "0x" + "de" * 32) is None
    assert await shared("eth_getBlockReceipts", "0x3e8") is None
    assert await shared("eth_getTransactionByHash", "0x" + "de" * 32) is None
    assert await shared("eth_getTransactionReceipt", "0x" + "de" * 32) is None
    assert await shared("eth_getTransactionByBlockNumberAndIndex", "0x1", "0x5") is None
    assert await shared("eth_getTransactionByBlockNumberAndIndex", "0x99", "0x0") is None
    assert await shared("eth_getBlockTransactionCountByNumber", "0x99") is None
    assert await shared("eth_getUncleByBlockNumberAndIndex", "0x1", "0x0") is None
    assert await shared("eth_getUncleCountByBlockNumber", "0x1") == "0x0"


async def test_full_transactions_match_lookups(shared: Rpc) -> None:
    block = await shared("eth_getBlockByNumber", "0x2", True)
    hashes = await shared("eth_getBlockByNumber", "0x2", False)
    assert [tx["hash"] for tx in block["transactions"]] == hashes["transactions"]
    assert len(block["transactions"]) == 9
    assert await shared("eth_getBlockTransactionCountByNumber", "0x2") == "0x9"
    assert await shared("eth_getBlockTransactionCountByHash", block["hash"]) == "0x9"
    for index, tx in enumerate(block["transactions"]):
        assert await shared("eth_getTransactionByHash", tx["hash"]) == tx
        assert await shared("eth_getTransactionByBlockNumberAndIndex", "0x2", hex(index)) == tx
        assert (
            await shared("eth_getTransactionByBlockHashAndIndex", block["hash"], hex(index)) == tx
        )
        assert tx["blockHash"] == block["hash"]
        assert tx["transactionIndex"] == hex(index)
    first = block["transactions"][0]
    assert list(first) == [
        "blockHash", "blockNumber", "from", "gas", "gasPrice", "maxFeePerGas",
        "maxPriorityFeePerGas", "hash", "input", "nonce", "to", "transactionIndex", "value",
        "type", "accessList", "chainId", "v", "r", "s", "yParity",
    ]  # fmt: skip
    base_fee = int(block["baseFeePerGas"], 16)
    assert int(first["gasPrice"], 16) == min(
        int(first["maxFeePerGas"], 16), base_fee + int(first["maxPriorityFeePerGas"], 16)
    )


async def test_token_deployment_receipt(shared: Rpc, shared_adapter: DevChainAdapter) -> None:
    (receipt,) = await shared("eth_getBlockReceipts", "0x1")
    assert receipt["contractAddress"] == shared_adapter.token_address
    assert receipt["to"] is None
    assert receipt["status"] == "0x1"
    assert receipt["type"] == "0x2"
    assert receipt["gasUsed"] == receipt["cumulativeGasUsed"]
    assert list(receipt) == sorted(receipt)
    (log,) = receipt["logs"]
    assert log["topics"] == ["0x" + TRANSFER_TOPIC.hex(), ZERO_HASH, "0x" + "00" * 12 + FIRST[2:]]
    assert int(log["data"], 16) == TOTAL_SUPPLY
    assert log["removed"] is False
    assert log["logIndex"] == "0x0"
    assert await shared("eth_getTransactionReceipt", receipt["transactionHash"]) == receipt


async def test_block_receipts_accepts_every_block_form(shared: Rpc) -> None:
    by_number = await shared("eth_getBlockReceipts", "0x2")
    block = await shared("eth_getBlockByNumber", "0x2", False)
    assert len(by_number) == 9
    for form in (2, "2", block["hash"], "latest", "pending", "safe", "finalized"):
        assert await shared("eth_getBlockReceipts", form) == by_number
    assert await shared("eth_getBlockReceipts", {"blockHash": block["hash"]}) == by_number
    assert await shared("eth_getBlockReceipts", "earliest") == []
    cumulative = [int(r["cumulativeGasUsed"], 16) for r in by_number]
    used = [int(r["gasUsed"], 16) for r in by_number]
    assert cumulative == [sum(used[: i + 1]) for i in range(len(used))]
    log_indexes = [log["logIndex"] for r in by_number for log in r["logs"]]
    assert log_indexes == [hex(i) for i in range(9)]  # block-wide positions


async def test_structs_decode_what_the_adapter_writes(shared: Rpc) -> None:
    block = await shared("eth_getBlockByNumber", "0x2", True)
    decoded = msgspec.json.decode(msgspec.json.encode(block), type=schema.Block)
    assert decoded.hash == block["hash"]
    txs = msgspec.json.decode(decoded.transactions, type=list[schema.Transaction])  # type: ignore[arg-type]
    assert txs[0].from_ == FIRST
    receipts = await shared("eth_getBlockReceipts", "0x2")
    decoded_receipts = msgspec.json.decode(msgspec.json.encode(receipts), type=list[schema.Receipt])
    assert decoded_receipts[0].logs[0].removed is False


async def test_state_reads(shared: Rpc, shared_adapter: DevChainAdapter) -> None:
    token = shared_adapter.token_address
    assert await shared("eth_getCode", token, "latest") == "0x" + RUNTIME.hex()
    assert await shared("eth_getCode", token, "0x0") == "0x"
    assert int(await shared("eth_getStorageAt", token, "0x2", "latest"), 16) == TOTAL_SUPPLY
    assert int(await shared("eth_getStorageAt", token, "0x02", "latest"), 16) == TOTAL_SUPPLY
    assert await shared("eth_getTransactionCount", FIRST, "latest") == "0xa"
    assert await shared("eth_getTransactionCount", FIRST, "0x0") == "0x0"
    last = "0xa0ee7a142d267c1f36714e4a8f75612f20a79720"
    assert int(await shared("eth_getBalance", last, "latest"), 16) == 10_000 * 10**18
    block1 = await shared("eth_getBlockByNumber", "0x1", False)
    assert await shared("eth_getTransactionCount", FIRST, {"blockHash": block1["hash"]}) == "0x1"
    assert await shared("eth_getTransactionCount", FIRST, {"blockNumber": "0x1"}) == "0x1"
    error = await shared.error("eth_getBalance", FIRST, "0x99")
    assert isinstance(error, ServerError)
    assert error.message == "header not found"
    error = await shared.error("eth_getStorageAt", token, "0x" + "1" * 65, "latest")
    assert (
        error.message == "unable to decode storage key: hex string too long, want at most 32 bytes"
    )


async def test_call_and_estimate(shared: Rpc, shared_adapter: DevChainAdapter) -> None:
    token = shared_adapter.token_address
    supply = await shared("eth_call", {"to": token, "data": "0x18160ddd"}, "latest")
    assert int(supply, 16) == TOTAL_SUPPLY
    assert await shared("eth_call", {"to": token, "input": "0x18160ddd"}) == supply
    assert await shared("eth_call", {"to": token, "data": "0x18160ddd"}, "0x0") == "0x"
    second = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"
    assert await shared("eth_estimateGas", {"from": FIRST, "to": second, "value": "0x1"}) == (
        "0x5208"
    )
    transfer = "0xa9059cbb" + "00" * 12 + second[2:] + f"{5:064x}"
    estimate = int(
        await shared("eth_estimateGas", {"from": FIRST, "to": token, "data": transfer}), 16
    )
    assert 21_000 < estimate < 60_000
    too_much = "0xa9059cbb" + "00" * 12 + second[2:] + "ff" * 32
    error = await shared.error("eth_call", {"from": FIRST, "to": token, "data": too_much})
    assert isinstance(error, ServerError)
    assert error.message == "execution reverted"
    error = await shared.error("eth_estimateGas", {"from": FIRST, "to": token, "data": too_much})
    assert error.message == "execution reverted"


async def test_revert_reason_is_code_3_with_data(wallet: Wallet, rpc: Rpc) -> None:
    reason = b"nope"
    payload = (
        bytes.fromhex("08c379a0")
        + (32).to_bytes(32, "big")
        + len(reason).to_bytes(32, "big")
        + reason.ljust(32, b"\0")
    )
    runtime = assemble(
        [
            *(
                item
                for i in range(0, len(payload), 32)
                for item in (payload[i : i + 32], i, "MSTORE")
            ),
            len(payload),
            0,
            "REVERT",
        ]
    )
    tx_hash = await wallet.send(0, {"to": None, "data": deployer(runtime), "gas": 300_000})
    address = (await rpc("eth_getTransactionReceipt", tx_hash))["contractAddress"]
    error = await rpc.error("eth_call", {"to": address})
    assert isinstance(error, WireError)
    assert (error.code, error.message, error.data) == (
        3,
        "execution reverted: nope",
        "0x" + payload.hex(),
    )


async def test_fees(shared: Rpc) -> None:
    latest = await shared("eth_getBlockByNumber", "latest", False)
    assert await shared("eth_maxPriorityFeePerGas") == hex(GWEI)
    assert int(await shared("eth_gasPrice"), 16) == int(latest["baseFeePerGas"], 16) + GWEI
    assert await shared("eth_blobBaseFee") == "0x1"
    history = await shared("eth_feeHistory", "0x2", "latest", [25, 75])
    assert history["oldestBlock"] == "0x1"
    assert len(history["baseFeePerGas"]) == 3
    assert len(history["gasUsedRatio"]) == 2
    assert history["reward"] == [[hex(GWEI)] * 2] * 2
    assert history["baseFeePerGas"][1] == latest["baseFeePerGas"]
    assert len(history["baseFeePerBlobGas"]) == 3
    assert "reward" not in await shared("eth_feeHistory", 2, "latest")
    error = await shared.error("eth_feeHistory", "0x2", "latest", [75, 25])
    assert error.code == -32602


@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        ("eth_getBlockByNumber", [], "missing value for required argument 0"),
        ("eth_getBlockByNumber", ["0x1"], "missing value for required argument 1"),
        ("eth_getBlockByNumber", ["0x1", False, 1], "too many arguments, want at most 2"),
        ("eth_getBlockByNumber", ["1", False], "invalid argument 0: hex string without 0x prefix"),
        (
            "eth_getBlockByNumber",
            ["0x01", False],
            "invalid argument 0: hex number with leading zero digits",
        ),
        ("eth_getBlockByNumber", ["0x", False], 'invalid argument 0: hex string "0x"'),
        ("eth_getBlockByNumber", ["0xzz", False], "invalid argument 0: invalid hex string"),
        (
            "eth_getBlockByNumber",
            ["0x1", "yes"],
            "invalid argument 1: json: cannot unmarshal string into Go value of type bool",
        ),
        (
            "eth_getBlockByHash",
            ["0x" + "ab" * 31, True],
            "invalid argument 0: hex string has length 62, want 64 for common.Hash",
        ),
        (
            "eth_getBlockByHash",
            ["ab" * 32, True],
            "invalid argument 0: json: cannot unmarshal hex string without 0x prefix into Go "
            "value of type common.Hash",
        ),
        (
            "eth_getTransactionByHash",
            [1],
            "invalid argument 0: json: cannot unmarshal non-string into Go value of type "
            "common.Hash",
        ),
        (
            "eth_getBalance",
            ["0x1234", "latest"],
            "invalid argument 0: hex string has length 4, want 40 for common.Address",
        ),
        (
            "eth_getTransactionByBlockNumberAndIndex",
            ["0x1", 0],
            "invalid argument 1: json: cannot unmarshal non-string into Go value of type "
            "hexutil.Uint",
        ),
        (
            "eth_sendRawTransaction",
            ["0x0"],
            "invalid argument 0: json: cannot unmarshal hex string of odd length into Go value "
            "of type hexutil.Bytes",
        ),
    ],
)
async def test_param_errors(shared: Rpc, method: str, params: list[Any], message: str) -> None:
    error = await shared.error(method, *params)
    assert (error.code, error.message) == (-32602, message)


async def test_non_array_params(shared: Rpc) -> None:
    with pytest.raises(Exception, match="non-array args") as caught:
        await shared.raw("eth_blockNumber", b'{"a": 1}')
    assert getattr(caught.value, "code", None) == -32602
    assert await shared.raw("eth_blockNumber", b"null") == "0x2"


async def test_the_pending_block_is_the_next_block_with_no_hash_nonce_or_miner() -> None:
    # A block time (its timer never runs here: no ingestion task) keeps transactions pooled.
    adapter = DevChainAdapter(dev_spec(block_time=3600))
    await adapter.start()
    rpc, wallet = Rpc(adapter), Wallet(adapter)
    latest = await rpc("eth_getBlockByNumber", "latest", False)
    empty = await rpc("eth_getBlockByNumber", "pending", False)
    assert int(empty["number"], 16) == int(latest["number"], 16) + 1
    assert empty["parentHash"] == latest["hash"]
    assert (empty["hash"], empty["nonce"], empty["miner"]) == (None, None, None)
    assert empty["transactions"] == []
    tx_hash = await wallet.send(0, {"to": wallet.address(1), "value": 1})
    pending = await rpc("eth_getBlockByNumber", "pending", True)
    assert [tx["hash"] for tx in pending["transactions"]] == [tx_hash]
    assert pending["transactions"][0]["blockHash"] is None
    assert int(pending["gasUsed"], 16) == 21_000
    assert await rpc("eth_getBlockByNumber", "latest", False) == latest  # nothing was mined
    await rpc("evm_mine")
    mined = await rpc("eth_getBlockByNumber", "latest", False)
    assert mined["number"] == pending["number"]
    assert mined["transactions"] == [tx_hash]
    assert mined["hash"] is not None
