"""Chain leases against a real redis-server with a fake chain: one leader at a time, a standby that
takes over, no head skipped or published twice across the hand-over (neither to readers nor on the
stream itself), fencing of a stale leader."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
import trio

from broker.events.chain_events import ChainEvent, HeadEvent, LogsEvent
from broker.metrics import Metrics
from broker.redis import LeaseTiming, RedisClient, RedisEventBus, decode_stream_event, entry_fields
from broker.rpc.networks import Network
from broker.worker import ChainLeader, Worker
from schemas.errors import ConfigError
from tests.redis.collect import Collector
from tests.support.fake_chain import CHAIN, FakeChain
from tests.support.waiting import eventually

FAST = LeaseTiming(ttl=1.0, renew_every=0.25, standby_poll=0.1)


@dataclass
class Setup:
    chain: FakeChain
    bus: RedisEventBus
    received: Collector[ChainEvent] = field(default_factory=Collector)

    def leader(self, owner: str) -> ChainLeader:
        return ChainLeader(self.bus, self.chain, CHAIN, metrics=Metrics(), timing=FAST, owner=owner)

    @property
    def events(self) -> list[ChainEvent]:
        return self.received.items

    def heads(self) -> list[int]:
        return [e.block.number for e in self.events if isinstance(e, HeadEvent)]

    async def until_head(self, number: int) -> None:
        await self.received.wait_until(lambda _: number in self.heads())

    async def until_whole(self, number: int) -> None:
        """Until the canonical block ``number`` arrived whole: its head, then its logs (if any)."""
        block = self.chain.canonical[number]
        last = LogsEvent(CHAIN, block, removed=False) if block.logs else HeadEvent(CHAIN, block)
        await self.received.wait_until(lambda events: last in events)

    async def holder(self) -> bytes | None:
        value = await self.bus.client.get(self.bus.keys(CHAIN).lease)
        return None if value is None else value.split(b"/")[0]

    async def on_stream(self) -> list[ChainEvent]:
        """Every event the stream holds (XRANGE), as the readers decode them."""
        entries = await self.bus.client.xrange(self.bus.keys(CHAIN).events)
        return [decode_stream_event(CHAIN, entry_fields(e.field_values)) for e in entries]


@pytest.fixture
async def setup(client: RedisClient, prefix: str) -> AsyncIterator[Setup]:
    bus = RedisEventBus(client, prefix=prefix, block_ms=300)
    found = Setup(FakeChain(), bus)
    async with trio.open_nursery() as nursery:
        await nursery.start(bus.serve_reader, [CHAIN], found.received)
        yield found
        nursery.cancel_scope.cancel()


async def start(nursery: trio.Nursery, leader: ChainLeader) -> trio.CancelScope:
    """Run ``leader`` in ``nursery``; cancelling the scope returned stops it."""
    scope = trio.CancelScope()

    async def run(*, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        with scope:
            await leader.serve(task_status=task_status)

    await nursery.start(run)
    return scope


def die(leader: ChainLeader, scope: trio.CancelScope) -> None:
    """Stop ``leader`` as a kill -9 would: without releasing its lease."""

    async def vanish() -> None:
        await trio.lowlevel.checkpoint()

    leader.lease.release = vanish  # type: ignore[method-assign]
    scope.cancel()


def assert_canonical_stream(events: list[ChainEvent]) -> None:
    """Every block once: its head, then its logs; each head the child of the one before."""
    previous: HeadEvent | None = None
    for i, event in enumerate(events):
        if isinstance(event, HeadEvent):
            if previous is not None:
                assert event.block.parent_hash == previous.block.hash, f"gap before {i}"
            previous = event
        else:
            assert isinstance(event, LogsEvent)
            assert not event.removed
            assert previous is not None
            assert event.block == previous.block, f"stray logs at {i}"


async def test_one_leader_and_a_standby_that_takes_over_from_a_dead_one(setup: Setup) -> None:
    first, second = setup.leader("a"), setup.leader("b")
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            first_scope = await start(nursery, first)
            await setup.until_head(0)  # the first one leads before the second one starts
            await start(nursery, second)
            assert await setup.holder() == b"a"
            setup.chain.mine(3)
            await setup.until_head(3)
            die(first, first_scope)
            died = trio.current_time()
            setup.chain.mine(3)  # while nobody leads
            await setup.until_head(6)
            took_over = trio.current_time() - died
            assert await setup.holder() == b"b"
            setup.chain.mine(2)
            await setup.until_whole(8)
            nursery.cancel_scope.cancel()
    assert setup.heads() == list(range(9))
    assert_canonical_stream(setup.events)
    assert await setup.on_stream() == setup.events  # the readers dropped no repeat: none was there
    assert took_over < FAST.ttl + FAST.standby_poll + 1.0


async def test_a_leader_that_stops_hands_over_at_once(setup: Setup) -> None:
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            first_scope = await start(nursery, setup.leader("a"))
            await setup.until_head(0)  # the first one leads before the second one starts
            await start(nursery, setup.leader("b"))
            assert await setup.holder() == b"a"
            setup.chain.mine(2)
            await setup.until_head(2)
            first_scope.cancel()  # a graceful stop releases the lease
            stopped = trio.current_time()
            setup.chain.mine(1)
            await setup.until_head(3)
            assert trio.current_time() - stopped < FAST.ttl
            assert await setup.holder() == b"b"
            await setup.until_whole(3)
            nursery.cancel_scope.cancel()
    assert setup.heads() == [0, 1, 2, 3]
    assert_canonical_stream(setup.events)
    assert await setup.on_stream() == setup.events


async def test_a_reorganisation_across_the_hand_over_is_reported(setup: Setup) -> None:
    first = setup.leader("a")
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            first_scope = await start(nursery, first)
            await setup.until_head(0)
            setup.chain.mine(4)
            # Block 4 is published whole (head and logs) before the first leader dies.
            await setup.received.wait_until(
                lambda events: LogsEvent(CHAIN, setup.chain.canonical[4], removed=False) in events
            )
            die(first, first_scope)
            orphaned = setup.chain.canonical[3:5]
            replacements = setup.chain.reorg(2, 3, salt="b")
            await start(nursery, setup.leader("b"))
            await setup.until_whole(5)
            nursery.cancel_scope.cancel()
    assert setup.events[-8:] == [
        LogsEvent(CHAIN, orphaned[0], removed=True),
        LogsEvent(CHAIN, orphaned[1], removed=True),
        *[
            event
            for block in replacements
            for event in (HeadEvent(CHAIN, block), LogsEvent(CHAIN, block, removed=False))
        ],
    ]
    assert setup.heads() == [0, 1, 2, 3, 4, 3, 4, 5]
    assert await setup.on_stream() == setup.events


async def test_a_reorganisation_cut_short_by_the_hand_over_is_not_appended_twice(
    setup: Setup,
) -> None:
    # The first leader appended the chain up to block 4, then, handling a reorganisation, the logs
    # of blocks 3 and 4 as removed and the replacing block 3's head; then it died. The published
    # head (block 4) did not move with those three events: the next leader produces them again.
    bus, chain = setup.bus, setup.chain
    chain.mine(4)
    before = [
        event
        for block in chain.canonical
        for event in (
            (HeadEvent(CHAIN, block), LogsEvent(CHAIN, block, removed=False))
            if block.logs
            else (HeadEvent(CHAIN, block),)
        )
    ]
    orphaned = chain.canonical[3:5]
    replacements = chain.reorg(2, 3, salt="b")
    cut_short = [
        LogsEvent(CHAIN, orphaned[0], removed=True),
        LogsEvent(CHAIN, orphaned[1], removed=True),
        HeadEvent(CHAIN, replacements[0]),
    ]
    for event in [*before, *cut_short]:
        assert await bus.append(event)
    rest = [
        LogsEvent(CHAIN, replacements[0], removed=False),
        *[
            event
            for block in replacements[1:]
            for event in (HeadEvent(CHAIN, block), LogsEvent(CHAIN, block, removed=False))
        ],
    ]
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            await start(nursery, setup.leader("b"))
            await setup.received.wait_until(lambda events: rest[-1] in events)
            nursery.cancel_scope.cancel()
    assert await setup.on_stream() == [*before, *cut_short, *rest]
    assert setup.events == [*before, *cut_short, *rest]


async def test_a_leader_whose_lease_moved_cannot_publish(
    setup: Setup, caplog: pytest.LogCaptureFixture
) -> None:
    lease = setup.bus.keys(CHAIN).lease
    client = setup.bus.client
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            await start(nursery, setup.leader("a"))
            await setup.until_head(0)
            setup.chain.mine(2)
            await setup.until_head(2)
            # As if the leader had paused past its lease and another worker had taken it:
            await client.set(lease, "intruder/1", px=60_000)
            setup.chain.mine(2)
            await eventually(
                lambda: "standing by; intruder/1 leads" in caplog.text, "the leader stands by"
            )
            assert setup.heads() == [0, 1, 2]  # refused by Redis, not published
            await client.delete([lease])  # the intruder is gone: the leader comes back
            await setup.until_whole(4)
            nursery.cancel_scope.cancel()
    assert setup.heads() == [0, 1, 2, 3, 4]
    assert_canonical_stream(setup.events)


class _Counting(FakeChain):
    """A fake chain counting its starts and closes; ``fails``: its start raises."""

    def __init__(self, chain: str, *, fails: bool = False) -> None:
        super().__init__(chain)
        self.fails = fails
        self.starts = 0
        self.closes = 0

    async def start(self) -> None:
        self.starts += 1
        if self.fails:
            raise ConfigError("upstream on the wrong chain")

    async def aclose(self) -> None:
        self.closes += 1


async def test_an_adapter_failing_to_start_closes_those_started_before_it() -> None:
    first, broken, never = _Counting(CHAIN), _Counting("eip155:2", fails=True), _Counting("eip155:3")
    networks = [Network(f"n{i}", a.chain, a) for i, a in enumerate((first, broken, never))]
    worker = Worker(networks, "redis://127.0.0.1:1/0", maxlen=10)  # Redis is never reached
    with pytest.raises(ConfigError, match="wrong chain"):
        await worker.start_adapters()
    assert [(a.starts, a.closes) for a in (first, broken, never)] == [(1, 1), (1, 0), (0, 0)]
