"""The deployment under test, as real OS processes on 127.0.0.1: a dev chain node as the upstream, a
``redis-server`` of its own (a free port; a system Redis on 6379 is never touched), workers (the
first leads, the others stand by) and web processes. Built from the pieces the process tests use
(:mod:`tests.redis.test_deployment`, :mod:`tests.support.processes`,
:mod:`tests.redis.worker_process`); web processes run through :mod:`soak.gauged` so that their task
count and GC pauses can be read.

Every process belongs to the nursery of :func:`deployment`: leaving it (done, failed or cancelled)
kills and reaps each one by its pid, and stops the redis-server.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import trio

from bench.procs import ROOT, rss_kib
from tests.redis.test_deployment import DEV, Upstream, start_upstream
from tests.redis.worker_process import WorkerProcess
from tests.support.processes import ScopecastProcess
from tests.support.redis_server import RedisServer, SentinelFleet, primary_port, redis_command


async def metric(port: int, name: str) -> float:
    """One value of a web process's ``GET /metrics`` (0 when it is not there)."""
    return (await metrics(port, [name]))[name]


async def metrics(port: int, names: list[str]) -> dict[str, float]:
    """Values of a web process's ``GET /metrics`` (0 when one is not there)."""
    async with httpx.AsyncClient(trust_env=False, timeout=30) as client:
        text = (await client.get(f"http://127.0.0.1:{port}/metrics")).text
    found = dict.fromkeys(names, 0.0)
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in found:
            found[name] = float(value.split()[-1])
    return found


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def fd_kinds(pid: int, ports: dict[int, str], own_port: int | None) -> dict[str, int]:
    """``pid``'s fds by what they are: TCP connections to the ports named in ``ports`` (Redis, the
    upstream), established connections to ``own_port`` (clients), other connections to it (closing:
    a leak of closed connections would grow these), and the rest (listeners, files, pipes...)."""
    inodes = set()
    total = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        total += 1
        with suppress(OSError):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    kinds = dict.fromkeys([*ports.values(), "clients", "clients_closing"], 0)
    for table in ("tcp", "tcp6"):
        with suppress(OSError):
            for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
                fields = line.split()
                if fields[9] not in inodes or fields[3] == "0A":  # 0A: listening
                    continue
                # /proc/net/tcp is read in pages while connections come and go: an entry can
                # show twice, so each socket counts once
                inodes.discard(fields[9])
                local = int(fields[1].rsplit(":", 1)[1], 16)
                remote = int(fields[2].rsplit(":", 1)[1], 16)
                if remote in ports:
                    kinds[ports[remote]] += 1
                elif local == own_port:
                    kinds["clients" if fields[3] == "01" else "clients_closing"] += 1
    kinds["other"] = total - sum(kinds.values())
    return kinds


