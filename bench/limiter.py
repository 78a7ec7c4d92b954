"""``python -m bench.limiter``: what a key's rate limit costs per request.

Prints one table, microseconds per call: the limiter alone (in memory; in Redis one task at a time,
a round trip each, and 32 tasks at once, which share the key's round trips; a bare PING beside them,
the Redis client's own round trip) and a whole request answered by the broker (``Broker.respond``,
no sockets: the HTTP server's own cost is ``make bench``'s) for a key without a table, then with a
rate counted in memory and in Redis. The rate is high enough that every call is admitted (the cost
of saying yes). A throwaway ``redis-server`` is started on a free port (``--redis-url URL`` uses
another) and stopped by its pid.

    python -m bench.limiter [--redis-url redis://127.0.0.1:6379/0] [--calls N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

import msgspec
import trio

from broker.access import MemoryLimiter, RedisLimiter
from broker.access._policy import Rate
from broker.compose import ServeOptions, build_broker
from broker.config import Config
from broker.redis import RedisClient, redis_client, wait_for_redis
from broker.transport.http import HttpRequest, HttpResponse

RATE = Rate(1e9, 10**9)  # never refuses
BODY = b'{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}'


@contextmanager
def redis_server() -> Iterator[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not installed (or pass --redis-url)")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    workdir = tempfile.mkdtemp(prefix="bench-redis-")
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", workdir],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        os.kill(process.pid, signal.SIGTERM)
        process.wait(timeout=5)
        shutil.rmtree(workdir, ignore_errors=True)


async def per_call(call: Callable[[], Awaitable[object]], calls: int, tasks: int = 1) -> float:
    """Microseconds per call, ``calls`` calls split over ``tasks`` concurrent tasks."""

    async def run(count: int) -> None:
        for _ in range(count):
            await call()

    for _ in range(min(calls, 200)):  # warm up (connections, scripts loaded)
        await call()
    started = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for _ in range(tasks):
            nursery.start_soon(run, calls // tasks)
    return (time.perf_counter() - started) / (calls // tasks * tasks) * 1e6


def request(key: str) -> HttpRequest:
    headers = [(b"content-type", b"application/json"), (b"host", b"bench")]
    return HttpRequest(b"POST", f"/v3/{key}".encode(), headers, BODY)


Rows = list[tuple[str, float]]


def _tasks(count: int) -> str:
    return "1 task" if count == 1 else f"{count} tasks at once"


async def limiter_rows(rows: Rows, client: RedisClient, calls: int) -> None:
    memory = MemoryLimiter()
    rows.append(("limiter, memory", await per_call(lambda: memory.take("k", RATE, 1), calls * 10)))
    rows.append(("Redis PING (1 task), for scale", await per_call(client.ping, calls)))
    redis = RedisLimiter(client, f"bench-{os.getpid()}")
    async with trio.open_nursery() as nursery:
        await nursery.start(redis.serve)
        # One task: a round trip per call; 32 at once: they share the key's round trips.
        for tasks in (1, 32):
            micros = await per_call(lambda: redis.take("k", RATE, 1), calls * 4, tasks)
            rows.append((f"limiter, Redis ({_tasks(tasks)})", micros))
        nursery.cancel_scope.cancel()


async def request_rows(rows: Rows, client: RedisClient, calls: int) -> None:
    config = msgspec.convert(
        {"keys": {"limited": {"requests_per_second": RATE.per_second, "burst": RATE.burst}}},
        Config,
    )
    broker = build_broker(config, ServeOptions(block_time=0, api_keys=["plain"]))
    await broker.start_adapters()
    access = broker.access
    assert access is not None

    async def respond(key: str) -> None:
        response = await broker.respond(request(key))
        assert isinstance(response, HttpResponse)
        assert response.status == 200, response.body

    async def measure(name: str, key: str) -> None:
        for tasks in (1, 32):
            micros = await per_call(lambda: respond(key), calls * 4, tasks)
            rows.append((f"request, {name} ({_tasks(tasks)})", micros))

    await measure("key without a table", "plain")
    await measure("rate in memory", "limited")
    redis = access.limiter = RedisLimiter(client, f"bench-{os.getpid()}")
    async with trio.open_nursery() as nursery:
        await nursery.start(redis.serve)
        await measure("rate in Redis", "limited")
        nursery.cancel_scope.cancel()
    for network in broker.networks:
        await network.adapter.aclose()


async def measure_all(url: str, calls: int) -> Rows:
    rows: Rows = []
    client = redis_client(url)
    async with client:
        with trio.fail_after(10):
            await wait_for_redis(client, url)
        await limiter_rows(rows, client, calls)
        await request_rows(rows, client, calls)
    return rows


def run_limiter(calls: int = 5000) -> list[dict[str, object]]:
    """The table, for ``make bench`` (``--only limiter``): a throwaway redis-server."""
    with redis_server() as url:
        rows = trio.run(measure_all, url, calls)
    return [{"what": name, "us_per_call": round(micros, 1)} for name, micros in rows]


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--redis-url", help="an existing Redis (default: a throwaway redis-server)")
    args.add_argument("--calls", type=int, default=5000, help="calls per Redis row (default 5000)")
    options = args.parse_args()
    if options.redis_url:
        rows = trio.run(measure_all, options.redis_url, options.calls)
    else:
        with redis_server() as url:
            rows = trio.run(measure_all, url, options.calls)
    print(f"{'what':<48} {'µs per call':>12}")
    for name, micros in rows:
        print(f"{name:<48} {micros:>12.1f}")


if __name__ == "__main__":
    main()
