"""The event path: chain events from the bus to the subscription hub, the polled filters and the
response cache's head epochs; and, where this process ingests, each chain's ingestion publishing
to the bus: an EVM adapter's blocks, or a chain family's own events (Solana's) when the family says
how they travel (:meth:`adapters.base.SubscriptionFamily.event_codec`). Those of a family that
cannot travel stay in this process, on a log per chain, followed by every process that serves the
chain (which says so at start-up when it is a web process)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import trio

from adapters.base import Follower
from adapters.evm.blocks import PendingTransaction
from adapters.evm.chain_adapter import BlockSource
from adapters.evm.filters import FilterRegistry
from broker.events.activity import ActivityDemand
from broker.events.bus import EventBus, MemoryLog, Position
from broker.events.chain_events import FamilyEvent, HeadEvent, HubEvent
from broker.events.family_codecs import stays_in_process, travelling_codec
from broker.events.ingest import ChainIngestion
from broker.events.resume import ResumeKeeper
from broker.events.subscriptions import SubscriptionHub
from broker.metrics import Metrics
from broker.rpc.networks import Network, Networks
from broker.rpc.response_cache import HeadEpochs

log = logging.getLogger(__name__)


def chain_families(
    networks: Networks, hub: SubscriptionHub, bus: EventBus, *, window: float, ingest: bool
) -> dict[str, MemoryLog[FamilyEvent]]:
    """Give ``hub`` the subscription family of each network that has one, and ``bus`` the codec
    of each whose adapter reports the family's own events (Solana's) that can travel; a log for
    those that cannot, which stay in this process (said once at start-up where another process
    ingests: ``ingest`` False). The logs, by chain."""
    logs: dict[str, MemoryLog[FamilyEvent]] = {}
    for network in networks:
        family = network.adapter.subscription_family(network.chain)
        if family is not None:
            hub.families[network.chain] = family
        codec = travelling_codec(network)
        if codec is not None:
            bus.carry(network.chain, codec)
        elif stays_in_process(network):
            logs[network.chain] = MemoryLog(window=window)
            if not ingest:
                log.warning(
                    "%s: its family's events cannot travel between processes (the family has no "
                    "event codec): this process follows the chain itself, and its subscriptions "
                    "resume only on this process",
                    network.chain,
                )
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
        activity: ActivityDemand | None = None,
    ) -> None:
        """``ingest``: this process runs each chain's ingestion (else a worker does, with Redis);
        ``activity``: which chains' blocks its ingestion fetches with their transactions."""
        self._networks = networks
        self._bus = bus
        self._hub = hub
        self._filters = filters
        self._epochs = epochs
        self._metrics = metrics
        self._family_logs = family_logs
        self._resume = resume
        self._ingest = ingest
        self._activity = activity
        #: What makes each chain's family events that need the node (the EVM transaction steps).
        self._followers: dict[str, Follower] = {}
        for network in networks:
            family = hub.families.get(network.chain)
            follower = family.follower(network.chain, node_call(network)) if family else None
            if follower is not None:
                self._followers[network.chain] = follower

    def deliver(self, event: HubEvent, position: Position) -> None:
        """One chain event read from the bus at ``position``."""
        follower = self._followers.get(event.chain)
        if isinstance(event, FamilyEvent):
            self._hub.publish(event, position)
            if follower is not None:
                follower.on_event(event.event)  # the family's own event, as its index sees it
            return
        if isinstance(event, HeadEvent):
            self._epochs.on_head(event.chain, event.block.number, event.block.hash)
        elif event.removed:
            self._epochs.on_removed(event.chain)
        self._hub.publish(event, position)
        self._filters.on_event(event)
        if follower is not None:
            follower.on_event(event)

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
        for network in self._networks:
            adapter = network.adapter
            if isinstance(adapter, BlockSource) and adapter.follows_pending_transactions(
                network.chain
            ):
                pending = self._pending_feed(network.chain)
                await nursery.start(adapter.serve_pending_transactions, network.chain, pending)
        nursery.start_soon(self._filters.serve_expiry)
        for chain, follower in self._followers.items():
            nursery.start_soon(follower.serve, self._index_of(chain), self._publisher(chain))
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
                        activity=self._activity.wanted if self._activity else None,
                    )
                    await nursery.start(ingestion.serve)
                elif travelling_codec(network) is not None:
                    publish = self._publishing_feed(network.chain)
                    await nursery.start(network.adapter.serve_events, network.chain, publish)

    def _pending_feed(self, chain: str) -> Callable[[PendingTransaction], None]:
        def on_transaction(transaction: PendingTransaction) -> None:
            # No position: pending transactions are delivered live only, never replayed.
            self._hub.publish(FamilyEvent(chain, transaction))

        return on_transaction

    def _index_of(self, chain: str) -> Callable[[], Any]:
        return lambda: self._hub.index(chain)

    def _publisher(self, chain: str) -> Callable[[object], None]:
        def publish(event: object) -> None:
            self._hub.publish(FamilyEvent(chain, event))

        return publish

    def _publishing_feed(self, chain: str) -> Callable[[object], Awaitable[None]]:
        async def on_event(event: object) -> None:
            await self._bus.publish(FamilyEvent(chain, event))

        return on_event

    def _family_feed(
        self, chain: str, log: MemoryLog[FamilyEvent]
    ) -> Callable[[object], Awaitable[None]]:
        async def on_event(event: object) -> None:
            await trio.lowlevel.checkpoint()  # as MemoryBus.publish (the cost measured there)
            wrapped = FamilyEvent(chain, event)
            self._hub.publish(wrapped, log.append(wrapped))
            follower = self._followers.get(chain)
            if follower is not None:
                follower.on_event(event)
            await self._hub.delivery.delivered()  # the next waits, as ingestion's blocks do

        return on_event


def node_call(network: Network) -> Callable[[str, list[Any]], Awaitable[Any]]:
    """A call to ``network``'s node through its adapter, answered decoded."""

    async def call(method: str, params: list[Any]) -> Any:
        raw = msgspec.Raw(msgspec.json.encode(params))
        answer = await network.adapter.call(network.chain, method, raw)
        return msgspec.json.decode(answer) if isinstance(answer, msgspec.Raw) else answer

    return call
