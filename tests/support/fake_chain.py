"""A chain adapter made of blocks the test mines and reorganises by hand (a fake, no node).

Its ingestion reports only the newest head whenever the canonical chain changes (so gaps happen, as
with a real node) and :meth:`FakeChain.fetch_block` answers what the head tracker asks for: any
block ever mined by hash (orphaned ones too, as a node keeps side blocks for a while), canonical
ones by number. A block the test makes by other means is unknown to it, like a block a node pruned.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import msgspec
import trio

from adapters.base import NetworkSpec
from adapters.evm.blocks import BlockHandler, ChainBlock, LogRecord
from adapters.evm.chain_adapter import BlockSource

CHAIN = "eip155:7"
TOKEN = "0x" + "ab" * 20
TRANSFER = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"


def _hash(*parts: object) -> str:
    return "0x" + hashlib.sha256(repr(parts).encode()).hexdigest()


def make_block(number: int, parent_hash: str, *, salt: str = "", logs: int = 1) -> ChainBlock:
    """A block on top of ``parent_hash`` with ``logs`` Transfer logs of :data:`TOKEN`."""
    block_hash = _hash(number, parent_hash, salt)
    records = tuple(
        LogRecord(
            TOKEN,
            (TRANSFER,),
            msgspec.json.encode(
                {"blockHash": block_hash, "blockNumber": hex(number), "logIndex": hex(i)}
            ),
        )
        for i in range(logs)
    )
    header = msgspec.json.encode(
        {"number": hex(number), "hash": block_hash, "parentHash": parent_hash}
    )
    return ChainBlock(number, block_hash, parent_hash, header, records)


class FakeChain(BlockSource):
    """One chain, starting at a genesis block without logs; :meth:`mine` and :meth:`reorg` it."""

    name = "fake"

    @classmethod
    def from_spec(cls, spec: NetworkSpec) -> FakeChain:
        return cls(spec.chain)

    def __init__(self, chain: str = CHAIN) -> None:
        self.chain = chain
        self.canonical = [make_block(0, "0x" + "00" * 32, logs=0)]
        self.known = {self.canonical[0].hash: self.canonical[0]}
        self._changed = trio.Event()

    def chains(self) -> Sequence[str]:
        return [self.chain]

    def methods(self, chain: str) -> frozenset[str]:
        return frozenset({"eth_blockNumber"})

    async def call(self, chain: str, method: str, params: msgspec.Raw) -> Any:
        await trio.lowlevel.checkpoint()
        return hex(self.canonical[-1].number)

    async def fetch_block(
        self, chain: str, *, number: int | None = None, block_hash: str | None = None
    ) -> ChainBlock | None:
        await trio.lowlevel.checkpoint()
        if block_hash is not None:
            return self.known.get(block_hash)
        assert number is not None
        return self.canonical[number] if number < len(self.canonical) else None

    async def fetch_head(self, chain: str) -> ChainBlock | None:
        await trio.lowlevel.checkpoint()
        return self.canonical[-1]

    def mine(self, count: int = 1, *, salt: str = "") -> list[ChainBlock]:
        """Append ``count`` blocks (one log each) to the canonical chain."""
        mined = []
        for _ in range(count):
            head = self.canonical[-1]
            block = make_block(head.number + 1, head.hash, salt=salt)
            self.canonical.append(block)
            self.known[block.hash] = block
            mined.append(block)
        self._notify()
        return mined

    def reorg(self, depth: int, length: int, *, salt: str) -> list[ChainBlock]:
        """Replace the newest ``depth`` blocks with ``length`` new ones."""
        del self.canonical[-depth:]
        return self.mine(length, salt=salt)

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def serve_ingestion(
        self,
        chain: str,
        on_block: BlockHandler,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        task_status.started()
        reported: str | None = None
        while True:
            head = self.canonical[-1]
            if head.hash != reported:
                reported = head.hash
                await on_block(head)
            else:
                await self._changed.wait()
