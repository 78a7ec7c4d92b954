"""A family chain's lease changes hands: two workers' leaders over one Solana dev chain; the one
leading publishes its slots and account changes on the chain's stream; it stops (a deploy: the
lease released) and the standby leads on. A reader of the stream sees every slot once, in order,
across the hand-over: never from both leaders (each would append every slot: a repeat would
show), never with a gap (the chain's slots are made while a leader follows it)."""

from __future__ import annotations

import trio

from adapters.base import NetworkSpec
from adapters.solana import SolanaDevAdapter, dev_chain_id
from adapters.solana._event_codec import SolanaEventCodec
from adapters.solana._events import SlotEvent
from broker.events.chain_events import FamilyEvent, HubEvent
from broker.metrics import Metrics
from broker.redis import RedisClient, RedisEventBus
from broker.rpc.networks import Network
from broker.worker import ChainLeader
from tests.redis.collect import Collector
from tests.redis.test_worker import FAST, start

CHAIN = dev_chain_id({"block_time": 0.05})
CODEC = SolanaEventCodec()


def slots(events: list[HubEvent]) -> list[int]:
    return [
        e.event.slot
        for e in events
        if isinstance(e, FamilyEvent) and isinstance(e.event, SlotEvent)
    ]


def leader_of(network: Network, client: RedisClient, prefix: str, owner: str) -> ChainLeader:
    bus = RedisEventBus(client, prefix=prefix, block_ms=300)
    bus.carry(CHAIN, CODEC)
    return ChainLeader(bus, network.adapter, CHAIN, metrics=Metrics(), timing=FAST, owner=owner)


async def test_the_standby_leads_a_family_chain_on(client: RedisClient, prefix: str) -> None:
    spec = NetworkSpec("solana", CHAIN, "solana-dev", {"block_time": 0.05})
    network = Network("solana", CHAIN, SolanaDevAdapter(spec))
    await network.adapter.start()
    reader = RedisEventBus(client, prefix=prefix, block_ms=300)
    reader.carry(CHAIN, CODEC)
    received: Collector[HubEvent] = Collector()
    first = leader_of(network, client, prefix, "first")
    second = leader_of(network, client, prefix, "second")
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            await nursery.start(reader.serve_reader, [CHAIN], received)
            stop_first = await start(nursery, first)
            await received.wait_until(lambda events: len(slots(events)) >= 5)
            await start(nursery, second)
            assert first.leading
            assert not second.leading
            stop_first.cancel()  # it releases the lease: the standby takes it at its next look
            handed_over = len(slots(received.items))
            await received.wait_until(lambda events: len(slots(events)) >= handed_over + 5)
            assert second.leading
            nursery.cancel_scope.cancel()
    seen = slots(received.items)
    assert seen == list(range(seen[0], seen[0] + len(seen)))
