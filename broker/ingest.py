"""Ingestion: an adapter's reported blocks → the head tracker → the bus.

Runs once per chain: inside ``scopecast serve`` without Redis, in ``scopecast worker`` with it.
"""

from __future__ import annotations

import logging

import trio

from adapters.base import ChainAdapter, ChainBlock
from broker.bus import EventBus
from broker.heads import Advanced, HeadTracker, NeedParent
from broker.metrics import Metrics

log = logging.getLogger(__name__)


class ChainIngestion:
    """Connects one chain's reported blocks into canonical events and publishes them."""

    def __init__(self, adapter: ChainAdapter, chain: str, bus: EventBus, metrics: Metrics) -> None:
        self.adapter = adapter
        self.chain = chain
        self.bus = bus
        self.metrics = metrics
        self.tracker = HeadTracker(chain)

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Follow the adapter until cancelled."""
        await self.adapter.serve_ingestion(self.chain, self.on_block, task_status=task_status)

    async def on_block(self, block: ChainBlock) -> None:
        """Connect a reported head (fetching missing parents) and publish what it changes."""
        segment = [block]
        while True:
            outcome = self.tracker.offer(segment)
            if isinstance(outcome, Advanced):
                break
            parent = await self._fetch_parent(outcome)
            if parent is None:
                # The adapter cannot produce the missing block (pruned, or a node switch): start over
                # at this block rather than stall; say so loudly.
                log.error(
                    "%s: cannot fetch block %s (height %d) to connect head %d; restarting the window",
                    self.chain,
                    outcome.block_hash,
                    outcome.number,
                    block.number,
                )
                self.tracker = HeadTracker(self.chain, window=self.tracker.window)
                segment = [block]
                continue
            segment.insert(0, parent)
        if outcome.reorg_depth:
            self.metrics.reorgs.labels(self.chain).inc()
            self.metrics.reorg_depth.labels(self.chain).observe(outcome.reorg_depth)
            level = logging.ERROR if outcome.deep_reorg else logging.INFO
            log.log(
                level,
                "%s: reorganisation of depth %d%s at height %d",
                self.chain,
                outcome.reorg_depth,
                " (deeper than the window: removed logs may be incomplete)"
                if outcome.deep_reorg
                else "",
                block.number,
            )
        for event in outcome.events:
            await self.bus.publish(event)

    async def _fetch_parent(self, need: NeedParent) -> ChainBlock | None:
        return await self.adapter.fetch_block(self.chain, block_hash=need.block_hash)
