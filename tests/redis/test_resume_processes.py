"""Resume across web processes, as real OS processes: a dev chain node mining every 100 ms (the
upstream), a redis-server, a worker and two web processes. 200 session clients follow heads on web
A; A is killed with ``kill -9`` (or stopped with SIGTERM, a deploy); every client reconnects to web B
with its last cursor and must see every block exactly once, in order."""

from __future__ import annotations

import struct
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import msgspec
import pytest
import trio

from tests.redis.test_deployment import (  # noqa: F401 - a fixture
    Upstream,
    redis_process,
    start_upstream,
)
from tests.support.processes import ScopecastProcess
from tests.support.rawws import RawWebSocket
from tests.support.redis_server import RedisServer
from tests.support.waiting import eventually

DEV = "eip155:1337"
CLIENTS = 200
#: Heads every client has before web A goes (then 20 more on web B).
LIVE_HEADS = 5
SCOPES = {DEV: {"methods": ["eth_subscribe"], "notifications": ["eth_subscription"]}}


class _Head(msgspec.Struct):
    number: str
    hash: str = ""  # read by the soak (soak.clients), which checks the chain of parents
    parentHash: str = ""


class _Inner(msgspec.Struct):
    subscription: str
    result: _Head


class _Notification(msgspec.Struct):
    params: _Inner


class _Params(msgspec.Struct):
    notification: _Notification | None = None
    cursor: str | None = None
    replayed: int | None = None
    complete: bool | None = None


class _Message(msgspec.Struct):
    """What a follower reads of a message (msgspec skips the rest: 200 clients in one process
    must keep up with a block every 100 ms)."""

    method: str | None = None
    params: _Params | None = None
    result: Any = None
    error: Any = None


_decode = msgspec.json.Decoder(_Message).decode


@dataclass
class Follower:
    """One session client: the heads it saw (numbers), its last cursor, what resuming said."""

    index: int
    heads: list[int] = field(default_factory=list)
    cursor: str | None = None
    sub_id: str | None = None
    resumed: list[dict[str, Any]] = field(default_factory=list)
    closes: list[tuple[int | None, str]] = field(default_factory=list)
    reconnected_at: float | None = None
    recovered_after: float | None = None

    @property
    def origin(self) -> str:
        return f"https://dapp{self.index}.example"


@dataclass
class Setup:
    upstream: Upstream
    redis: RedisServer
    web_a: ScopecastProcess
    web_b: ScopecastProcess


@pytest.fixture
async def setup(
    tmp_path: Path,
    redis_process: RedisServer,  # noqa: F811 - the fixture imported above
) -> AsyncIterator[Setup]:
    async with trio.open_nursery() as nursery:
        with trio.fail_after(90):
            upstream = await start_upstream(nursery, tmp_path, "0.1")
            worker = await upstream.start_worker(redis_process.url)
            await worker.wait_for("leading from block")
            webs = [upstream.web(redis_process.url) for _ in range(2)]
            async with trio.open_nursery() as starting:
                for web in webs:
                    starting.start_soon(web.start)
        yield Setup(upstream, redis_process, webs[0], webs[1])
        nursery.cancel_scope.cancel()


async def _read(conn: RawWebSocket) -> tuple[_Message | None, tuple[int | None, str] | None]:
    """The next message, or (None, (close code, reason)) once the connection ended."""
    while True:
        try:
            frame = await conn.frame()
        except OSError:
            return None, (None, "")
        if frame is None:
            return None, (None, "")
        opcode, payload = frame
        if opcode == 0x8:
            code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
            return None, (code, payload[2:].decode())
        if opcode == 0x1:
            return _decode(payload), None
        if opcode == 0x9:
            await conn.send_text(payload, opcode=0xA)  # a pong, or the server closes with 4009


