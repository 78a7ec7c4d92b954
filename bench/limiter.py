"""``python -m bench.limiter``: what a key's rate limit costs per request.

Prints one table: the limiter alone (in memory; in Redis, one round trip, one task at a time and
32 at once; a bare PING beside it, the client's own round trip) and a whole request answered by the broker (``Broker.respond``, no sockets: the HTTP
server's own cost is ``make bench``'s) for a key without a table, then with a rate counted in memory
and in Redis. The rate is set high enough that every call is admitted (the cost of saying yes).
A throwaway ``redis-server`` is started on a free port (``--redis-url URL`` uses another) and
stopped by its pid.

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
from broker.cli import build_broker, parser
from broker.config import Config
from broker.http import HttpRequest, HttpResponse
from broker.redis_bus import redis_client, wait_for_redis

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


async def measure(url: str, calls: int) -> list[tuple[str, float]]:
    rows: list[tuple[str, float]] = []
    memory = MemoryLimiter()
    rows.append(("limiter, memory", await per_call(lambda: memory.take("k", RATE, 1), calls * 10)))
    client = redis_client(url)
    async with client:
        with trio.fail_after(10):
            await wait_for_redis(client, url)
        rows.append(("Redis PING (1 task), for scale", await per_call(client.ping, calls)))
        redis = RedisLimiter(client, f"bench-{os.getpid()}")
        rows.append(
            ("limiter, Redis (1 task)", await per_call(lambda: redis.take("k", RATE, 1), calls))
        )
        rows.append(
            (
                "limiter, Redis (32 tasks)",
                await per_call(lambda: redis.take("k", RATE, 1), calls, 32),
            )
        )
        config = msgspec.convert(
            {"keys": {"limited": {"requests_per_second": RATE.per_second, "burst": RATE.burst}}},
            Config,
        )
        broker = build_broker(
            parser().parse_args(["serve", "--block-time", "0", "--api-key", "plain"]), config
        )
        await broker.start_adapters()
        access = broker.access
        assert access is not None

        async def respond(key: str) -> None:
            response = await broker.respond(request(key))
            assert isinstance(response, HttpResponse)
            assert response.status == 200, response.body

        rows.append(
            ("request, key without a table", await per_call(lambda: respond("plain"), calls * 4))
        )
        rows.append(
            ("request, rate in memory", await per_call(lambda: respond("limited"), calls * 4))
        )
        access.limiter = redis
        rows.append(("request, rate in Redis", await per_call(lambda: respond("limited"), calls)))
        for network in broker.networks:
            await network.adapter.aclose()
    return rows


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--redis-url", help="an existing Redis (default: a throwaway redis-server)")
    args.add_argument("--calls", type=int, default=5000, help="calls per Redis row (default 5000)")
    options = args.parse_args()
    if options.redis_url:
        rows = trio.run(measure, options.redis_url, options.calls)
    else:
        with redis_server() as url:
            rows = trio.run(measure, url, options.calls)
    print(f"{'what':<32} {'µs per call':>12}")
    for name, micros in rows:
        print(f"{name:<32} {micros:>12.1f}")


if __name__ == "__main__":
    main()
