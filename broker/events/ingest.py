"""Ingestion: an adapter's reported blocks → the head tracker → the bus.

Runs once per chain: inside ``scopecast serve`` without Redis, in ``scopecast worker`` with it.
While some ``activity`` subscription follows the chain (:class:`broker.events.activity.ActivityDemand`),
every block that enters the head tracker is fetched again with its whole transactions
(``eth_getBlockByHash [hash, true]``, through the adapter), so the block's logs event carries them
on the bus and a reorganisation removes them with it; otherwise blocks travel without them.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final

import msgspec
import trio

from adapters.evm.blocks import ChainBlock, with_transactions
from adapters.evm.chain_adapter import BlockSource
from adapters.evm.heads import Advanced, HeadTracker, NeedParent, NeedRange
from broker.events.bus import EventBus
from broker.metrics import Metrics

log = logging.getLogger(__name__)

#: Times a block's transactions are asked for (a node behind may not know the block yet).
_BLOCK_ATTEMPTS: Final = 3
_BLOCK_RETRY_DELAY: Final = 0.25


class ChainIngestion:
    """Connects one chain's reported blocks into canonical events and publishes them."""

    def __init__(
        self,
        adapter: BlockSource,
        chain: str,
        bus: EventBus,
        metrics: Metrics,
        *,
        delivered: Callable[[], Awaitable[None]] | None = None,
        activity: Callable[[str], Awaitable[bool]] | None = None,
    ) -> None:
        """``delivered``: waits until what was published is delivered (this process's fan-out,
        when the bus is in memory), so that the adapter's next block waits for it, as it did when
        a fan-out ran in one step: a fan-out's slices leave room for calls, not for more events.
        ``activity``: whether some ``activity`` subscription follows a chain now (then blocks
        carry their transactions); None: never."""
        self.adapter = adapter
        self._delivered = delivered
        self._activity = activity
        self._whole = False  # this block's: fetch the transactions of the blocks it brings
        self.chain = chain
        self.bus = bus
        self.metrics = metrics
        self.tracker = HeadTracker(chain)
        # The chain's counters exist from the start (at 0): an alert on them needs no absent().
        metrics.reorgs.labels(chain)
        metrics.skipped_heights.labels(chain)
        metrics.watch_ingestion(chain, adapter)

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Follow the adapter until cancelled."""
        await self.adapter.serve_ingestion(self.chain, self.on_block, task_status=task_status)

    async def on_block(self, block: ChainBlock) -> None:
        """Connect a reported head (fetching missing blocks) and publish what it changes.

        A long gap is filled a batch at a time, each batch published as soon as it connects.
        """
        self._whole = self._activity is not None and await self._activity(self.chain)
        block = await self._with_transactions(block)
        segment = [block]
        while True:
            outcome = self.tracker.offer(segment)
            if isinstance(outcome, Advanced):
                await self._publish(outcome, block)
                if segment[-1] is block:
                    return
                if not outcome.events:  # a batch that connects nothing: the node contradicts itself
                    missing = f"a consistent block {segment[0].number}"
                    break
                segment = [block]  # a catch-up batch connected: on to the reported head
            elif isinstance(outcome, NeedRange):
                segment = await self._fetch_range(outcome)
                if not segment:
                    missing = f"blocks {outcome.first}-{outcome.last}"
                    break
            else:
                parent = await self._fetch_parent(outcome)
                if parent is None:
                    missing = f"block {outcome.block_hash} (height {outcome.number})"
                    break
                segment.insert(0, parent)
        # The adapter cannot produce the missing blocks (pruned, or a node switch): start over at
        # this block rather than stall; say so loudly (and count the heights skipped).
        log.error(
            "%s: cannot fetch %s to connect head %d; restarting the window at it",
            self.chain,
            missing,
            block.number,
        )
        await self._publish(self.tracker.restart(block), block)

    async def _publish(self, outcome: Advanced, block: ChainBlock) -> None:
        if outcome.reorg_depth or outcome.deep_reorg:
            self.metrics.reorgs.labels(self.chain).inc()
            self.metrics.reorg_depth.labels(self.chain).observe(outcome.reorg_depth)
            if outcome.deep_reorg:
                log.error(
                    "%s: reorganisation of depth %d (deeper than the window, or its blocks could "
                    "not be fetched: removed logs may be incomplete) at height %s or below "
                    "(reported head %d)",
                    self.chain,
                    outcome.reorg_depth,
                    outcome.fork_height,
                    block.number,
                )
            else:
                log.info(
                    "%s: reorganisation of depth %d at height %s (reported head %d)",
                    self.chain,
                    outcome.reorg_depth,
                    outcome.fork_height,
                    block.number,
                )
        if outcome.skipped:
            self.metrics.skipped_heights.labels(self.chain).inc(len(outcome.skipped))
            log.error(
                "%s: heights %d-%d (%d blocks) skipped: their heads and logs are not delivered "
                "(catching up to head %d)",
                self.chain,
                outcome.skipped[0],
                outcome.skipped[-1],
                len(outcome.skipped),
                block.number,
            )
        await self.bus.publish_all(outcome.events)
        if self._delivered is not None:
            await self._delivered()

    async def _with_transactions(self, block: ChainBlock) -> ChainBlock:
        """``block`` with its transactions, when activity is followed (else, or when the node
        cannot say, as it is: its logs still travel, and the failure is logged)."""
        if not self._whole or block.transactions:
            return block
        params = msgspec.Raw(msgspec.json.encode([block.hash, True]))
        answer: Any = None
        for attempt in range(_BLOCK_ATTEMPTS):
            if attempt:
                # Behind several nodes, the one asked may not have the block yet: ask again.
                await trio.sleep(_BLOCK_RETRY_DELAY)
            try:
                answer = await self.adapter.call(self.chain, "eth_getBlockByHash", params)
            except Exception as exc:  # the node's failure: this block's transactions are missed
                answer = exc
                continue
            if isinstance(answer, msgspec.Raw):
                answer = msgspec.json.decode(answer)
            if answer is not None:
                break
        found = with_transactions(block, answer)
        if found is block:
            log.warning(
                "%s: block %d's transactions could not be fetched for activity subscriptions "
                "(%r); its logs are delivered without them",
                self.chain,
                block.number,
                answer,
            )
        return found

    async def _fetch_parent(self, need: NeedParent) -> ChainBlock | None:
        parent = await self.adapter.fetch_block(self.chain, block_hash=need.block_hash)
        return None if parent is None else await self._with_transactions(parent)

    async def _fetch_range(self, need: NeedRange) -> list[ChainBlock]:
        """The blocks of a catch-up batch, up to the first the adapter cannot produce."""
        batch: list[ChainBlock] = []
        for number in range(need.first, need.last + 1):
            block = await self.adapter.fetch_block(self.chain, number=number)
            if block is None:
                break
            batch.append(await self._with_transactions(block))
        return batch
