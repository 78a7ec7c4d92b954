"""Webhooks, measured: deliveries per second to a local receiver (1 webhook, 100 webhooks), and
what they cost the live fan-out in the same run.

A broker (the dev chain idle, ``--block-time 0``) runs in this process; the receiver
(:mod:`bench.webhook_sink`, answering 204) and the followers (:mod:`bench.webhook_followers`) in
processes of their own. Synthetic heads are published
on the broker's bus at ``RATE`` per second for ``SECONDS``; ``CLIENTS`` WebSocket connections
follow ``newHeads`` and time each head from its publication. Each phase: 0 webhooks (the live
fan-out alone), 1, 100 webhooks on ``newHeads``. Reported: deliveries per second (from the first
publication to the last delivery acknowledged, or to the end of a 30 s drain), and the fan-out's
latency (p50, p99) beside the phase without webhooks; then the same heads in one burst, for the
deliveries per second a webhook (and 100) can reach. ``python -m bench.webhooks``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

import httpx
import trio
import trio.lowlevel

from adapters.evm.blocks import ChainBlock, HeadEvent
from broker.compose import ServeOptions, open_broker
from broker.config import Config, ServerConfig

RATE = 200
SECONDS = 5
CLIENTS = 50
DRAIN = 30.0
DEV = "eip155:1337"


def _head(number: int) -> HeadEvent:
    block_hash = "0x" + f"{number:064x}"
    header = json.dumps(
        {
            "number": hex(number),
            "hash": block_hash,
            "parentHash": "0x" + f"{number - 1:064x}",
            "t": time.monotonic(),
        }
    ).encode()
    return HeadEvent(DEV, ChainBlock(number, block_hash, "0x" + f"{number - 1:064x}", header))


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return (
        ordered[min(len(ordered) - 1, int(share * len(ordered)))] * 1000
        if ordered
        else float("nan")
    )


async def _count(client: httpx.AsyncClient, sink: str) -> int:
    return int((await client.get(f"{sink}/count")).text)


async def _phase(
    hooks: int, sink: str, first_number: int, *, burst: bool = False
) -> dict[str, Any]:
    config = Config(server=ServerConfig(webhook_backlog=1_000_000))
    async with (
        open_broker(config, ServeOptions(block_time=0), host="127.0.0.1", port=0) as broker,
        httpx.AsyncClient() as http,
        trio.open_nursery() as nursery,
    ):
        base = f"http://127.0.0.1:{broker.port}"
        for _ in range(hooks):
            reply = await http.post(
                f"{base}/admin",
                headers={"authorization": "Bearer dev"},
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "admin_createWebhook",
                    "params": {
                        "url": f"{sink}/hook",
                        "chain": DEV,
                        "allowPrivate": True,
                        "subscription": {"method": "eth_subscribe", "params": ["newHeads"]},
                    },
                },
            )
            assert "result" in reply.json(), reply.text
        followers = await trio.lowlevel.open_process(
            [
                sys.executable,
                "-m",
                "bench.webhook_followers",
                f"ws://127.0.0.1:{broker.port}/ws/v3/dev",
                str(CLIENTS),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert followers.stdout is not None
        assert followers.stdin is not None
        said = b""
        while b"ready\n" not in said:
            said += await followers.stdout.receive_some(64)
        before = await _count(http, sink)
        began = time.monotonic()
        events = RATE * SECONDS
        for n in range(events):
            await broker.bus.publish(_head(first_number + n))
            if not burst:
                await trio.sleep(1 / RATE)  # paced (a little slower than RATE: the sleep's floor)
            elif n % 100 == 0:
                await trio.lowlevel.checkpoint()
        published = time.monotonic() - began
        wanted = events * hooks
        delivered = 0
        with trio.move_on_after(DRAIN):
            while hooks and delivered < wanted:
                delivered = await _count(http, sink) - before
                await trio.sleep(0.05)
        elapsed = time.monotonic() - began
        await followers.stdin.aclose()
        output = said.split(b"ready\n", 1)[1]
        while chunk := await followers.stdout.receive_some(1 << 20):
            output += chunk
        await followers.wait()
        latencies = json.loads(output)
        nursery.cancel_scope.cancel()
    return {
        "mode": "burst" if burst else "paced",
        "webhooks": hooks,
        "events": events,
        "published_s": round(published, 2),
        "delivered": delivered,
        "deliveries_per_s": round(delivered / elapsed) if hooks else 0,
        "fanout_p50_ms": round(_percentile(latencies, 0.5), 2),
        "fanout_p99_ms": round(_percentile(latencies, 0.99), 2),
        "notifications": len(latencies),
    }


async def run() -> list[dict[str, Any]]:
    sink_process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "bench.webhook_sink"], stdout=subprocess.PIPE
    )
    try:
        assert sink_process.stdout is not None
        line = b""
        while not line.endswith(b"\n"):
            line += await sink_process.stdout.receive_some(64)
        sink = f"http://127.0.0.1:{line.decode().strip()}"
        rows = []
        phases = [(0, False), (1, False), (100, False), (1, True), (100, True)]
        for phase, (hooks, burst) in enumerate(phases):
            rows.append(await _phase(hooks, sink, 1_000_000 * (phase + 1), burst=burst))
        return rows
    finally:
        sink_process.kill()
        await sink_process.wait()


def main() -> None:
    rows = trio.run(run)
    print(
        f"webhooks bench: {RATE * SECONDS} heads paced at {RATE}/s, or in a burst; "
        f"{CLIENTS} WebSocket followers"
    )
    print("| heads | webhooks | deliveries | deliveries/s | fan-out p50 ms | fan-out p99 ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['mode']} | {row['webhooks']} | {row['delivered']}/{row['events'] * row['webhooks']} "
            f"| {row['deliveries_per_s']} | {row['fanout_p50_ms']} | {row['fanout_p99_ms']} |"
        )


if __name__ == "__main__":
    main()