async def follow(
    f: Follower, ports: tuple[int, int], ready: trio.MemorySendChannel[int], target: list[int]
) -> None:
    """Subscribe on the first port; when dropped, resume on the second; stop at ``target[0]``."""
    conn = await RawWebSocket.connect(ports[0], "/ws/v3/dev", origin=f.origin)
    try:
        await conn.call(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "wallet_createSession",
                "params": {"optionalScopes": SCOPES},
            }
        )
        created = (await _read(conn))[0]
        assert created is not None
        assert created.result is not None, created
        await conn.call(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "wallet_invokeMethod",
                "params": {
                    "scope": DEV,
                    "request": {"method": "eth_subscribe", "params": ["newHeads"]},
                },
            }
        )
        subscribed = (await _read(conn))[0]
        assert subscribed is not None
        assert subscribed.result is not None, subscribed
        f.sub_id = subscribed.result["result"]["result"]
        await ready.send(f.index)
        while not (f.heads and f.heads[-1] >= target[0] and f.resumed):
            message, closed = await _read(conn)
            if closed is not None:
                f.closes.append(closed)
                conn.close()
                assert len(f.closes) == 1, f.closes
                cursor = closed[1] or f.cursor  # a graceful close names the cursor itself
                assert cursor is not None
                f.reconnected_at = time.monotonic()
                conn = await RawWebSocket.connect(
                    ports[1], f"/ws/v3/dev?resume={quote(cursor)}", origin=f.origin
                )
                continue
            assert message is not None
            assert message.params is not None, message
            if message.method == "scopecast_resumed":
                f.resumed.append(
                    {"replayed": message.params.replayed, "complete": message.params.complete}
                )
                assert f.reconnected_at is not None
                f.recovered_after = time.monotonic() - f.reconnected_at
                continue
            assert message.method == "wallet_notify", message
            assert message.params.notification is not None
            inner = message.params.notification.params
            assert inner.subscription == f.sub_id
            f.heads.append(int(inner.result.number, 16))
            f.cursor = message.params.cursor
    finally:
        conn.close()


async def run_and_drop(s: Setup, drop: str) -> list[Follower]:
    followers = [Follower(i) for i in range(CLIENTS)]
    target = [10**9]
    assert s.web_a.port is not None
    assert s.web_b.port is not None
    ports = (s.web_a.port, s.web_b.port)
    send, receive = trio.open_memory_channel[int](CLIENTS)
    async with trio.open_nursery() as nursery:
        for f in followers:
            nursery.start_soon(follow, f, ports, send, target)
        for _ in range(CLIENTS):
            await receive.receive()
        await eventually(  # live: a cursor each (a kill -9 names none on the close)
            lambda: all(len(f.heads) >= LIVE_HEADS for f in followers),
            f"every client has {LIVE_HEADS} live heads",
        )
        started = time.monotonic()
        if drop == "kill":
            await s.web_a.kill()
        else:
            assert await s.web_a.stop() == 0
            print(f"web A drained and exited in {time.monotonic() - started:.2f} s")
            assert time.monotonic() - started < 10
        head = int(await s.web_b.result("eth_blockNumber"), 16)
        target[0] = head + 20  # two more seconds of blocks, on web B
    return followers


def check(followers: list[Follower], drop: str) -> None:
    missing = [f for f in followers if not f.resumed]
    assert not missing, [(f.index, f.closes, f.heads[-3:], f.reconnected_at) for f in missing[:5]]
    replayed = [f.resumed[0]["replayed"] for f in followers]
    recovery = sorted(f.recovered_after for f in followers if f.recovered_after is not None)
    for f in followers:
        assert f.heads == list(range(f.heads[0], f.heads[0] + len(f.heads))), (f.index, f.heads)
        assert len(f.closes) == 1, f.closes
        assert len(f.resumed) == 1
        assert f.resumed[0]["complete"] is True, f.resumed
        if drop == "term":
            code, reason = f.closes[0]
            assert code == 1012
            assert reason.split(".")[0] == (f.cursor or "").split(".")[0]
    print(
        f"{drop}: {len(followers)} clients, every block once and in order; replayed "
        f"{sum(replayed)} notifications (max {max(replayed)} per client); recovery p50 "
        f"{recovery[len(recovery) // 2] * 1000:.0f} ms, p99 {recovery[int(len(recovery) * 0.99) - 1] * 1000:.0f} ms"
    )


async def test_kill_9_of_a_web_process_loses_no_block_for_resuming_clients(setup: Setup) -> None:
    with trio.fail_after(120):
        followers = await run_and_drop(setup, "kill")
    check(followers, "kill")


async def test_sigterm_drains_with_1012_and_a_cursor_and_clients_resume_without_gap(
    setup: Setup,
) -> None:
    with trio.fail_after(120):
        followers = await run_and_drop(setup, "term")
    check(followers, "term")
