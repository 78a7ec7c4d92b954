"""What web processes' subscriptions need a worker to read, shared through a real redis-server:
each process's interests, their union, renewals, and the interests of a process that stopped
renewing lapsing after their ``ttl``; a web process writes a new subscription's interest before
it returns, and keeps its adapter's interests written."""

from __future__ import annotations

import trio
from solders.keypair import Keypair

from adapters.base import NetworkSpec
from adapters.solana import dev_chain_id
from adapters.solana._pubsub import parse
from adapters.solana.upstream import SolanaUpstreamAdapter
from broker.redis import InterestSharing, RedisClient, RedisInterests, SharedInterests
from tests.support.waiting import eventually

CHAIN = dev_chain_id()
A, B, C = (str(Keypair().pubkey()) for _ in range(3))


async def test_the_union_of_every_process_and_their_lapse(client: RedisClient, prefix: str) -> None:
    store = RedisInterests(client, prefix=prefix)
    assert await store.union(CHAIN, b"") == (b"0", frozenset())
    assert await store.union(CHAIN, b"0") is None
    assert await store.write(CHAIN, "web-1", 60, [A, B])
    assert await store.write(CHAIN, "web-2", 0.3, [B, C])
    counter, union = await store.union(CHAIN, b"0") or (b"", frozenset())
    assert union == {A, B, C}
    # The counter starts at Redis's clock, so a reader's counter from before Redis lost its data
    # cannot be taken for the new one.
    assert int(counter) > 1_700_000_000_000
    assert await store.union(CHAIN, counter) is None  # nothing changed: nothing read
    assert await store.write(CHAIN, "web-1", 60, None)  # renewed only
    assert await store.write(CHAIN, "web-1", 60, [A, B])  # the same again: no change
    assert await store.union(CHAIN, counter) is None
    # web-2 renews no more: its interests lapse, and renewing them is refused once they did.

    async def lapsed() -> bool:
        found = await store.union(CHAIN, counter)
        return found is not None and found[1] == {A, B}

    await eventually(lapsed, "web-2's interests lapse")
    assert not await store.write(CHAIN, "web-2", 60, None)
    assert await store.union("solana:another", b"") == (b"0", frozenset())


async def test_the_worker_reads_the_union_again_only_when_it_changed(
    client: RedisClient, prefix: str
) -> None:
    store = RedisInterests(client, prefix=prefix)
    source = SharedInterests(store, CHAIN)
    assert await source() == frozenset()
    await store.write(CHAIN, "web-1", 60, [A])
    assert await source() == {A}
    assert await source() == {A}
    await store.write(CHAIN, "web-2", 60, [B])
    assert await source() == {A, B}


def upstream_adapter() -> SolanaUpstreamAdapter:
    # Never started: only its subscriptions' interests are read.
    upstreams = [{"http": "http://127.0.0.1:9/rpc"}]
    return SolanaUpstreamAdapter(
        NetworkSpec("solana", CHAIN, "solana-upstream", {"upstreams": upstreams})
    )


async def test_a_web_process_writes_an_interest_before_answering_and_keeps_its_own(
    client: RedisClient, prefix: str
) -> None:
    store = RedisInterests(client, prefix=prefix)
    source = SharedInterests(store, CHAIN)
    adapter = upstream_adapter()
    sharing = InterestSharing(store, {CHAIN: adapter}, "web-1", ttl=60)
    index = adapter.family.new_index()
    on_a = parse("accountSubscribe", [A])
    index.add("sub-1", on_a)
    interest = adapter.family.interest(parse("accountSubscribe", [B]))
    assert interest == B
    await sharing.include(CHAIN, interest)  # as the hub does before it answers
    assert await source() == {A, B}
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await sharing.start(nursery)
            # The subscription to B was not attached (say its connection went): the renewal
            # writes what the adapter's indexes watch.
            await eventually(
                lambda: sharing.written.get(CHAIN) == frozenset({A}), "B written no more"
            )
            assert await source() == {A}
            index.add("sub-2", parse("programSubscribe", ["11111111111111111111111111111111"]))

            async def programs() -> bool:
                return await source() == {A, "program"}

            await eventually(programs, "the program subscription shared")
            nursery.cancel_scope.cancel()


async def test_the_worker_keeps_the_last_union_while_redis_has_lost_it(
    client: RedisClient, prefix: str
) -> None:
    store = RedisInterests(client, prefix=prefix)
    source = SharedInterests(store, CHAIN)
    await store.write(CHAIN, "web-1", 60, [A, B])
    assert await source() == {A, B}
    # Redis loses its data (a restart without persistence): the counter and the hashes go. The
    # union read is empty until a web process writes again, which says nothing of what is wanted.
    await client.delete(store.keys(CHAIN))
    assert await store.union(CHAIN, b"") == (b"0", frozenset())
    assert await source() == {A, B}
    assert await source() == {A, B}
    # The web processes write theirs again (their next renewal finds their field gone).
    assert not await store.write(CHAIN, "web-1", 60, None)
    await store.write(CHAIN, "web-1", 60, [B])
    assert await source() == {B}
    # Every process gone and lapsed: an empty union that Redis does say is taken.
    await store.write(CHAIN, "web-1", 0.2, [B])

    async def emptied() -> bool:
        return await source() == frozenset()

    await eventually(emptied, "web-1's interests lapse")
