"""Redis-only behaviour of the streams and the store: resuming after a dropped connection, fenced
and idempotent appends, repeat suppression, sessions expiring with their expiry."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import coredis
import msgspec
import pytest
import trio
from coredis.retry import NoRetryPolicy

from broker.events.chain_events import ChainEvent, HeadEvent, LogsEvent
from broker.redis import (
    EventDeduper,
    LeaseLost,
    RedisClient,
    RedisEventBus,
    RedisSessionStore,
    redacted,
)
from broker.sessions import Identity
from tests.redis.collect import Collector
from tests.redis.test_backends import chain_events, session
from tests.support.fake_chain import make_block
from tests.support.redis_server import RedisServer, redis_command
from tests.support.waiting import eventually

CHAIN = "eip155:7"
GENESIS = "0x" + "00" * 32


def bus_for(client: RedisClient, prefix: str) -> RedisEventBus:
    return RedisEventBus(client, prefix=prefix, maxlen=1000, block_ms=300)


@pytest.mark.parametrize("retries", [True, False], ids=["coredis-retries", "no-retries"])
async def test_readers_resume_after_their_connection_is_killed(
    redis: RedisServer, client: RedisClient, prefix: str, retries: bool
) -> None:
    if retries:
        await resume_after_kills(redis, bus_for(client, prefix))
        return
    # Without coredis's own retries, the readers' resume path is the one exercised.
    bare: RedisClient = coredis.Redis.from_url(redis.url, retry_policy=NoRetryPolicy())
    async with bare:
        await resume_after_kills(redis, bus_for(bare, prefix))


async def resume_after_kills(redis: RedisServer, bus: RedisEventBus) -> None:
    events = chain_events(CHAIN, 30)
    marker = HeadEvent(CHAIN, make_block(31, GENESIS, salt="marker"))
    readers: list[Collector[ChainEvent]] = [Collector(), Collector()]
    got: list[list[ChainEvent]] = []
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            for received in readers:
                await nursery.start(bus.serve_reader, [CHAIN], received)
            for i, event in enumerate(events):
                await bus.publish(event)
                if i % 7 == 3:
                    assert (await redis_command(redis.port, "CLIENT", "KILL", "TYPE", "normal"))[
                        :1
                    ] == b":"
                # In step with the readers: the next event is published while they reconnect.
                for received in readers:
                    await received.wait_for(i + 1)
            await bus.publish(marker)
            for received in readers:
                got.append(await received.before([marker]))
            nursery.cancel_scope.cancel()
    assert got == [events, events]


async def test_a_reader_that_missed_trimmed_entries_says_so(
    client: RedisClient, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    bus = bus_for(client, prefix)
    keys = bus.keys(CHAIN)
    first, second = chain_events(CHAIN, 1)
    received: Collector[ChainEvent] = Collector()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await nursery.start(bus.serve_reader, [CHAIN], received)
            await bus.append(first)
            await received.wait_for(1)
            # As if 40 entries had been appended and trimmed away before this reader read them:
            await client.incrby(keys.count, 40)
            await bus.append(second)
            await received.wait_for(2)
            nursery.cancel_scope.cancel()
    assert received.items == [first, second]
    assert "40 events were trimmed from the stream" in caplog.text


async def test_the_stream_is_trimmed_to_about_maxlen(client: RedisClient, prefix: str) -> None:
    bus = RedisEventBus(client, prefix=prefix, maxlen=10)
    with trio.fail_after(10):
        for event in chain_events(CHAIN, 150):
            await bus.append(event)
        # Approximate trimming drops whole stream nodes (100 entries each by default).
        assert await client.xlen(bus.keys(CHAIN).events) <= 110


async def test_a_range_read_back_for_a_resume_says_when_it_cannot_be_whole(
    client: RedisClient, prefix: str
) -> None:
    bus = RedisEventBus(client, prefix=prefix, maxlen=10)
    events = chain_events(CHAIN, 150)
    key = bus.keys(CHAIN).events
    with trio.fail_after(10):
        for event in events:
            await bus.append(event)
        entries = await client.xrange(key)
        ids = [entry.identifier.decode() for entry in entries]  # the ~10-110 entries kept
        # Inside what the stream keeps: every entry after the position, in order, once.
        found = await bus.read_range(CHAIN, ids[0], ids[-1])
        assert found is not None
        assert [position for position, _ in found] == ids[1:]
        assert [event for _, event in found] == events[-len(ids) + 1 :]
        assert await bus.read_range(CHAIN, ids[-1], ids[-1]) == []
        # A position the stream no longer holds (trimmed), an unknown or a malformed one: None.
        trimmed = f"{int(ids[0].split('-')[0]) - 1}-0"
        assert await bus.read_range(CHAIN, trimmed, ids[-1]) is None
        assert await bus.read_range(CHAIN, "0-0", ids[-1]) is None  # the stream began earlier
        assert await bus.read_range(CHAIN, "not-a-position", ids[-1]) is None
        # Older than the resume window: None, though Redis still holds the entries. (The window
        # is set from the first entry's age: just shorter, then a minute longer.)
        age = time.time() - int(ids[1].split("-")[0]) / 1000
        bus.window = age - 0.002
        assert await bus.read_range(CHAIN, ids[0], ids[-1]) is None
        bus.window = age + 60
        assert await bus.read_range(CHAIN, ids[0], ids[-1]) == found


async def test_an_append_that_repeats_the_last_one_is_refused(
    client: RedisClient, prefix: str
) -> None:
    bus = bus_for(client, prefix)
    head, logs = chain_events(CHAIN, 1)
    with trio.fail_after(10):
        assert await bus.append(head)
        assert not await bus.append(head)  # a retried append after a lost reply
        assert await bus.append(logs)
        assert await client.xlen(bus.keys(CHAIN).events) == 2


async def test_the_published_head_is_the_last_block_whose_events_are_all_in(
    client: RedisClient, prefix: str
) -> None:
    bus = bus_for(client, prefix)
    with_logs = make_block(1, GENESIS)
    without = make_block(2, with_logs.hash, logs=0)
    with trio.fail_after(10):
        assert await bus.published_head(CHAIN) is None
        await bus.append(HeadEvent(CHAIN, with_logs))
        assert await bus.published_head(CHAIN) is None  # its logs are still to come
        await bus.append(LogsEvent(CHAIN, with_logs, removed=False))
        first = await bus.published_head(CHAIN)
        assert first is not None
        assert first.hash == with_logs.hash
        await bus.append(HeadEvent(CHAIN, without))
        published = await bus.published_head(CHAIN)
    assert published is not None
    assert (published.number, published.hash, published.parent_hash) == (
        2,
        without.hash,
        with_logs.hash,
    )


async def test_an_append_with_a_stale_lease_token_is_fenced_out(
    client: RedisClient, prefix: str
) -> None:
    bus = bus_for(client, prefix)
    head, logs = chain_events(CHAIN, 1)
    lease = bus.keys(CHAIN).lease
    with trio.fail_after(10):
        await client.set(lease, "worker-a/1", px=10_000)
        assert await bus.append(head, lease_token="worker-a/1")
        await client.set(lease, "worker-b/2", px=10_000)  # the lease moved on
        with pytest.raises(LeaseLost):
            await bus.append(logs, lease_token="worker-a/1")
        assert await client.xlen(bus.keys(CHAIN).events) == 1
        assert await bus.published_head(CHAIN) is None


async def test_a_session_key_expires_with_the_session(client: RedisClient, prefix: str) -> None:
    store = RedisSessionStore(client, prefix=prefix)
    lasting = session()
    short = msgspec.structs.replace(
        session(Identity.of("key-2", None)), expiry=datetime.now(UTC) + timedelta(seconds=1)
    )
    with trio.fail_after(10):
        await store.put(lasting)
        await store.put(short)
        ttl_ms = await client.pttl(store.key(lasting.identity))
        expected = (lasting.expiry - datetime.now(UTC)).total_seconds() * 1000
        assert abs(ttl_ms - expected) < 5_000

        async def short_gone() -> bool:
            return await store.get(short.identity) is None

        await eventually(short_gone, "the short session's key expires with it", within=5)
        assert await store.list_sessions() == [lasting]


# -- the readers' safety net (sans-io) ----------------------------------------------------------


def test_the_deduper_drops_repeats_and_lets_reorganisations_through() -> None:
    dedupe = EventDeduper()
    a1 = make_block(1, GENESIS)
    a2 = make_block(2, a1.hash)
    b2 = make_block(2, a1.hash, salt="b")
    sequence: list[tuple[ChainEvent, bool]] = [
        (HeadEvent(CHAIN, a1), True),
        (LogsEvent(CHAIN, a1, removed=False), True),
        (HeadEvent(CHAIN, a1), False),
        (LogsEvent(CHAIN, a1, removed=False), False),
        (HeadEvent(CHAIN, a2), True),
        (LogsEvent(CHAIN, a2, removed=False), True),
        (LogsEvent(CHAIN, a2, removed=True), True),  # reorganised away...
        (HeadEvent(CHAIN, b2), True),
        (LogsEvent(CHAIN, b2, removed=False), True),
        (LogsEvent(CHAIN, b2, removed=True), True),  # ...and back
        (LogsEvent(CHAIN, b2, removed=True), False),
        (HeadEvent(CHAIN, a2), True),
        (LogsEvent(CHAIN, a2, removed=False), True),
        (HeadEvent(CHAIN, a2), False),
    ]
    assert [dedupe.admit(event) for event, _ in sequence] == [admit for _, admit in sequence]


def test_the_deduper_forgets_heads_above_a_lower_new_head() -> None:
    dedupe = EventDeduper()
    a1 = make_block(1, GENESIS)
    a2 = make_block(2, a1.hash)
    a3 = make_block(3, a2.hash)
    b2 = make_block(2, a1.hash, salt="b")
    for block in (a1, a2, a3, b2):
        assert dedupe.admit(HeadEvent(CHAIN, block))
    # back to the first branch: a3 was seen before, but not since b2 replaced height 2
    assert dedupe.admit(HeadEvent(CHAIN, a2))
    assert dedupe.admit(HeadEvent(CHAIN, a3))


def test_the_deduper_is_bounded() -> None:
    dedupe = EventDeduper(window=8)
    parent = GENESIS
    for number in range(1, 100):
        block = make_block(number, parent)
        assert dedupe.admit(HeadEvent(CHAIN, block))
        assert dedupe.admit(LogsEvent(CHAIN, block, removed=False))
        parent = block.hash
    assert len(dedupe._heads) == 8
    assert len(dedupe._logs) == 8


def test_logged_urls_hide_the_password() -> None:
    assert redacted("redis://user:s3cret@host:6379/0") == "redis://user:***@host:6379/0"
    assert redacted("redis://:s3cret@host/0") == "redis://:***@host/0"
    assert redacted("redis://host:6379") == "redis://host:6379"
