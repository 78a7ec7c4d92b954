"""Faults, each repeated at random moments while session clients count every block.

One deployment serves every fault; each fault gets clients of its own (half on each web process).
Every fault comes with a reorg 5 blocks deep (``evm_snapshot``, five blocks, ``evm_revert``)
reverted while the fault is in effect or as it ends; the reorg also runs alone.

A run: a random pause, the fault (and its undoing: a restart, SIGCONT), then the wait until every
client holds a head at least as high as the upstream's head when the fault ended; then the
upstream's chain is read and each client's heads since the run began are judged
(:func:`soak.clients.judge`), and what the fault broke is put back (a killed web process or worker
is started again) so the next run starts from a whole deployment.

Time to recover: from the end of the fault and its reorg (the ``evm_revert``) until the client
receives a head at least as high as the upstream's head at that moment.
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import trio

from bench.loadgen import percentile
from soak.clients import Client, Head, connect_all, judge, until
from soak.deploy import Deployment, fd_count
from soak.settings import Settings
from tests.support.redis_server import RedisServer, redis_command

Inject = Callable[[Deployment, Settings], Awaitable[Callable[[], Awaitable[None]] | None]]
"""Breaks something and undoes it when the fault is over; returns what puts the deployment back
together after the run (or None)."""

Revert = Callable[[], Awaitable[None]]
"""Ends the reorg under way: the upstream drops its last five blocks and mines a new branch."""


async def _reorg_begun(d: Deployment) -> Revert:
    """``evm_snapshot``, then five more blocks; the returned call reverts to the snapshot, so the
    next blocks replace those five (a reorg 5 blocks deep)."""
    snapshot = await d.node.result("evm_snapshot")
    start = await d.head()
    while await d.head() < start + 5:  # noqa: ASYNC110 - the node has no event to wait on
        await trio.sleep(0.1)

    async def revert() -> None:
        assert await d.node.result("evm_revert", [snapshot]) is True

    return revert


# Each fault but the reorg alone comes with a reorg 5 blocks deep: the five blocks are mined
# before the fault, and the revert lands while the fault is in effect or as it ends.


async def kill_leading_worker(d: Deployment, s: Settings) -> Callable[[], Awaitable[None]]:
    revert = await _reorg_begun(d)
    leader = await d.leader()
    await leader.kill()
    d.workers.remove(leader)
    await revert()  # before the standby has taken the lead

    async def repair() -> None:
        await d.add_worker()  # a new standby

    return repair


async def kill_web(d: Deployment, s: Settings) -> Callable[[], Awaitable[None]]:
    revert = await _reorg_begun(d)
    web = max(d.webs, key=lambda w: fd_count(w.pid) if w.pid else 0)  # the one with more clients
    await web.kill()
    await revert()  # while its clients resume on the other one
    return web.start  # on the same port


async def restart_redis(d: Deployment, s: Settings) -> None:
    revert = await _reorg_begun(d)
    await d.stop_redis()
    await revert()  # while Redis is down
    await d.start_redis()


async def flush_redis(d: Deployment, s: Settings) -> None:
    """Redis loses its data while every process stays connected (only the epoch tells)."""
    revert = await _reorg_begun(d)
    await d.redis_command("FLUSHALL")
    await revert()  # as the processes repair


async def kill_redis_primary(d: Deployment, s: Settings) -> Callable[[], Awaitable[None]]:
    """``kill -9`` of the Sentinel fleet's primary: the sentinels promote the replica."""
    revert = await _reorg_begun(d)
    primary = await d.primary()
    primary.kill()
    await revert()  # while the sentinels fail over

    async def repair() -> None:
        # Started again (empty: no persistence), it rejoins as a replica of the new primary once
        # the sentinels tell it to; the next run kills whichever is primary then.
        await until_promoted(d, primary)
        await trio.to_thread.run_sync(primary.start)
        await until_replicating(primary)

    return repair


async def until_promoted(d: Deployment, killed: RedisServer) -> None:
    while (await d.primary()) is killed:  # noqa: ASYNC110 - the sentinels have no event to wait on
        await trio.sleep(0.1)


