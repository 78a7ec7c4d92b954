"""A multi-process deployment as real OS processes: a dev chain node (its own ``scopecast serve``),
a throwaway redis-server, two web processes (``serve --role web``) and workers. Dapps on either web
process share their session; operator changes and chain heads reach both; killing a worker, a web
process or the web processes' Redis connections loses nothing; Redis down at start is waited for."""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from tests.redis.collect import Collector
from tests.redis.worker_process import WorkerProcess
from tests.support.inprocess import Dapp, dapp
from tests.support.processes import ScopecastProcess, start_scopecast
from tests.support.rawws import RawWebSocket
from tests.support.redis_server import RedisServer, free_port, redis_command
from tests.support.waiting import eventually

DEV = "eip155:1337"
ORIGIN = "https://dapp.example"
LEASE = "scopecast:lease:{eip155:1337}"
SCOPES = {
    DEV: {"methods": ["eth_blockNumber", "eth_subscribe"], "notifications": ["eth_subscription"]}
}


@dataclass
class Upstream:
    """The dev chain node (every block 0.5 s) and a config file naming it as the upstream."""

    nursery: trio.Nursery
    config: Path
    node: ScopecastProcess | None = (
        None  # the dev chain node itself (the soak kills and freezes it)
    )

    def web(self, redis_url: str, *, port: int = 0) -> ScopecastProcess:
        """A web process (not started yet)."""
        args = ["--role", "web", "--config", str(self.config), "--redis-url", redis_url]
        return ScopecastProcess(self.nursery, args, port=port)

    async def start_worker(self, redis_url: str) -> WorkerProcess:
        worker = WorkerProcess(
            self.nursery,
            ["--config", str(self.config), "--redis-url", redis_url, "--metrics-port", "0"],
        )
        await worker.start()
        return worker


@dataclass
class Deployment:
    upstream: Upstream
    redis: RedisServer
    web_a: ScopecastProcess
    web_b: ScopecastProcess
    worker: WorkerProcess


async def start_upstream(
    nursery: trio.Nursery, folder: Path, block_time: str, *extra: str
) -> Upstream:
    """A dev chain node mining every ``block_time`` seconds (``extra``: more ``serve`` flags), and
    a config naming it upstream."""
    node = await start_scopecast(nursery, "--block-time", block_time, *extra)
    config = folder / "scopecast.toml"
    config.write_text(
        "[networks.dev]\n"
        f'chain = "{DEV}"\n'
        f'upstreams = [{{http = "{node.http_url()}", ws = "{node.ws_url()}"}}]\n'
    )
    return Upstream(nursery, config, node)


@pytest.fixture
async def upstream(tmp_path: Path) -> AsyncIterator[Upstream]:
    async with trio.open_nursery() as nursery:
        with trio.fail_after(60):
            found = await start_upstream(nursery, tmp_path, "0.5")
        yield found
        nursery.cancel_scope.cancel()


@pytest.fixture
def redis_process() -> Iterator[RedisServer]:
    # A server of its own: the processes use the default key prefix, and tests kill its clients.
    server = RedisServer()
    server.start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
async def deployment(upstream: Upstream, redis_process: RedisServer) -> Deployment:
    with trio.fail_after(60):
        # The first worker leads before anything else starts, so tests know which one it is.
        worker = await upstream.start_worker(redis_process.url)
        await worker.wait_for("leading from block")
        webs = [upstream.web(redis_process.url) for _ in range(2)]
        async with trio.open_nursery() as starting:
            for web in webs:
                starting.start_soon(web.start)
    return Deployment(upstream, redis_process, webs[0], webs[1], worker)


# -- helpers ----------------------------------------------------------------------------------


async def admin(web: ScopecastProcess, method: str, params: Any) -> Any:
    async with httpx.AsyncClient(trust_env=False) as client:
        reply = await client.post(
            f"{web.base_url}/admin",
            json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
            headers={"authorization": "Bearer dev"},
        )
    return reply.json()


Head = tuple[float, int, str, str]
"""A head as one subscriber received it: (arrival time, number, hash, parent hash)."""


def assert_every_head_once_in_order(heads: list[Head]) -> None:
    numbers = [number for _, number, _, _ in heads]
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers))), numbers
    for (_, _, parent, _), (_, _, _, its_parent) in itertools.pairwise(heads):
        assert its_parent == parent


def longest_silence(heads: list[Head]) -> float:
    return max(b[0] - a[0] for a, b in itertools.pairwise(heads))


async def follow_heads(conn: Dapp, heads: Collector[Head]) -> None:
    await conn.result("eth_subscribe", ["newHeads"])
    while True:
        head = (await conn.notification())["params"]["result"]
        heads((trio.current_time(), int(head["number"], 16), head["hash"], head["parentHash"]))


async def more_heads(logs: list[Collector[Head]], count: int) -> None:
    """Wait until every subscriber has ``count`` more heads than now."""
    for log in logs:
        await log.wait_for(len(log.items) + count)


