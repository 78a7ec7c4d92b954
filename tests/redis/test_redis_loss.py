"""Redis losing its data and failing over, with real processes: a dev chain node mining every 0.2 s
(the upstream), two workers, two web processes, and dapps with a tab on each web process.

- ``SHUTDOWN NOSAVE`` and a restart (a Redis that keeps nothing on disk): the processes notice the
  loss and write back what they know; every dapp's session still answers ``wallet_getSession``
  with its scopes on both tabs (on the tab that made it, asked the moment Redis is back, too),
  invokes work, every head arrives once and in order (those mined while Redis was down too), and
  a tab that drops after the repair resumes on the other process with nothing lost or repeated.
- A Sentinel fleet (a primary, a replica, three sentinels) and ``kill -9`` of the primary: the
  replica is promoted, the processes follow it, and the same holds.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import trio

from tests.redis.dapp_tabs import DEV, Tab, gaps_and_repeats
from tests.redis.test_deployment import Upstream, start_upstream
from tests.redis.worker_process import WorkerProcess
from tests.support.processes import ScopecastProcess
from tests.support.redis_server import (
    RedisServer,
    SentinelFleet,
    primary_port,
    redis_command,
    sentinel_fleet,
)
from tests.support.waiting import eventually

DAPPS = 30
#: Heads every tab holds before the fault, and after it (past the node's head when it ended).
HEADS_AROUND = 4


@dataclass
class Fleet:
    upstream: Upstream
    workers: list[WorkerProcess]
    webs: list[ScopecastProcess]

    async def head(self) -> int:
        assert self.upstream.node is not None
        return int(await self.upstream.node.result("eth_blockNumber"), 16)


@asynccontextmanager
async def fleet(tmp_path: Path, redis_url: str) -> AsyncIterator[Fleet]:
    async with trio.open_nursery() as nursery:
        with trio.fail_after(60):
            upstream = await start_upstream(nursery, tmp_path, "0.2")
            first = await upstream.start_worker(redis_url)
            await first.wait_for("leading from block")
            second = await upstream.start_worker(redis_url)
            await second.wait_for("standing by")
            webs = [upstream.web(redis_url) for _ in range(2)]
            async with trio.open_nursery() as starting:
                for web in webs:
                    starting.start_soon(web.start)
        yield Fleet(upstream, [first, second], webs)
        nursery.cancel_scope.cancel()


@dataclass
class Outcome:
    #: Each dapp's web A tab (resumed on web B after the fault) and its web B tab.
    resumed: list[tuple[Tab, Tab]]
    #: A dapp that closed its only tab before the fault, back after it with its last cursor.
    gone: Tab


async def run_dapps(f: Fleet, fault: Callable[[], Awaitable[None]]) -> Outcome:
    """Open the dapps' tabs (the session made on web A, a tab on web B too), let them follow
    heads, inject ``fault``, check sessions and invokes after it, then drop each web A tab and
    resume it on web B. Also a dapp that left before the fault comes back with its cursor."""
    ports = [web.port for web in f.webs]
    assert None not in ports
    port_a, port_b = ports[0] or 0, ports[1] or 0
    tabs = [
        (Tab(port_a, f"https://dapp{i}.example"), Tab(port_b, f"https://dapp{i}.example"))
        for i in range(DAPPS)
    ]
    outcome = Outcome([], Tab(port_a, "https://gone.example"))
    try:
        await _follow_through(f, fault, tabs, outcome, port_b)
    finally:
        for tab in [t for pair in tabs + outcome.resumed for t in pair] + [outcome.gone]:
            tab.close()
    return outcome


async def _follow_through(
    f: Fleet,
    fault: Callable[[], Awaitable[None]],
    tabs: list[tuple[Tab, Tab]],
    outcome: Outcome,
    port_b: int,
) -> None:
    resumed = outcome.resumed
    async with trio.open_nursery() as nursery:
        gone = outcome.gone
        await gone.open(nursery)
        await gone.create_and_subscribe()
        await eventually(lambda: gone.cursor, "a head for the dapp that leaves")
        gone.close()

        async def open_dapp(a: Tab, b: Tab) -> None:
            await a.open(nursery)
            await a.create_and_subscribe()
            await b.open(nursery)  # learns the session by itself (it asks nothing before)

        async with trio.open_nursery() as opening:
            for a, b in tabs:
                opening.start_soon(open_dapp, a, b)
        await eventually(
            lambda: all(len(a.heads) >= HEADS_AROUND for a, _ in tabs), "heads before the fault"
        )
        await fault()
        # Right away, before any repair can be counted on: a dapp's session still answers on the
        # connection that made it (its process holds it), never empty.
        right_after: dict[str, list[str]] = {}

        async def scopes_now(tab: Tab) -> None:
            right_after[tab.origin] = list(await tab.session_scopes())

        async with trio.open_nursery() as asking:
            for a, _ in tabs:
                asking.start_soon(scopes_now, a)
        assert right_after == {a.origin: [DEV] for a, _ in tabs}
        after = await f.head() + HEADS_AROUND
        await eventually(
            lambda: all(a.heads and a.heads[-1][0] >= after for a, _ in tabs),
            "every tab is past the fault",
        )
        # Every session answers on both tabs with its scopes, and invokes work.
        for a, b in tabs:
            assert list(await a.session_scopes()) == [DEV], a.origin
            assert list(await b.session_scopes()) == [DEV], b.origin
            invoked = await a.result(
                "wallet_invokeMethod",
                {"scope": DEV, "request": {"method": "eth_blockNumber", "params": []}},
            )
            number = invoked["result"]["result"]  # SPEC's wrapping of the node's answer
            assert int(number, 16) >= after - HEADS_AROUND, invoked
        for a, _ in tabs:
            assert a.session_changes == [], (a.origin, a.session_changes)
        # Each web A tab drops now and resumes on web B with its last cursor.
        for a, b in tabs:
            assert a.cursor is not None
            a.close()
            again = Tab(port_b, a.origin, heads=list(a.heads))
            await again.open(nursery, resume=a.cursor)
            resumed.append((again, b))
        more = await f.head() + HEADS_AROUND
        await eventually(
            lambda: all(r.resumed and r.heads[-1][0] >= more for r, _ in resumed),
            "every resumed tab follows again",
        )
        back = Tab(port_b, gone.origin)
        await back.open(nursery, resume=gone.cursor)
        await eventually(lambda: back.resumed, "the dapp that left is told how its resume went")
        outcome.gone = back
        nursery.cancel_scope.cancel()


async def session_of(tab: Tab) -> list[str]:
    """The scopes ``tab``'s dapp has now, asked on a connection of its own."""
    async with trio.open_nursery() as nursery:
        asking = Tab(tab.port, tab.origin)
        await asking.open(nursery)
        try:
            return list(await asking.session_scopes())
        finally:
            asking.close()
            nursery.cancel_scope.cancel()


