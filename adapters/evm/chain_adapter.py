"""What every EVM chain adapter shares beyond :class:`~adapters.base.ChainAdapter`: its blocks
reported for the broker's head tracking (by number and parent hash) and the EVM subscriptions on
top of them, its methods described for ``rpc.discover`` and its answers' lifetimes for the
response cache."""

from __future__ import annotations

import msgspec
import trio

from adapters.base import ChainAdapter, Lifetime, MethodDocs, SubscriptionFamily
from adapters.evm import cache_rules
from adapters.evm.blocks import BlockHandler, ChainBlock, PendingHandler
from adapters.evm.openrpc import evm_docs
from adapters.evm.subscriptions import EVM_SUBSCRIPTIONS, EVM_SUBSCRIPTIONS_WITH_PENDING


class BlockSource(ChainAdapter):
    """A chain adapter that reports its chain's blocks, numbered and linked by parent hash: the
    broker tracks the head over them (filling gaps and following reorganisations) and serves the
    EVM profile's subscriptions (``eth_subscribe``) and polled filters on top of them.

    Subclass it (or :class:`EvmChainAdapter`) instead of ``ChainAdapter``."""

    async def fetch_block(
        self, chain: str, *, number: int | None = None, block_hash: str | None = None
    ) -> ChainBlock | None:
        """The canonical block at ``number``, or the block with ``block_hash``; None if unknown."""
        return None  # the default knows no block: nothing to wait for (no checkpoint)

    async def fetch_head(self, chain: str) -> ChainBlock | None:
        """The chain's head block now (to backfill from after a restart). Default: the block
        numbered as ``eth_blockNumber`` answers."""
        number = await self.call(chain, "eth_blockNumber", msgspec.Raw(b"[]"))
        if isinstance(number, msgspec.Raw):
            number = msgspec.json.decode(number)
        return await self.fetch_block(chain, number=int(number, 16))

    async def serve_ingestion(
        self,
        chain: str,
        on_block: BlockHandler,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Report new head blocks to ``on_block`` until cancelled. Default: none ever."""
        task_status.started()
        await trio.sleep_forever()

    def follows_pending_transactions(self, chain: str) -> bool:
        """Whether :meth:`serve_pending_transactions` reports ``chain``'s pool (then
        ``eth_subscribe ["newPendingTransactions"]`` is served). Default: no."""
        return False

    async def serve_pending_transactions(
        self,
        chain: str,
        on_transaction: PendingHandler,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Call ``on_transaction`` for each transaction that enters ``chain``'s pool, until
        cancelled (each serving process runs its own). Default: none ever."""
        task_status.started()
        await trio.sleep_forever()

    def subscription_family(self, chain: str) -> SubscriptionFamily | None:
        if self.follows_pending_transactions(chain):
            return EVM_SUBSCRIPTIONS_WITH_PENDING
        return EVM_SUBSCRIPTIONS


class EvmChainAdapter(BlockSource):
    """A chain adapter for ``eip155`` chains: subclass it instead of ``ChainAdapter``."""

    def method_docs(self, chain: str) -> MethodDocs:
        return evm_docs(self.methods(chain))

    def answer_lifetime(self, chain: str, method: str, params: bytes, head: int) -> Lifetime:
        return cache_rules.lifetime(method, params, head)

    def answer_kept(self, chain: str, lifetime: Lifetime, answer: bytes) -> Lifetime:
        return cache_rules.kept(lifetime, answer)
