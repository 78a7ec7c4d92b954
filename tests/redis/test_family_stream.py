"""A chain family's events on its chain's Redis Stream: encoded by the family's codec with its
version, read back equal by every reader and by a resume's range, a repeated append refused; an
entry of an encoding version this release does not read is dropped with one error line (the
reader goes on) and makes a resume's range incomplete rather than wrong. A family whose events
cannot travel is said so at start-up, one line per chain, by a web process and by a worker; a
resume range older than the resume window is refused for family events as for blocks."""

from __future__ import annotations

from typing import ClassVar

import pytest
import trio

from adapters.base import EventCodec, NetworkSpec, SubscriptionFamily
from adapters.solana import SolanaDevAdapter, dev_chain_id
from adapters.solana._event_codec import SolanaEventCodec
from adapters.solana._events import AccountEvent, SlotEvent
from adapters.solana._pubsub import SolanaSubscriptions
from broker.events.bus import MemoryBus
from broker.events.chain_events import FamilyEvent, HubEvent
from broker.events.event_path import chain_families
from broker.events.subscriptions import SubscriptionHub
from broker.metrics import Metrics
from broker.redis import RedisClient, RedisEventBus
from broker.rpc.networks import Network, Networks
from broker.worker import ChainLeaders
from tests.redis.collect import Collector

CHAIN = "solana:test"


class _NextRelease(SolanaEventCodec):
    """The codec as a later release could write it: another version number."""

    version: ClassVar[int] = 2


def bus_for(client: RedisClient, prefix: str, codec: SolanaEventCodec) -> RedisEventBus:
    bus = RedisEventBus(client, prefix=prefix, maxlen=1000, block_ms=300)
    bus.carry(CHAIN, codec)
    return bus


def slot(number: int) -> FamilyEvent:
    return FamilyEvent(CHAIN, SlotEvent(number, number - 1, number - 1))


async def test_family_events_travel_once_in_order(client: RedisClient, prefix: str) -> None:
    bus = bus_for(client, prefix, SolanaEventCodec())
    account = FamilyEvent(CHAIN, AccountEvent("11111111111111111111111111111111", None, 3))
    sent = [slot(1), slot(2), account, slot(3)]
    readers: list[Collector[HubEvent]] = [Collector(), Collector()]
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            started = [await nursery.start(bus.serve_reader, [CHAIN], r) for r in readers]
            for event in sent:
                assert await bus.append(event)
            assert not await bus.append(sent[-1])  # a retried append: refused
            for reader in readers:
                assert await reader.wait_for(len(sent)) == sent
            nursery.cancel_scope.cancel()
        first, last = started[0][CHAIN], readers[0].positions[-1]
        replayed = await bus.read_range(CHAIN, first, last)
        assert replayed == list(zip(readers[0].positions, sent, strict=True))


async def test_an_unknown_encoding_version_is_dropped_said_and_never_replayed(
    client: RedisClient, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    reader_bus = bus_for(client, prefix, SolanaEventCodec())
    later = bus_for(client, prefix, _NextRelease())
    received: Collector[HubEvent] = Collector()
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            started = await nursery.start(reader_bus.serve_reader, [CHAIN], received)
            await reader_bus.append(slot(1))
            await later.append(slot(2))
            await reader_bus.append(slot(3))
            assert await received.wait_for(2) == [slot(1), slot(3)]
            nursery.cancel_scope.cancel()
        unreadable = [r for r in caplog.records if "cannot read" in r.getMessage()]
        assert len(unreadable) == 1
        assert "version 2" in unreadable[0].getMessage()
        assert await reader_bus.read_range(CHAIN, started[CHAIN], received.positions[-1]) is None


class _StayingFamily(SolanaSubscriptions):
    """A family as a plug-in may write it: no event codec (its events cannot leave a process)."""

    def event_codec(self) -> EventCodec | None:
        return None


class _StayingAdapter(SolanaDevAdapter):
    def subscription_family(self, chain: str) -> SubscriptionFamily:
        return _StayingFamily()


async def test_a_family_that_cannot_travel_says_so_once_at_start_up(
    client: RedisClient, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    chain = dev_chain_id()
    staying = _StayingAdapter(NetworkSpec("solana", chain, "solana-dev", {}))
    travelling = SolanaDevAdapter(NetworkSpec("solana", chain, "solana-dev", {}))
    said = []
    for adapter, expected in ((staying, 1), (travelling, 0)):
        networks = Networks([Network("solana", chain, adapter)])
        caplog.clear()
        logs = chain_families(
            networks, SubscriptionHub(Metrics()), MemoryBus(), window=60, ingest=False
        )
        assert (chain in logs) is bool(expected)  # followed in this process, or read from the bus
        bus = RedisEventBus(client, prefix=prefix)
        leaders = ChainLeaders(list(networks), bus, Metrics())
        assert len(leaders.leaders) == 1 - expected
        assert bus.carries(chain) is not bool(expected)
        lines = [r.getMessage() for r in caplog.records if "cannot travel" in r.getMessage()]
        assert len(lines) == 2 * expected  # the web process's line and the worker's
        said.extend(lines)
    assert all(line.startswith(chain) and "\n" not in line for line in said)


async def test_a_resume_range_older_than_the_window_is_refused(
    client: RedisClient, prefix: str
) -> None:
    bus = RedisEventBus(client, prefix=prefix, maxlen=1000, block_ms=300, window=3.0)
    bus.carry(CHAIN, SolanaEventCodec())
    received: Collector[HubEvent] = Collector()
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            await nursery.start(bus.serve_reader, [CHAIN], received)
            for number in (1, 2):
                await bus.append(slot(number))
            await received.wait_for(2)
            nursery.cancel_scope.cancel()
        first, last = received.positions
        assert await bus.read_range(CHAIN, first, last) == [(last, slot(2))]
        await trio.sleep(3.1)  # past the resume window: the cursor names what is too old now
        assert await bus.read_range(CHAIN, first, last) is None