async def until_replicating(server: RedisServer) -> None:
    while b"master_link_status:up" not in await redis_command(  # noqa: ASYNC110
        server.port, "INFO", "replication"
    ):
        await trio.sleep(0.1)


async def kill_redis_connections(d: Deployment, s: Settings) -> None:
    revert = await _reorg_begun(d)
    await d.redis_command("CLIENT", "KILL", "TYPE", "normal")
    await revert()  # as the broker reconnects


async def restart_upstream(d: Deployment, s: Settings) -> None:
    await d.node.kill()
    await d.node.start()  # the same port and state dir: the same chain, from its last head
    # evm_snapshot ids do not outlive the node: the reorg is of five blocks the restarted node
    # mines, reverted as soon as they are there (while the broker may still be catching up).
    revert = await _reorg_begun(d)
    await revert()


async def freeze_upstream(d: Deployment, s: Settings) -> None:
    revert = await _reorg_begun(d)
    assert d.node.pid is not None
    d.freeze(d.node.pid)
    try:
        await trio.sleep(s.freeze_seconds)
    finally:
        d.thaw(d.node.pid)
    await revert()  # right after SIGCONT, before the broker has caught up with the node


async def reorg_5_deep(d: Deployment, s: Settings) -> None:
    """The reorg alone, with no other fault."""
    revert = await _reorg_begun(d)
    await revert()


@dataclass
class Fault:
    name: str
    label: str
    inject: Inject
    reorg: str
    """When the reorg 5 blocks deep that comes with the fault is reverted (for the report)."""
    sentinel: bool = False
    """Run in the deployment whose Redis is a Sentinel fleet (else the one with a lone server)."""


FAULTS = [
    Fault(
        "kill_leading_worker",
        "kill -9 of the leading worker",
        kill_leading_worker,
        "at once after the kill, before the standby leads",
    ),
    Fault(
        "kill_web",
        "kill -9 of a web process",
        kill_web,
        "at once after the kill, while its clients resume on the other",
    ),
    Fault(
        "restart_redis",
        "Redis SHUTDOWN NOSAVE, started again",
        restart_redis,
        "while Redis is down",
    ),
    Fault(
        "flush_redis",
        "Redis FLUSHALL (its data lost, every process still connected)",
        flush_redis,
        "at once after the FLUSHALL, as the processes repair",
    ),
    Fault(
        "kill_redis_primary",
        "kill -9 of the Redis primary (Sentinel: a replica, three sentinels)",
        kill_redis_primary,
        "at once after the kill, while the sentinels fail over",
        sentinel=True,
    ),
    Fault(
        "kill_redis_connections",
        "Redis CLIENT KILL TYPE normal",
        kill_redis_connections,
        "at once after the CLIENT KILL",
    ),
    Fault(
        "freeze_upstream",
        "upstream node SIGSTOP, then SIGCONT",
        freeze_upstream,
        "at once after SIGCONT (the five blocks mined before SIGSTOP)",
    ),
    # The node keeps its chain in a state dir (--state-dir): it comes back with the same chain.
    Fault(
        "restart_upstream",
        "upstream node kill -9, started again (its chain kept in --state-dir)",
        restart_upstream,
        "five blocks after the restart (snapshot ids do not outlive the node)",
    ),
    Fault(
        "reorg_5_deep",
        "a reorg 5 blocks deep alone (evm_snapshot/evm_revert)",
        reorg_5_deep,
        "the fault itself",
    ),
]


def _recovered(client: Client, mark: int, since: float, height: int) -> Head | None:
    """The first head ``client`` received at or after ``since`` at least as high as ``height``."""
    return next((h for h in client.heads[mark:] if h[0] >= since and h[1] >= height), None)


async def _caught_up(
    clients: list[Client], marks: list[int], since: float, height: int, seconds: float
) -> None:
    with trio.move_on_after(seconds):
        await until(
            lambda: all(
                _recovered(c, m, since, height) for c, m in zip(clients, marks, strict=True)
            )
        )