def check_heads(resumed: list[tuple[Tab, Tab]]) -> None:
    for tab, _ in resumed:
        assert tab.resumed[0][1] is True, (tab.origin, tab.resumed)
        missing, repeats = gaps_and_repeats(tab.heads)
        assert (missing, repeats) == ([], []), tab.origin
        numbers = [n for n, _ in tab.heads]
        assert numbers == sorted(numbers), tab.origin


async def test_sessions_and_heads_survive_redis_losing_its_data(tmp_path: Path) -> None:
    redis = RedisServer()  # no persistence: SHUTDOWN NOSAVE loses everything
    redis.start()
    try:
        async with fleet(tmp_path, redis.url) as f:

            async def shutdown_nosave_and_restart() -> None:
                process = redis.process
                assert process is not None
                with suppress(OSError):  # it may close without a reply
                    await redis_command(redis.port, "SHUTDOWN", "NOSAVE")
                await trio.to_thread.run_sync(process.wait)
                redis.process = None
                await trio.sleep(0.5)  # blocks are mined meanwhile
                await trio.to_thread.run_sync(redis.start)

            with trio.fail_after(90):
                outcome = await run_dapps(f, shutdown_nosave_and_restart)
                # What nobody could write back is told: a dapp connected nowhere during the loss
                # resumes incomplete, and has no session any more.
                assert outcome.gone.resumed == [(0, False)]
                assert await session_of(outcome.gone) == []
            check_heads(outcome.resumed)
            for web in f.webs:
                said = [line for line in web.output if "Redis lost its data (epoch" in line]
                assert len(said) == 1, web.output_tail()
                print(said[0])
            assert any("resuming after block" in line for w in f.workers for line in w.lines), (
                "no worker resumed from the block it published last"
            )
    finally:
        redis.close()


async def test_kill_9_of_the_primary_fails_over_to_the_replica(tmp_path: Path) -> None:
    with sentinel_fleet() as sentinels, trio.fail_after(120):
        async with fleet(tmp_path, sentinels.url) as f:
            promoted_after: list[float] = []

            async def kill_primary() -> None:
                killed = time.monotonic()
                sentinels.primary.kill()
                await eventually(
                    lambda: _promoted(sentinels), "the sentinels promote the replica", every=0.1
                )
                promoted_after.append(time.monotonic() - killed)

            outcome = await run_dapps(f, kill_primary)
            check_heads(outcome.resumed)
            # Nothing was lost: the dapp that had left resumes whole, with its session.
            assert outcome.gone.resumed[0][1] is True
            assert await session_of(outcome.gone) == [DEV]
            print(f"replica promoted {promoted_after[0]:.1f} s after the kill -9")
            for web in f.webs:
                assert not any("Redis lost its data" in line for line in web.output)


async def _promoted(sentinels: SentinelFleet) -> bool:
    with suppress(OSError, RuntimeError, ValueError):
        return await primary_port(sentinels) == sentinels.replica.port
    return False
