"""One contract, two backends: the session store, the event bus and the session-change bus behave
the same in memory and on Redis (a real redis-server), including changes to one session from two
places at once (on Redis, two clients, as two processes would be)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial

import msgspec
import pytest
import trio

from broker.events.bus import EventBus, MemoryBus
from broker.events.chain_events import ChainEvent, HeadEvent, LogsEvent
from broker.events.session_changes import MemoryChangeBus, SessionChange, SessionChangeBus
from broker.redis import (
    LIST_BATCH,
    RedisChangeBus,
    RedisClient,
    RedisEventBus,
    RedisSessionStore,
    redis_client,
)
from broker.sessions import Identity, MemorySessionStore, Session, SessionStore, encode_session
from schemas.caip import ScopeObject
from tests.redis.collect import Collector
from tests.support.fake_chain import make_block
from tests.support.redis_server import RedisServer

ORIGIN = "https://dapp.example"
DAPP = Identity.of("key-1", ORIGIN)
OTHER_CHAIN = "eip155:8"


def session(identity: Identity = DAPP, *, chain: str = "eip155:7", days: int = 1) -> Session:
    now = datetime.now(UTC).replace(microsecond=0)
    return Session(
        identity=identity,
        scopes={chain: ScopeObject(methods=("eth_call",), notifications=(), accounts=())},
        expiry=now + timedelta(days=days),
        global_config={"theme": "dark"},
        created_at=now,
    )


@dataclass
class Backends:
    store: SessionStore
    events: EventBus
    changes: SessionChangeBus
    #: The same sessions as another process sees them (on Redis: through a client of its own).
    other_store: SessionStore


@pytest.fixture(params=["memory", "redis"])
async def backends(
    request: pytest.FixtureRequest, redis: RedisServer, client: RedisClient, prefix: str
) -> AsyncIterator[Backends]:
    if request.param == "memory":
        store = MemorySessionStore()
        yield Backends(store, MemoryBus(), MemoryChangeBus(), other_store=store)
        return
    other = redis_client(redis.url)
    async with other:
        await other.ping()  # connected, like the first client: neither lags behind the other
        yield Backends(
            RedisSessionStore(client, prefix=prefix),
            RedisEventBus(client, prefix=prefix, maxlen=1000, block_ms=500),
            RedisChangeBus(client, prefix=prefix, block_ms=500),
            other_store=RedisSessionStore(other, prefix=prefix),
        )


def marker(chain: str) -> ChainEvent:
    """An event published after the others on ``chain`` (see :meth:`Collector.before`)."""
    return HeadEvent(chain, make_block(10**6, "0x" + "11" * 32, salt="marker"))


#: A change published after the others (see :meth:`Collector.before`).
MARKER_CHANGE = SessionChange(Identity.of("marker", None), None)


# -- the session store ------------------------------------------------------------------------


async def test_store_put_get_delete(backends: Backends) -> None:
    store = backends.store
    with trio.fail_after(10):
        assert await store.get(DAPP) is None
        granted = session()
        await store.put(granted)
        assert await store.get(DAPP) == granted
        assert await store.delete(DAPP)
        assert await store.get(DAPP) is None
        assert not await store.delete(DAPP)


async def test_store_put_replaces(backends: Backends) -> None:
    store = backends.store
    with trio.fail_after(10):
        await store.put(session())
        newer = session(chain="eip155:8")
        await store.put(newer)
        assert await store.get(DAPP) == newer
        assert await store.list_sessions() == [newer]


@pytest.mark.parametrize(
    "origin", ["-", "https://a.example:8443", 'https://q.example/"*?[x]', "null"]
)
async def test_store_identities_differ_by_key_and_origin(backends: Backends, origin: str) -> None:
    store = backends.store
    with trio.fail_after(10):
        mine = session(Identity.of("key-1", origin))
        theirs = session(Identity.of("key-2", origin), chain="eip155:8")
        await store.put(mine)
        await store.put(theirs)
        assert await store.get(Identity.of("key-1", origin)) == mine
        assert await store.get(Identity.of("key-2", origin)) == theirs
        assert await store.get(Identity.of("key-1", "https://other.example")) is None


async def test_store_lists_every_session(backends: Backends) -> None:
    store = backends.store
    count = LIST_BATCH + 20  # more than one SCAN/MGET batch
    with trio.fail_after(20):
        for i in range(count):
            await store.put(session(Identity.of(f"key-{i}", ORIGIN)))
        listed = await store.list_sessions()
    assert sorted(s.identity.api_key for s in listed) == sorted(f"key-{i}" for i in range(count))


def with_scope(current: Session | None, chain: str) -> tuple[Session | None, int]:
    """``current`` with one more scope (or a new session of that scope); its number of scopes."""
    base = current or session(chain=chain)
    scopes = {
        **base.scopes,
        chain: ScopeObject(methods=("eth_call",), notifications=(), accounts=()),
    }
    return msgspec.structs.replace(base, scopes=scopes), len(scopes)


async def test_store_modify_writes_what_the_change_makes(backends: Backends) -> None:
    store = backends.store
    with trio.fail_after(10):
        assert await store.modify(DAPP, lambda current: (None, current)) is None
        assert await store.get(DAPP) is None
        assert await store.modify(DAPP, lambda current: with_scope(current, "eip155:7")) == 1
        assert await store.modify(DAPP, lambda current: with_scope(current, "eip155:8")) == 2
        stored = await store.get(DAPP)
        assert stored is not None
        assert set(stored.scopes) == {"eip155:7", "eip155:8"}
        assert await store.modify(DAPP, lambda current: (current, "kept")) == "kept"
        assert await store.get(DAPP) == stored

        def refuse(current: Session | None) -> tuple[Session | None, None]:
            raise LookupError("refused")

        with pytest.raises(LookupError):
            await store.modify(DAPP, refuse)
        assert await store.get(DAPP) == stored
        elsewhere = Identity.of("key-2", ORIGIN)
        with pytest.raises(ValueError, match="another identity"):
            await store.modify(elsewhere, lambda current: (stored, None))
        assert await store.get(elsewhere) is None
        assert await store.modify(DAPP, lambda current: (None, current)) == stored
        assert await store.get(DAPP) is None


async def test_store_concurrent_modifications_both_land(backends: Backends) -> None:
    await backends.store.put(session())
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            for store, chain in ((backends.store, "eip155:8"), (backends.other_store, "eip155:9")):
                nursery.start_soon(store.modify, DAPP, partial(with_scope, chain=chain))
    stored = await backends.store.get(DAPP)
    assert stored is not None
    assert set(stored.scopes) == {"eip155:7", "eip155:8", "eip155:9"}


def _set_now(port: int, key: str, value: bytes) -> None:
    """``SET key value`` on a connection of its own, blocking (from inside a change)."""
    data = [b"SET", key.encode(), value]
    command = b"*%d\r\n" % len(data) + b"".join(b"$%d\r\n%s\r\n" % (len(d), d) for d in data)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(command)
        assert sock.recv(64) == b"+OK\r\n"


async def test_redis_store_modify_runs_the_change_again_after_a_conflicting_write(
    redis: RedisServer, client: RedisClient, prefix: str
) -> None:
    store = RedisSessionStore(client, prefix=prefix)
    first, meanwhile = session(), session(chain="eip155:8")
    await store.put(first)
    seen: list[Session | None] = []

    def change(current: Session | None) -> tuple[Session | None, None]:
        seen.append(current)
        if len(seen) == 1:  # another process writes between this read and this write
            _set_now(redis.port, store.key(DAPP), encode_session(meanwhile))
        return with_scope(current, "eip155:9")[0], None

    with trio.fail_after(10):
        await store.modify(DAPP, change)
        stored = await store.get(DAPP)
    assert seen == [first, meanwhile]
    assert stored is not None
    assert set(stored.scopes) == {"eip155:8", "eip155:9"}


# -- the event bus ----------------------------------------------------------------------------


def chain_events(chain: str, count: int, *, salt: str = "") -> list[ChainEvent]:
    """Heads and logs of ``count`` linked blocks, as ingestion publishes them."""
    events: list[ChainEvent] = []
    parent = "0x" + "00" * 32
    for number in range(1, count + 1):
        block = make_block(number, parent, salt=salt + chain)
        events += [HeadEvent(chain, block), LogsEvent(chain, block, removed=False)]
        parent = block.hash
    return events


async def test_events_reach_every_reader_in_order_once(backends: Backends) -> None:
    bus = backends.events
    ours = chain_events("eip155:7", 5)
    theirs = chain_events(OTHER_CHAIN, 2)
    one: Collector[ChainEvent] = Collector()
    both: Collector[ChainEvent] = Collector()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await nursery.start(bus.serve_reader, ["eip155:7"], one)
            await nursery.start(bus.serve_reader, ["eip155:7", OTHER_CHAIN], both)
            markers = [marker("eip155:7"), marker(OTHER_CHAIN)]
            for event in [*ours[:4], *theirs, *ours[4:], *markers]:
                await bus.publish(event)
            assert await one.before(markers[:1]) == ours
            got = await both.before(markers)
            nursery.cancel_scope.cancel()
    assert [e for e in got if e.chain == "eip155:7"] == ours
    assert [e for e in got if e.chain == OTHER_CHAIN] == theirs


async def test_a_reader_gets_what_is_published_after_it_started(backends: Backends) -> None:
    bus = backends.events
    before, after = chain_events("eip155:7", 2)[:2], chain_events("eip155:7", 2, salt="x")[2:]
    received: Collector[ChainEvent] = Collector()
    with trio.fail_after(10):
        for event in before:
            await bus.publish(event)
        async with trio.open_nursery() as nursery:
            await nursery.start(bus.serve_reader, ["eip155:7"], received)
            for event in [*after, marker("eip155:7")]:
                await bus.publish(event)
            assert await received.before([marker("eip155:7")]) == after
            nursery.cancel_scope.cancel()


async def test_a_reorganisation_back_and_forth_is_delivered(backends: Backends) -> None:
    bus = backends.events
    block = make_block(1, "0x" + "00" * 32)
    other = make_block(1, "0x" + "00" * 32, salt="b")
    flips: list[ChainEvent] = [
        HeadEvent("eip155:7", block),
        LogsEvent("eip155:7", block, removed=False),
        LogsEvent("eip155:7", block, removed=True),
        HeadEvent("eip155:7", other),
        LogsEvent("eip155:7", other, removed=False),
        LogsEvent("eip155:7", other, removed=True),
        HeadEvent("eip155:7", block),
        LogsEvent("eip155:7", block, removed=False),
    ]
    received: Collector[ChainEvent] = Collector()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await nursery.start(bus.serve_reader, ["eip155:7"], received)
            for event in [*flips, marker("eip155:7")]:
                await bus.publish(event)
            assert await received.before([marker("eip155:7")]) == flips
            nursery.cancel_scope.cancel()


# -- session changes --------------------------------------------------------------------------


async def test_changes_reach_every_reader(backends: Backends) -> None:
    bus = backends.changes
    changes = [
        SessionChange(DAPP, encode_session(session()), source="proc-a", exclude=7),
        SessionChange(Identity.of("key-2", None), None),
    ]
    readers: list[Collector[SessionChange]] = [Collector(), Collector()]
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            for received in readers:
                await nursery.start(bus.serve_reader, received)
            for change in [*changes, MARKER_CHANGE]:
                await bus.publish(change)
            for received in readers:
                assert await received.before([MARKER_CHANGE]) == changes
            nursery.cancel_scope.cancel()
