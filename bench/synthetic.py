"""Chain adapters for benchmarking the broker without the EVM's cost.

:class:`SyntheticChainAdapter` reports blocks only when asked (``burst``): a run of blocks, each the
child of the last, with a :data:`bench.payloads.HEAD_SIZE`-byte header and, for a ``logs`` burst,
one ERC-20 ``Transfer`` log (``logs:B``: B of them, the burst workload's busy token). They go through the broker's real event path (ingestion, head tracker,
bus, hub), so the figure measures the broker and not the EVM's mining.

:class:`ConstantChainAdapter` answers every call with the same pre-encoded JSON: served by the real
broker, it is the ceiling of the HTTP stack (envelope, routing, dispatch, reply) with no chain work.

Both are plugged in the way third-party adapters are (an entry point, see :func:`register`), so the
broker is built by ``build_broker`` exactly as ``scopecast serve`` builds it.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Final

import msgspec
import trio

from adapters.base import ChainAdapter, NetworkSpec
from adapters.evm.blocks import BlockHandler, ChainBlock, LogRecord
from adapters.evm.chain_adapter import BlockSource
from bench import payloads

SYNTHETIC: Final = "bench-synthetic"
CONSTANT: Final = "bench-constant"


class SyntheticChainAdapter(BlockSource):
    """A chain whose blocks appear on demand, back to back."""

    name: ClassVar[str] = SYNTHETIC
    #: The instance built by the broker (the bench server's control task needs it).
    latest: ClassVar[SyntheticChainAdapter | None] = None

    @classmethod
    def from_spec(cls, spec: NetworkSpec) -> SyntheticChainAdapter:
        return cls(spec)

    def __init__(self, spec: NetworkSpec) -> None:
        self.chain = spec.chain
        self.number = payloads.FIRST_BLOCK - 1
        self.blocks: dict[str, ChainBlock] = {}
        self._requests, self._pending = trio.open_memory_channel[
            tuple[str, int, trio.MemorySendChannel[list[float]]]
        ](1)
        SyntheticChainAdapter.latest = self

    def chains(self) -> Sequence[str]:
        return [self.chain]

    def methods(self, chain: str) -> frozenset[str]:
        return frozenset({"eth_chainId", "eth_blockNumber"})

    async def call(self, chain: str, method: str, params: msgspec.Raw) -> Any:
        if method == "eth_chainId":
            return hex(int(self.chain.split(":")[1]))
        return hex(self.number)

    async def fetch_block(
        self, chain: str, *, number: int | None = None, block_hash: str | None = None
    ) -> ChainBlock | None:
        if block_hash is not None:
            return self.blocks.get(block_hash)
        return None

    def _next_block(self, kind: str) -> ChainBlock:
        self.number += 1
        number = self.number
        logs: tuple[LogRecord, ...] = ()
        if kind.startswith("logs"):
            # "logs": one Transfer log; "logs:B": B of them, as one transaction of a busy token
            count = int(kind.partition(":")[2] or 1)
            logs = tuple(
                LogRecord(payloads.TOKEN, payloads.log_topics(), payloads.log_json(number, i))
                for i in range(count)
            )
        block = ChainBlock(
            number=number,
            hash=payloads.block_hash(number),
            parent_hash=payloads.block_hash(number - 1),
            header_json=payloads.head_json(number),
            logs=logs,
        )
        self.blocks[block.hash] = block
        if len(self.blocks) > 256:
            del self.blocks[next(iter(self.blocks))]
        return block

    async def burst(self, kind: str, count: int) -> list[float]:
        """Have the ingestion task report ``count`` blocks back to back; their publish times."""
        send, receive = trio.open_memory_channel[list[float]](1)
        await self._requests.send((kind, count, send))
        return await receive.receive()

    async def serve_ingestion(
        self,
        chain: str,
        on_block: BlockHandler,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        task_status.started()
        async for kind, count, reply in self._pending:
            blocks = [self._next_block(kind) for _ in range(count)]
            published: list[float] = []
            for block in blocks:
                published.append(time.monotonic())
                await on_block(block)
            await reply.send(published)


_CONSTANT_METHODS: Final = frozenset({"eth_getBlockByNumber", "eth_chainId"})


class ConstantChainAdapter(ChainAdapter):
    """Answers every method it serves with one pre-encoded reply."""

    name: ClassVar[str] = CONSTANT
    reply: ClassVar[bytes] = b"null"

    @classmethod
    def from_spec(cls, spec: NetworkSpec) -> ConstantChainAdapter:
        return cls(spec)

    def __init__(self, spec: NetworkSpec) -> None:
        self.chain = spec.chain
        self._raw = msgspec.Raw(ConstantChainAdapter.reply)

    def chains(self) -> Sequence[str]:
        return [self.chain]

    def methods(self, chain: str) -> frozenset[str]:
        return _CONSTANT_METHODS

    async def call(self, chain: str, method: str, params: msgspec.Raw) -> Any:
        return self._raw

    def call_now(self, chain: str, method: str, params: msgspec.Raw) -> Any:
        return self._raw  # nothing to wait for: the broker may answer inline


def register() -> None:
    """Make the bench adapters loadable by name, as an installed plug-in package would.

    Writes a ``.dist-info`` with an ``entry_points.txt`` declaring them in the adapters group to a
    temporary directory and puts it on ``sys.path``, where :mod:`importlib.metadata` finds it.
    """
    root = Path(tempfile.mkdtemp(prefix="scopecast-bench-"))
    info = root / "scopecast_bench_adapters-0.0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: scopecast-bench-adapters\nVersion: 0.0.0\n"
    )
    (info / "entry_points.txt").write_text(
        "[scopecast.adapters]\n"
        f"{SYNTHETIC} = bench.synthetic:SyntheticChainAdapter\n"
        f"{CONSTANT} = bench.synthetic:ConstantChainAdapter\n"
    )
    sys.path.append(str(root))