async def lease_holder_pid(redis: RedisServer) -> int:
    # The lease names its holder as host:pid/token.
    reply = await redis_command(redis.port, "GET", LEASE)
    value = reply.split(b"\r\n")[1].decode()
    return int(value.split("/")[0].rsplit(":", 1)[1])


# -- the tests ----------------------------------------------------------------------------------


async def test_sessions_changes_and_heads_span_web_processes(deployment: Deployment) -> None:
    d = deployment
    with trio.fail_after(60):
        async with (
            dapp(d.web_a.ws_url(), origin=ORIGIN) as on_a,
            dapp(d.web_b.ws_url(), origin=ORIGIN) as on_b,
        ):
            created = await on_a.result("wallet_createSession", {"optionalScopes": SCOPES})
            assert set(created["sessionScopes"]) == {DEV}
            assert (await on_b.result("wallet_getSession", {}))["sessionScopes"] == created[
                "sessionScopes"
            ]
            told = await on_b.notification()  # the other tab, on the other process, hears of it
            assert told["method"] == "wallet_sessionChanged"
            assert told["params"]["sessionScopes"] == created["sessionScopes"]

            narrowed = {DEV: {"methods": ["eth_blockNumber"], "notifications": []}}
            reply = await admin(
                d.web_b,
                "admin_updateSession",
                {"apiKey": "dev", "origin": ORIGIN, "sessionScopes": narrowed},
            )
            assert "error" not in reply, reply
            for conn in (on_a, on_b):
                changed = await conn.notification()
                assert changed["method"] == "wallet_sessionChanged"
                assert changed["params"]["sessionScopes"][DEV]["methods"] == ["eth_blockNumber"]

        logs: list[Collector[Head]] = [Collector(), Collector()]
        async with dapp(d.web_a.ws_url()) as head_a, dapp(d.web_b.ws_url()) as head_b:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(follow_heads, head_a, logs[0])
                nursery.start_soon(follow_heads, head_b, logs[1])
                await more_heads(logs, 6)
                nursery.cancel_scope.cancel()
    for log in logs:
        assert_every_head_once_in_order(log.items)
    seen_by_both = {h[1:3] for h in logs[0].items} & {h[1:3] for h in logs[1].items}
    assert len(seen_by_both) >= 5


async def worker_chains(worker: WorkerProcess) -> Any:
    """What the worker's status endpoint says of its chains (leading or standby)."""
    async with httpx.AsyncClient() as client:
        port = await worker.status_port()
        health = await client.get(f"http://127.0.0.1:{port}/healthz")
        scraped = await client.get(f"http://127.0.0.1:{port}/metrics")
    assert "scopecast_skipped_heights_total" in scraped.text
    return health.json()["chains"]


async def test_worker_death_and_dropped_redis_connections_lose_no_head(
    deployment: Deployment,
) -> None:
    d = deployment
    logs: list[Collector[Head]] = [Collector(), Collector()]
    with trio.fail_after(60):
        standby = await d.upstream.start_worker(d.redis.url)
        await standby.wait_for("standing by")
        async with dapp(d.web_a.ws_url()) as head_a, dapp(d.web_b.ws_url()) as head_b:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(follow_heads, head_a, logs[0])
                nursery.start_soon(follow_heads, head_b, logs[1])
                await more_heads(logs, 3)

                assert await lease_holder_pid(d.redis) == d.worker.pid
                assert await worker_chains(d.worker) == {DEV: "leading"}
                assert await worker_chains(standby) == {DEV: "standby"}
                await d.worker.kill()
                await standby.wait_for("leading from block")
                assert await lease_holder_pid(d.redis) == standby.pid
                assert await worker_chains(standby) == {DEV: "leading"}
                await more_heads(logs, 3)

                for _ in range(3):  # every process loses its Redis connections, repeatedly
                    reply = await redis_command(d.redis.port, "CLIENT", "KILL", "TYPE", "normal")
                    assert reply.startswith(b":"), reply
                    # At least a connection of each web process and of the (new) leading worker.
                    assert int(reply[1:].split(b"\r\n")[0]) >= 3, reply
                    # Heads come every 0.5 s and are read within milliseconds: of three more, the
                    # last was appended and read after the kill, so all three are connected again.
                    await more_heads(logs, 3)
                await more_heads(logs, 3)
                nursery.cancel_scope.cancel()
    for log in logs:
        assert_every_head_once_in_order(log.items)
        # Blocks come every 0.5 s; the hand-over is the longest silence: at most the lease TTL
        # (3 s) plus the standby's poll (0.5 s) and its backfill.
        print(f"hand-over: {longest_silence(log.items):.2f} s without a head")
        assert longest_silence(log.items) < 5.0


