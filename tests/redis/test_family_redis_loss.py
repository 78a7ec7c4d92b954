"""Redis loses a family chain's stream (``SHUTDOWN NOSAVE`` and a restart) while two workers'
leaders follow one Solana dev chain: the lease is gone with the data, a leader takes it again and
finds the stream empty. It resumes after the last slot it saw (its own appends, or a standby's last
look at the stream), not at the node's present, and a reader of the stream sees every slot once,
in order: none of those made while Redis was down is skipped, none remembered stale is repeated."""

from __future__ import annotations

from contextlib import suppress

import trio

from adapters.base import NetworkSpec
from adapters.solana.upstream import SolanaUpstreamAdapter
from broker.events.chain_events import HubEvent
from broker.metrics import Metrics
from broker.redis import RedisClient, RedisEventBus, redis_client, wait_for_redis
from broker.redis._events import FamilyRepeats
from broker.rpc.networks import Network
from broker.worker import ChainLeader
from tests.adapters.solana_upstream.nodes import CHAIN, FAST, NETWORK, entry
from tests.redis.collect import Collector
from tests.redis.test_family_handover import CODEC, slots
from tests.redis.test_worker import FAST as FAST_LEASE
from tests.redis.test_worker import start
from tests.support.processes import start_scopecast
from tests.support.redis_server import RedisServer, redis_command

PREFIX = "family-loss"


def leader_of(network: Network, client: RedisClient, owner: str) -> ChainLeader:
    bus = RedisEventBus(client, prefix=PREFIX, block_ms=300)
    bus.carry(CHAIN, CODEC)
    return ChainLeader(
        bus, network.adapter, CHAIN, metrics=Metrics(), timing=FAST_LEASE, owner=owner
    )


def test_after_a_restart_what_was_delivered_before_is_dropped_once() -> None:
    repeats = FamilyRepeats(window=3)
    assert all(repeats.admit(entry) for entry in [b"a", b"b", b"a2", b"c", b"d"])
    assert repeats.admit(b"d")  # no restart: the append script refuses repeats then
    repeats.restarted()
    assert repeats.admit(b"a")  # out of the window
    assert [repeats.admit(entry) for entry in [b"c", b"d", b"e", b"d"]] == [
        False,
        False,
        True,
        True,  # matched once already
    ]
    repeats.restarted()  # what was delivered since the last restart is the window now
    assert [repeats.admit(entry) for entry in [b"c", b"e", b"d"]] == [True, False, False]


async def shutdown_nosave_and_restart(redis: RedisServer) -> None:
    process = redis.process
    assert process is not None
    with suppress(OSError):  # it may close without a reply
        await redis_command(redis.port, "SHUTDOWN", "NOSAVE")
    await trio.to_thread.run_sync(process.wait)
    redis.process = None
    await trio.sleep(0.5)  # slots are made meanwhile
    await trio.to_thread.run_sync(redis.start)


async def test_every_slot_once_across_redis_losing_the_stream() -> None:
    redis = RedisServer()  # no persistence: SHUTDOWN NOSAVE loses everything
    redis.start()
    try:
        received: Collector[HubEvent] = Collector()
        clients = [redis_client(redis.url) for _ in range(3)]
        with trio.fail_after(90):
            async with clients[0], clients[1], clients[2], trio.open_nursery() as nursery:
                node = await start_scopecast(nursery, "--block-time", "0.1")
                spec = NetworkSpec(
                    NETWORK, CHAIN, "solana-upstream", {"upstreams": [entry(node)], **FAST}
                )
                network = Network(NETWORK, CHAIN, SolanaUpstreamAdapter(spec))
                await network.adapter.start()
                for client in clients:
                    await wait_for_redis(client, redis.url)
                reader = RedisEventBus(clients[0], prefix=PREFIX, block_ms=300)
                reader.carry(CHAIN, CODEC)
                await nursery.start(reader.serve_reader, [CHAIN], received)
                first = leader_of(network, clients[1], "first")
                second = leader_of(network, clients[2], "second")
                await start(nursery, first)
                await received.wait_until(lambda events: len(slots(events)) >= 5)
                await start(nursery, second)
                await received.wait_until(lambda events: len(slots(events)) >= 10)
                assert first.leading
                assert not second.leading
                await shutdown_nosave_and_restart(redis)
                after = len(slots(received.items))
                await received.wait_until(lambda events: len(slots(events)) >= after + 20)
                assert first.leading or second.leading
                nursery.cancel_scope.cancel()
            await network.adapter.aclose()
    finally:
        redis.close()
    seen = slots(received.items)
    assert seen == list(range(seen[0], seen[0] + len(seen)))