@dataclass
class Deployment:
    folder: Path
    upstream: Upstream
    redis: RedisServer
    workers: list[WorkerProcess] = field(default_factory=list)
    webs: list[ScopecastProcess] = field(default_factory=list)
    #: With a Sentinel fleet: ``redis`` is its primary when the deployment starts.
    sentinels: SentinelFleet | None = None
    #: The chain the workers ingest (its lease names the leader).
    chain: str = DEV
    #: What a worker logs once it leads or stands by.
    worker_ready: str = "leading from block|standing by"

    @property
    def redis_url(self) -> str:
        """What the processes are given: the server, or the sentinels."""
        return self.sentinels.url if self.sentinels is not None else self.redis.url

    @property
    def node(self) -> ScopecastProcess:
        assert self.upstream.node is not None
        return self.upstream.node

    @property
    def ports(self) -> list[int]:
        return [web.port for web in self.webs if web.port is not None]

    # -- processes ------------------------------------------------------------------------------

    def _gauged(self) -> Path:
        """A ``scopecast``-like executable running :mod:`soak.gauged`."""
        script = self.folder / "scopecast-gauged"
        if not script.exists():
            script.write_text(
                f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec "{sys.executable}" -m soak.gauged "$@"\n'
            )
            script.chmod(0o755)
        return script

    async def add_web(self, extra: tuple[str, ...] = ()) -> ScopecastProcess:
        web = self.upstream.web(self.redis_url)
        web.args.extend(extra)
        web.executable = self._gauged()
        # INFO, not the tests' DEBUG: thousands of connections would log a line each.
        web.env.update({"SOAK_GAUGES": str(self.folder), "SCOPECAST_LOG_LEVEL": "INFO"})
        await web.start()
        self.webs.append(web)
        return web

    async def add_worker(self) -> WorkerProcess:
        worker = await self.upstream.start_worker(self.redis_url)
        await worker.wait_for(self.worker_ready)
        self.workers.append(worker)
        return worker

    async def leader(self) -> WorkerProcess:
        # The chain's lease names its holder as host:pid/token.
        reply = await redis_command(self.redis.port, "GET", f"scopecast:lease:{{{self.chain}}}")
        pid = int(reply.split(b"\r\n")[1].decode().split("/")[0].rsplit(":", 1)[1])
        return next(w for w in self.workers if w.running and w.pid == pid)

    async def redis_command(self, *args: str) -> bytes:
        return await redis_command(self.redis.port, *args)

    async def stop_redis(self) -> None:
        """``SHUTDOWN NOSAVE``: the server exits, its data gone."""
        process = self.redis.process
        assert process is not None
        with suppress(OSError):  # it may close the connection without a reply
            await self.redis_command("SHUTDOWN", "NOSAVE")
        await trio.to_thread.run_sync(process.wait)
        self.redis.process = None

    async def start_redis(self) -> None:
        """The same server started again on the same port (after :meth:`stop_redis`)."""
        await trio.to_thread.run_sync(self.redis.start)

    async def primary(self) -> RedisServer:
        """The server the sentinels name primary now."""
        assert self.sentinels is not None
        port = await primary_port(self.sentinels)
        return next(s for s in (self.sentinels.primary, self.sentinels.replica) if s.port == port)

    def freeze(self, pid: int) -> None:
        os.kill(pid, signal.SIGSTOP)

    def thaw(self, pid: int) -> None:
        os.kill(pid, signal.SIGCONT)

    async def head(self) -> int:
        """The upstream node's head number."""
        return int(await self.node.result("eth_blockNumber"), 16)

    async def canonical(self, low: int, high: int) -> dict[int, str]:
        """Block hashes of the upstream's chain, ``low`` to ``high`` (those it has)."""
        found: dict[int, str] = {}
        for number in range(max(low, 0), high + 1):
            block = await self.node.result("eth_getBlockByNumber", [hex(number), False])
            if block is None:
                break
            found[number] = block["hash"]
        return found

    # -- gauges ---------------------------------------------------------------------------------

    async def sample_with_connections(self, web: ScopecastProcess) -> dict[str, Any] | None:
        """:meth:`sample` and the open WebSocket connections (``scopecast_connections``)."""
        sample = self.sample(web)
        if sample is None or web.port is None:
            return sample
        with suppress(httpx.HTTPError):
            read = await metrics(
                web.port,
                ["scopecast_connections", "scopecast_response_cache_bytes"],
            )
            sample["connections"] = int(read["scopecast_connections"])
            # What bounded caches hold: part of the RSS, growing up to their bound.
            sample["response_cache_mib"] = round(read["scopecast_response_cache_bytes"] / 2**20, 1)
        return sample

    async def census(self, web: ScopecastProcess) -> dict[str, Any] | None:
        """What a running web process's collector will never free (``soak.gauged``'s census of
        the cycles among frozen objects); None when it did not answer within a minute."""
        pid = web.pid
        if pid is None or not web.running:
            return None
        answer = self.folder / f"{pid}-census.json"
        answer.unlink(missing_ok=True)
        (self.folder / f"{pid}.census-please").touch()
        with trio.move_on_after(60.0):
            while not answer.exists():  # noqa: ASYNC110 - another process writes it
                await trio.sleep(0.2)
            found: dict[str, Any] = json.loads(answer.read_text())
            return found
        return None

    def sample(self, web: ScopecastProcess) -> dict[str, Any] | None:
        """RSS, fds, tasks and the longest GC pause of the last second of a running web process."""
        pid = web.pid
        if pid is None or not web.running:
            return None
        sample: dict[str, Any] = {"pid": pid}
        try:
            sample["rss_mib"] = round(rss_kib(pid) / 1024, 1)
            sample["fds"] = fd_count(pid)
            ports = {self.redis.port: "redis", self.node.port or 0: "upstream"}
            sample["fd_kinds"] = kinds = fd_kinds(pid, ports, web.port)
            # What a leak would grow; the churn moves the established client connections.
            sample["fds_less_clients"] = sample["fds"] - kinds["clients"]
            # Less the pooled connections too (Redis, the upstream), which move within bounds.
            sample["fds_unpooled"] = sample["fds_less_clients"] - kinds["redis"] - kinds["upstream"]
        except (OSError, RuntimeError):
            return None
        with suppress(OSError, ValueError):  # not written yet
            sample.update(json.loads((self.folder / f"{pid}.json").read_text()))
        return sample


@asynccontextmanager
async def deployment(
    folder: Path, *, block_time: str, webs: int = 2, workers: int = 2, sentinel: bool = False
) -> AsyncIterator[Deployment]:
    """A running deployment; everything it started is stopped on the way out. ``sentinel``: Redis
    is a Sentinel fleet (a primary, a replica, three sentinels) and the processes are given the
    sentinels' ``redis+sentinel://`` URL."""
    folder.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 - once, before anything runs
    fleet = SentinelFleet() if sentinel else None
    redis = fleet.primary if fleet is not None else RedisServer()
    await trio.to_thread.run_sync(fleet.start if fleet is not None else redis.start)
    try:
        async with trio.open_nursery() as nursery:
            with trio.fail_after(120):
                # kept in a state dir: a kill -9 and start again continues the same chain
                upstream = await start_upstream(
                    nursery, folder, block_time, "--state-dir", str(folder / "chain")
                )
                found = Deployment(folder, upstream, redis, sentinels=fleet)
                for _ in range(workers):  # one at a time: the first one leads
                    await found.add_worker()
                for _ in range(webs):
                    await found.add_web()
            try:
                yield found
            finally:
                for web in found.webs:  # a frozen process would not die of SIGTERM alone
                    if web.pid is not None and web.running:
                        found.thaw(web.pid)
                if found.node.pid is not None and found.node.running:
                    found.thaw(found.node.pid)
                nursery.cancel_scope.cancel()
    finally:
        if fleet is not None:
            fleet.close()
        redis.close()