async def run_fault(
    d: Deployment, fault: Fault, s: Settings, log: Callable[[str], None]
) -> dict[str, Any]:
    clients = [Client(i, d.ports, origin_prefix=f"{fault.name}-") for i in range(s.fault_clients)]
    await connect_all(clients)
    totals = {"lost": 0, "duplicated": 0, "out_of_order": 0, "replaced_by_reorg": 0}
    recoveries: list[float] = []
    not_recovered = 0
    failures: list[str] = []
    async with trio.open_nursery() as nursery:
        for client in clients:
            nursery.start_soon(client.follow)
        await until(lambda: all(len(c.heads) >= 2 for c in clients))
        for run in range(s.fault_runs):
            await trio.sleep(random.uniform(*s.fault_pause))
            marks = [len(c.heads) for c in clients]
            try:
                with trio.fail_after(s.freeze_seconds + 60):
                    repair = await fault.inject(d, s)
            except Exception as exc:  # a fault the harness could not inject is reported, not hidden
                failures.append(f"run {run}: {exc!r}")
                log(f"  {fault.name} run {run}: could not inject: {exc!r}")
                continue
            ended = time.monotonic()
            head = await d.head()
            await _caught_up(clients, marks, ended, head, s.recover_timeout)
            for client, mark in zip(clients, marks, strict=True):
                first = _recovered(client, mark, ended, head)
                if first is not None:
                    recoveries.append(first[0] - ended)
                else:
                    not_recovered += 1
            # the blocks mined during the recovery have arrived too
            await _caught_up(clients, marks, time.monotonic(), await d.head(), 5.0)
            # every session still answers, and invokes work, on the connection it has now
            for client in clients:
                client.check_session()
            with trio.move_on_after(s.recover_timeout):
                await until(lambda: all(c.checks_done == c.checks_asked for c in clients))
            low = min((c.heads[m - 1][1] for c, m in zip(clients, marks, strict=True)), default=0)
            high = max((c.heads[-1][1] for c in clients if c.heads), default=low)
            chain = await d.canonical(low, high)
            for client, mark in zip(clients, marks, strict=True):
                verdict = judge(client.heads[mark:], client.heads[mark - 1], chain)
                totals["lost"] += verdict.lost
                totals["duplicated"] += verdict.duplicated
                totals["out_of_order"] += verdict.out_of_order
                totals["replaced_by_reorg"] += verdict.replaced
            log(
                f"  {fault.name} run {run + 1}/{s.fault_runs}: "
                f"{totals} so far, not recovered {not_recovered}"
            )
            if repair is not None:
                with trio.fail_after(120):
                    await repair()
        nursery.cancel_scope.cancel()
    errors = [e for c in clients for e in c.errors]
    return {
        "name": fault.name,
        "label": fault.label,
        "reorg": fault.reorg,
        "runs": s.fault_runs - len(failures),
        "clients": len(clients),
        **totals,
        "recover_p50_s": _round(percentile(recoveries, 0.5)),
        "recover_p99_s": _round(percentile(recoveries, 0.99)),
        "not_recovered": not_recovered,
        "client_errors": len(errors),
        "client_error_kinds": sorted({e.split(":")[0] for e in errors}),
        "reconnects": sum(len(c.closes) for c in clients),
        "session_checks": sum(c.checks_done - c.checks_unanswered for c in clients),
        "sessions_lost": sum(c.sessions_lost for c in clients),
        "invokes_failed": sum(c.invokes_failed for c in clients),
        "failed_connect_attempts": sum(c.failed_attempts for c in clients),
        "injection_failures": failures,
    }


def _round(value: float) -> float | None:
    return None if value != value else round(value, 3)  # NaN: nothing measured


def selected(s: Settings, *, sentinel: bool) -> list[Fault]:
    """The faults to run in the deployment with (or without) a Sentinel fleet."""
    return [
        f
        for f in FAULTS
        if f.sentinel == sentinel and (not s.only_faults or f.name in s.only_faults)
    ]


async def run_faults(
    d: Deployment,
    s: Settings,
    log: Callable[[str], None],
    done: Callable[[dict[str, Any]], None],
) -> None:
    for fault in selected(s, sentinel=d.sentinels is not None):
        log(f"fault: {fault.label} ({s.fault_runs} runs, {s.fault_clients} clients)")
        done(await run_fault(d, fault, s, log))