async def test_a_dapp_whose_web_process_died_finds_its_session_on_the_other(
    deployment: Deployment,
) -> None:
    d = deployment
    with trio.fail_after(60):
        # A raw socket: trio-websocket leaks its socket when the server dies under it.
        on_a = await RawWebSocket.connect(d.web_a.port, "/ws/v3/dev")
        try:
            await on_a.call(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "wallet_createSession",
                    "params": {"optionalScopes": SCOPES},
                }
            )
            created = (await on_a.message())["result"]
            await d.web_a.kill()
            with contextlib.suppress(OSError):
                assert await on_a.message() is None  # the connection is gone with its process
        finally:
            on_a.close()
        async with dapp(d.web_b.ws_url()) as on_b:  # the dapp reconnects to the other one
            session = await on_b.result("wallet_getSession", {})
            assert session["sessionScopes"] == created["sessionScopes"]
            invoked = await on_b.result(
                "wallet_invokeMethod",
                {"scope": DEV, "request": {"method": "eth_blockNumber", "params": []}},
            )
            assert int(invoked["result"]["result"], 16) > 0


async def test_redis_unreachable_at_start_is_waited_for(upstream: Upstream) -> None:
    later = RedisServer(free_port())
    try:
        with trio.fail_after(60):
            worker = await upstream.start_worker(later.url)
            web_port = free_port()
            web = upstream.web(later.url, port=web_port)
            upstream.nursery.start_soon(web.start)
            await worker.wait_for("cannot reach Redis at .* retrying in", count=2)
            await web.wait_for_output("cannot reach Redis", count=2)
            assert worker.running
            assert web.running
            # Bound but not ready: every request is told so at once, nothing hangs.
            base = f"http://127.0.0.1:{web_port}"
            async with httpx.AsyncClient() as client:
                health = await client.get(f"{base}/healthz")
                assert health.status_code == 503
                assert health.json()["status"] == "starting"
                assert health.headers["retry-after"] == "1"
                call = await client.post(
                    f"{base}/v3/dev", json={"jsonrpc": "2.0", "id": 1, "method": "eth_chainId"}
                )
                assert call.status_code == 503
                assert call.json()["error"]["code"] == -32000
            with pytest.raises(ConnectionError, match=r"HTTP/1\.1 503"):
                await RawWebSocket.connect(web_port, "/ws/v3/dev")
            later.start()
            await worker.wait_for("leading from block")
            await web.wait_for_output("scopecast listening")  # ready once it says it listens
            async with dapp(web.ws_url()) as conn:
                heads: Collector[Head] = Collector()
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(follow_heads, conn, heads)
                    await heads.wait_for(2)
                    nursery.cancel_scope.cancel()
            await worker.stop()  # SIGTERM: the lease is released, not left to expire
            assert worker.count("releasing the chains") == 1
            assert await redis_command(later.port, "GET", LEASE) == b"$-1\r\n"
    finally:
        later.close()


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(child) for child in path.read_text().split()] if path.exists() else []


async def _lease_pid_when_held(redis: RedisServer) -> int:
    async def held() -> bool:
        return not (await redis_command(redis.port, "GET", LEASE)).startswith(b"$-1")

    await eventually(held, "a worker takes the lease")
    return await lease_holder_pid(redis)


async def test_the_readme_fail_over_recipe_survives_killing_the_leader(
    upstream: Upstream, redis_process: RedisServer
) -> None:
    """README "Running it locally": workers in `while :; do scopecast worker; sleep 1; done` loops
    (outside honcho, which would stop the fleet): killing the leader hands over to the other worker,
    loses no head, and the loop starts the killed one again."""
    scopecast = Path(sys.executable).with_name("scopecast")
    env = {
        **os.environ,
        "REDIS_URL": redis_process.url,
        "SCOPECAST_CONFIG": str(upstream.config),
    }
    loop = f"while :; do {scopecast} worker; sleep 1; done"
    heads: Collector[Head] = Collector()
    loops = []
    try:
        with trio.fail_after(90):
            for _ in range(2):
                loops.append(
                    await trio.lowlevel.open_process(
                        ["bash", "-c", loop],
                        env=env,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                        start_new_session=True,
                    )
                )
            web = upstream.web(redis_process.url)
            await web.start()
            leader = await _lease_pid_when_held(redis_process)
            async with dapp(web.ws_url()) as conn, trio.open_nursery() as nursery:
                nursery.start_soon(follow_heads, conn, heads)
                await heads.wait_for(3)
                os.kill(leader, signal.SIGKILL)
                await heads.wait_for(len(heads.items) + 8)  # the standby leads, heads go on
                successor = await lease_holder_pid(redis_process)
                assert successor != leader
                nursery.cancel_scope.cancel()
            assert [loop.returncode for loop in loops] == [None, None]  # the loops live on

            def workers_again() -> list[int] | None:  # the one whose worker died starts another
                workers = [pid for loop in loops for pid in _children(loop.pid)]
                return workers if len(workers) == 2 and leader not in workers else None

            workers = await eventually(workers_again, "two workers again, the killed one replaced")
            assert len(workers) == 2
            assert leader not in workers
    finally:
        for process in loops:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
    assert_every_head_once_in_order(heads.items)
