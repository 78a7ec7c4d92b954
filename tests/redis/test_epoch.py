"""The epoch key on a real redis-server: a data loss (``FLUSHALL``) is noticed once and repaired by
the steps registered; a session read right after the loss gets the session back, not nothing; with
a replica, a session write is on the replica when it returns; a server turned replica (``READONLY``)
makes the client reconnect."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import suppress

import pytest
import trio
import trio.testing
from coredis.exceptions import ReadOnlyError

from broker.redis import (
    EpochWatch,
    RedisClient,
    RedisSessionStore,
    Repair,
    redis_client,
    wait_for_redis,
)
from broker.sessions import Identity, encode_session
from tests.redis.test_backends import DAPP, session
from tests.support.redis_server import RedisServer, redis_command
from tests.support.waiting import eventually


async def test_a_loss_is_noticed_once_and_repaired_by_every_step(
    client: RedisClient, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    epoch = EpochWatch(client, prefix=prefix)
    ran: list[str] = []

    async def sessions() -> Repair:
        ran.append("sessions")
        return Repair({"sessions": 3}, {"sessions not known here": 1})

    async def broken() -> Repair:
        raise RuntimeError("no luck")

    epoch.on_loss("sessions", sessions)
    epoch.on_loss("broken", broken)
    with trio.fail_after(10):
        assert await epoch.check() is False  # the first: writes the epoch
        assert await epoch.check() is False
        await client.delete([epoch.key])  # as a FLUSHALL or an empty restart would
        with caplog.at_level(logging.WARNING):
            assert await epoch.check() is True
        assert await epoch.check() is False  # the new epoch holds
    assert ran == ["sessions"]
    assert epoch.losses == 1
    said = [r.getMessage() for r in caplog.records if "lost its data" in r.getMessage()]
    assert len(said) == 1
    assert "repaired 3 sessions" in said[0]
    assert "1 sessions not known here" in said[0]
    assert "could not repair broken (RuntimeError: no luck)" in said[0]


async def test_another_process_writing_the_new_epoch_is_a_loss_too(
    client: RedisClient, prefix: str
) -> None:
    mine, theirs = EpochWatch(client, prefix=prefix), EpochWatch(client, prefix=prefix)
    with trio.fail_after(10):
        await mine.check()
        await theirs.check()
        await client.delete([mine.key])
        assert await theirs.check() is True  # writes the new epoch first
        assert await mine.check() is True  # finds one it never saw
        assert mine.epoch == theirs.epoch


async def test_a_session_read_right_after_a_loss_gets_it_back(
    client: RedisClient, prefix: str
) -> None:
    epoch = EpochWatch(client, prefix=prefix)
    store = RedisSessionStore(client, prefix=prefix, epoch=epoch)
    known: dict[Identity, bytes | None] = {}
    store.observe(known.__setitem__, known.get)
    granted = session()

    async def write_back() -> Repair:
        for data in known.values():
            if data is not None:
                await store.restore(granted, data)
        return Repair({"sessions": len(known)})

    epoch.on_loss("sessions", write_back)
    with trio.fail_after(10):
        await epoch.check()
        await store.put(granted)
        assert known[DAPP] == encode_session(granted)
        await client.delete([store.key(DAPP), epoch.key])  # the loss, before any periodic check
        assert await store.get(DAPP) == granted
        assert epoch.losses == 1
        # A session that ended for real (deleted, the epoch intact) reads as gone.
        await client.delete([store.key(DAPP)])
        assert await store.get(DAPP) is None
        assert known[DAPP] is None
        assert epoch.losses == 1


async def test_a_read_during_another_callers_repair_gets_the_session_back(
    prefix: str,
) -> None:
    # Redis restarts empty (SHUTDOWN NOSAVE); the periodic check notices first and is repairing
    # when a dapp's read finds its session gone. The read waits for that repair, finds the epoch
    # it wrote (no loss left to notice), and must still read the session it wrote back.
    redis = RedisServer()
    redis.start()
    try:
        client = redis_client(redis.url)
        async with client:
            epoch = EpochWatch(client, prefix=prefix)
            store = RedisSessionStore(client, prefix=prefix, epoch=epoch)
            known: dict[Identity, bytes | None] = {}
            recalled = trio.Event()
            repairing = trio.Event()

            def recall(identity: Identity) -> bytes | None:
                recalled.set()  # the read found nothing and goes to check the epoch
                return known.get(identity)

            store.observe(known.__setitem__, recall)
            granted = session()

            async def held_up() -> Repair:
                repairing.set()
                await recalled.wait()
                await trio.testing.wait_all_tasks_blocked()  # the read waits for this repair
                return Repair()

            async def write_back() -> Repair:
                for data in known.values():
                    if data is not None:
                        await store.restore(granted, data)
                return Repair({"sessions": len(known)})

            epoch.on_loss("held up", held_up)
            epoch.on_loss("sessions", write_back)
            with trio.fail_after(20):
                await wait_for_redis(client, redis.url)
                await epoch.check()
                await store.put(granted)
                process = redis.process
                assert process is not None
                with suppress(OSError):  # it may close without a reply
                    await redis_command(redis.port, "SHUTDOWN", "NOSAVE")
                await trio.to_thread.run_sync(process.wait)
                redis.process = None
                await trio.to_thread.run_sync(redis.start)
                await wait_for_redis(client, redis.url)
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(epoch.check)  # the periodic check, first after restart
                    await repairing.wait()
                    assert await store.get(DAPP) == granted
                assert epoch.losses == 1
                assert known[DAPP] == encode_session(granted)
    finally:
        redis.close()


@pytest.fixture
def primary_and_replica() -> Iterator[tuple[RedisServer, RedisServer]]:
    primary = RedisServer()
    primary.start()
    replica = RedisServer(replica_of=primary.port)
    try:
        replica.start()
        yield primary, replica
    finally:
        replica.close()
        primary.close()


async def test_with_a_replica_a_session_write_is_on_it_when_it_returns(
    primary_and_replica: tuple[RedisServer, RedisServer],
) -> None:
    primary, replica = primary_and_replica
    writer, reader = redis_client(primary.url), redis_client(replica.url)
    async with writer, reader:
        with trio.fail_after(20):
            await wait_for_redis(writer, primary.url)
            await wait_for_redis(reader, replica.url)
            await eventually(_synced(reader), "the replica's first sync", every=0.05)
            epoch = EpochWatch(writer)
            while epoch.replicas == 0:  # the replica connects a moment after it starts
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(epoch.serve)
                    await trio.sleep(0.2)
                    nursery.cancel_scope.cancel()
            store = RedisSessionStore(writer, epoch=epoch)
            waits = await _calls_of(writer, "wait")
            for days in range(1, 21):
                granted = session(days=days)
                await store.put(granted)
                # WAIT 1 returned: the replica has this very write.
                assert await reader.get(store.key(DAPP)) == encode_session(granted)
            assert await _calls_of(writer, "wait") >= waits + 20  # (and one after SCRIPT LOAD)


def _synced(replica: RedisClient) -> Callable[[], Awaitable[bool]]:
    async def synced() -> bool:
        return (await replica.info("replication")).get("master_link_status") == "up"

    return synced


async def _calls_of(client: RedisClient, command: str) -> int:
    """How many times the server ran ``command`` (``INFO commandstats``)."""
    stats = await client.info("commandstats")
    return int(stats.get(f"cmdstat_{command}", {}).get("calls", 0))


async def test_a_server_turned_replica_makes_the_client_reconnect(
    primary_and_replica: tuple[RedisServer, RedisServer],
) -> None:
    _, replica = primary_and_replica
    client = redis_client(replica.url)
    async with client:
        with trio.fail_after(20):
            await wait_for_redis(client, replica.url)
            first = await client.client_id()
            with pytest.raises(ReadOnlyError):
                await client.set("k", "v")
            # A managed failover would promote it; here we do.
            assert (await redis_command(replica.port, "REPLICAOF", "NO", "ONE")).startswith(b"+OK")
            assert await client.set("k", "v")
            assert await client.client_id() != first  # a new connection, not the demoted one's
