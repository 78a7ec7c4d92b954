"""The event path: chain events from the bus (or from a chain family's log in this process) to the
subscription hub, the polled filters and the response cache's head epochs; and, where this
process ingests, each chain's ingestion publishing to the bus."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import trio

from adapters.evm.chain_adapter import BlockSource
from adapters.evm.filters import FilterRegistry
from broker.bus import EventBus, MemoryLog, Position
from broker.events import ChainEvent, FamilyEvent, HeadEvent
from broker.ingest import ChainIngestion
from broker.metrics import Metrics
from broker.networks import Networks
from broker.response_cache import HeadEpochs
from broker.resume import ResumeKeeper
from broker.subscriptions import SubscriptionHub


def chain_families(
    networks: Networks, hub: SubscriptionHub, *, window: float
) -> dict[str, MemoryLog[FamilyEvent]]:
    """Give ``hub`` the subscription family of each network that has one, and a log for the
    events of those whose adapter reports the family's own (Solana's), which stay in this process
    (an adapter that reports blocks feeds the EVM profile's through ingestion and the bus); the
    logs, by chain."""
    logs: dict[str, MemoryLog[FamilyEvent]] = {}
    for network in networks:
        family = network.adapter.subscription_family(network.chain)
        if family is not None:
            hub.families[network.chain] = family
            if not isinstance(network.adapter, BlockSource):
                logs[network.chain] = MemoryLog(window=window)
    return logs


class EventPath:
    """Delivers the chain events of every network to this process's subscribers."""

    def __init__(
        self,
        networks: Networks,
        bus: EventBus,
        hub: SubscriptionHub,
        filters: FilterRegistry,
        epochs: HeadEpochs,
        metrics: Metrics,
        *,
        family_logs: dict[str, MemoryLog[FamilyEvent]],
        resume: ResumeKeeper | None,
        ingest: bool,
    ) -> None:
        """``ingest``: this process runs each chain's ingestion (else a worker does, with Redis)."""
        self._networks = networks
        self._bus = bus
        self._hub = hub
        self._filters = filters
        self._epochs = epochs
        self._metrics = metrics
        self._family_logs = family_logs
        self._resume = resume
        self._ingest = ingest

    def deliver(self, event: ChainEvent, position: Position) -> None:
        """One chain event read from the bus at ``position``."""
        if isinstance(event, HeadEvent):
            self._epochs.on_head(event.chain, event.block.number, event.block.hash)
        elif event.removed:
            self._epochs.on_removed(event.chain)
        self._hub.publish(event, position)
        self._filters.on_event(event)

    async def start(self, nursery: trio.Nursery) -> None:
        """Read the bus and the families' events from now on, and ingest, in ``nursery``."""
        await nursery.start(self._hub.serve_delivery)
        chains = [n.chain for n in self._networks if n.chain not in self._family_logs]
        started = await nursery.start(self._bus.serve_reader, chains, self.deliver)
        for chain, position in started.items():
            self._hub.positions.advance(chain, position)
        for network in self._networks:
            log = self._family_logs.get(network.chain)
            if log is not None:
                self._hub.positions.advance(network.chain, log.position)
                feed = self._family_feed(network.chain, log)
                await nursery.start(network.adapter.serve_events, network.chain, feed)
        nursery.start_soon(self._filters.serve_expiry)
        if self._resume is not None:
            nursery.start_soon(self._resume.serve_flusher)
        if self._ingest:
            for network in self._networks:
                if isinstance(network.adapter, BlockSource):
                    ingestion = ChainIngestion(
                        network.adapter,
                        network.chain,
                        self._bus,
                        self._metrics,
                        delivered=self._hub.delivery.delivered,
                    )
                    await nursery.start(ingestion.serve)

    def _family_feed(
        self, chain: str, log: MemoryLog[FamilyEvent]
    ) -> Callable[[object], Awaitable[None]]:
        async def on_event(event: object) -> None:
            wrapped = FamilyEvent(chain, event)
            self._hub.publish(wrapped, log.append(wrapped))
            await self._hub.delivery.delivered()  # the next waits, as ingestion's blocks do

        return on_event
