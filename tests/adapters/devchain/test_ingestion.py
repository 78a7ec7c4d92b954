"""Reported heads, fetched blocks, reorganisations through snapshot/revert/mine, demo traffic."""

from __future__ import annotations

import msgspec
import trio
import trio.testing

from adapters.devchain import DevChainAdapter
from adapters.devchain.token import TRANSFER_TOPIC, transfer_calldata
from adapters.evm.blocks import ChainBlock
from schemas import eth as schema

from .conftest import CHAIN, Rpc, Wallet, dev_spec

TRANSFER = "0x" + TRANSFER_TOPIC.hex()


class Heads:
    """Collects the blocks an adapter reports."""

    def __init__(self) -> None:
        self.blocks: list[ChainBlock] = []
        self._changed = trio.Event()

    async def on_block(self, block: ChainBlock) -> None:
        self.blocks.append(block)
        self._changed.set()
        self._changed = trio.Event()

    async def wait_for(self, count: int) -> list[ChainBlock]:
        with trio.fail_after(30):
            while len(self.blocks) < count:
                await self._changed.wait()
        return self.blocks


async def test_ingestion_reports_the_head_then_every_new_block(
    adapter: DevChainAdapter, rpc: Rpc, wallet: Wallet
) -> None:
    heads = Heads()
    async with trio.open_nursery() as nursery:
        await nursery.start(adapter.serve_ingestion, CHAIN, heads.on_block)
        await rpc("evm_mine")
        tx_hash = await wallet.send(1, {"to": wallet.address(2)})
        blocks = await heads.wait_for(3)
        nursery.cancel_scope.cancel()
    assert [b.number for b in blocks] == [2, 3, 4]
    assert [b.parent_hash for b in blocks[1:]] == [b.hash for b in blocks[:-1]]
    latest = await rpc("eth_getBlockByNumber", "latest", False)
    assert blocks[-1].hash == latest["hash"]
    assert latest["transactions"] == [tx_hash]
    header = msgspec.json.decode(blocks[-1].header_json, type=schema.Header)
    assert header.hash == latest["hash"]
    assert header.number == "0x4"
    assert header.requests_hash == latest["requestsHash"]
    assert list(msgspec.json.decode(blocks[-1].header_json))[:3] == [
        "parentHash",
        "sha3Uncles",
        "miner",
    ]


async def test_fetch_block(adapter: DevChainAdapter, rpc: Rpc) -> None:
    block = await adapter.fetch_block(CHAIN, number=2)
    assert block is not None
    assert block.number == 2
    assert len(block.logs) == 9
    assert await adapter.fetch_block(CHAIN, block_hash=block.hash) == block
    assert await adapter.fetch_block(CHAIN, block_hash=block.hash.upper().replace("0X", "0x")) == (
        block
    )
    assert await adapter.fetch_block(CHAIN, number=99) is None
    assert await adapter.fetch_block(CHAIN, block_hash="0x" + "00" * 32) is None
    log = block.logs[0]
    assert log.address == adapter.token_address
    assert log.topics[0] == TRANSFER
    decoded = msgspec.json.decode(log.json, type=schema.Log)
    assert decoded.removed is False
    assert decoded.topics == list(log.topics)
    receipts = await rpc("eth_getBlockReceipts", "0x2")
    assert [msgspec.json.decode(lg.json) for lg in block.logs] == [
        entry for receipt in receipts for entry in receipt["logs"]
    ]


async def test_revert_then_mine_is_a_reorganisation(
    adapter: DevChainAdapter, rpc: Rpc, wallet: Wallet
) -> None:
    heads = Heads()
    async with trio.open_nursery() as nursery:
        await nursery.start(adapter.serve_ingestion, CHAIN, heads.on_block)
        snapshot = await rpc("evm_snapshot")
        assert snapshot == "0x1"
        calldata = transfer_calldata(bytes.fromhex(wallet.address(6)[2:]), 3)
        orphan_tx = await wallet.send(5, {"to": adapter.token_address, "data": calldata})
        orphan = await rpc("eth_getBlockByNumber", "latest", False)
        assert await rpc("eth_getLogs", {"fromBlock": "0x3"}) != []
        assert await rpc("evm_revert", snapshot) is True
        assert await rpc("eth_blockNumber") == "0x2"
        assert await rpc("eth_getTransactionByHash", orphan_tx) is None
        remaining = await rpc("eth_getLogs", {"fromBlock": "0x0"})
        assert {log["blockNumber"] for log in remaining} == {"0x1", "0x2"}
        await rpc("evm_mine")
        blocks = await heads.wait_for(3)
        nursery.cancel_scope.cancel()
    replacement = await rpc("eth_getBlockByNumber", "latest", False)
    assert replacement["number"] == orphan["number"] == "0x3"
    assert replacement["hash"] != orphan["hash"]
    assert replacement["parentHash"] == orphan["parentHash"]
    assert [(b.number, b.hash) for b in blocks] == [
        (2, orphan["parentHash"]),
        (3, orphan["hash"]),
        (3, replacement["hash"]),
    ]
    # Logs of the orphaned block are gone from range queries; the orphan stays reachable by hash.
    assert await rpc("eth_getLogs", {"fromBlock": "0x3", "toBlock": "latest"}) == []
    fetched = await adapter.fetch_block(CHAIN, block_hash=orphan["hash"])
    assert fetched is not None
    assert fetched.number == 3
    assert len(fetched.logs) == 1
    assert (await rpc("eth_getBlockByHash", orphan["hash"], False))["hash"] == orphan["hash"]
    assert await rpc("eth_getTransactionReceipt", orphan_tx) is None


async def test_snapshots_are_used_up(rpc: Rpc) -> None:
    first = await rpc("evm_snapshot")
    await rpc("evm_mine")
    second = await rpc("evm_snapshot")
    await rpc("evm_mine")
    assert await rpc("evm_revert", first) is True
    assert await rpc("eth_blockNumber") == "0x2"
    assert await rpc("evm_revert", second) is False  # taken after the one reverted to
    assert await rpc("evm_revert", first) is False
    assert await rpc("evm_revert", "0x99") is False


async def test_block_time_mines_demo_transfers(mock_clock: trio.testing.MockClock) -> None:
    # Virtual time jumps once every task has waited a while: not while a block is being built
    # in a worker thread (that real wait must not count as chain time).
    mock_clock.autojump_threshold = 0.5
    adapter = DevChainAdapter(dev_spec(block_time=2))
    await adapter.start()
    heads = Heads()
    async with trio.open_nursery() as nursery:
        await nursery.start(adapter.serve_ingestion, CHAIN, heads.on_block)
        # A second ingestion task shares the same timer.
        other = Heads()
        await nursery.start(adapter.serve_ingestion, CHAIN, other.on_block)
        started = trio.current_time()
        blocks = await heads.wait_for(4)
        elapsed = trio.current_time() - started
        nursery.cancel_scope.cancel()
    assert [b.number for b in blocks[:4]] == [2, 3, 4, 5]
    assert 6 <= elapsed < 8  # one block every 2 s of (virtual) time
    for block in blocks[1:4]:
        assert len(block.logs) == 3
        assert all(log.topics[0] == TRANSFER for log in block.logs)
        assert all(log.address == adapter.token_address for log in block.logs)
    assert [b.hash for b in other.blocks[:4]] == [b.hash for b in blocks[:4]]
