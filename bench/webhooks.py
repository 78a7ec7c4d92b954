"""Webhooks, measured: deliveries per second to a local receiver (1 webhook, 100 webhooks), and
what they cost the live fan-out in the same run.

A broker (the dev chain idle, ``--block-time 0``) runs in this process; the receiver
(:mod:`bench.webhook_sink`, answering 204) and the followers (:mod:`bench.webhook_followers`) in
processes of their own. Synthetic heads are published on the broker's bus at ``RATE`` per second
for ``SECONDS`` (2 in the quick mode); ``CLIENTS`` (10 in the quick mode) WebSocket connections
follow ``newHeads`` and time each head from its publication. Each phase: 0 webhooks (the live
fan-out alone), 1, 100 webhooks on ``newHeads``. Reported: deliveries per second (from the first
publication to the last delivery acknowledged, or to the end of a 30 s drain), and the fan-out's
latency (p50, p99) beside the phase without webhooks; then the same heads in one burst, for the
deliveries per second a webhook (and 100) can reach.

``python -m bench.webhooks [--quick]`` prints the table; ``python -m bench --only webhooks`` (and
``make bench``) runs it in a process of its own, the broker pinned to the server's CPUs and the
receiver and followers to the load generator's, and writes it to docs/benchmarks/README.md
(:func:`webhooks_section`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import httpx
import trio
import trio.lowlevel

from adapters.evm.blocks import ChainBlock, HeadEvent
from bench.stats import percentile
from broker.compose import ServeOptions, open_broker
from broker.config import Config, ServerConfig

if TYPE_CHECKING:
    from bench.workloads import Settings

RATE = 200
SECONDS = 5
QUICK_SECONDS = 2
CLIENTS = 50
#: Fewer followers in the quick mode: on a busy machine 50 trio-websocket clients in one process
#: fall behind 200 heads a second, and their lag, not the broker's, becomes the latency measured.
QUICK_CLIENTS = 10
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


async def _count(client: httpx.AsyncClient, sink: str) -> int:
    return int((await client.get(f"{sink}/count")).text)


async def _phase(
    hooks: int,
    sink: str,
    first_number: int,
    *,
    seconds: int,
    clients: int = CLIENTS,
    burst: bool = False,
    load_cpus: set[int] | None = None,
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
                str(clients),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert followers.stdout is not None
        assert followers.stdin is not None
        if load_cpus:
            os.sched_setaffinity(followers.pid, load_cpus)
        said = b""
        while b"ready\n" not in said:
            said += await followers.stdout.receive_some(64)
        before = await _count(http, sink)
        began = time.monotonic()
        events = RATE * seconds
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
        "fanout_p50_ms": round(percentile(latencies, 0.5) * 1000, 2),
        "fanout_p99_ms": round(percentile(latencies, 0.99) * 1000, 2),
        "notifications": len(latencies),
    }


async def run(
    seconds: int = SECONDS, clients: int = CLIENTS, load_cpus: set[int] | None = None
) -> list[dict[str, Any]]:
    """Every phase, in order; ``load_cpus``: where the receiver and the followers run."""
    sink_process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "bench.webhook_sink"], stdout=subprocess.PIPE
    )
    try:
        if load_cpus:
            os.sched_setaffinity(sink_process.pid, load_cpus)
        assert sink_process.stdout is not None
        line = b""
        while not line.endswith(b"\n"):
            line += await sink_process.stdout.receive_some(64)
        sink = f"http://127.0.0.1:{line.decode().strip()}"
        rows = []
        phases = [(0, False), (1, False), (100, False), (1, True), (100, True)]
        for phase, (hooks, burst) in enumerate(phases):
            first = 1_000_000 * (phase + 1)
            rows.append(
                await _phase(
                    hooks,
                    sink,
                    first,
                    seconds=seconds,
                    clients=clients,
                    burst=burst,
                    load_cpus=load_cpus,
                )
            )
        return rows
    finally:
        sink_process.kill()
        await sink_process.wait()


def run_webhooks(settings: Settings, log: Callable[[str], None]) -> dict[str, Any]:
    """The webhooks workload for ``python -m bench``: in a process of its own pinned to the
    server's CPUs (its receiver and followers to the load generator's)."""
    seconds = QUICK_SECONDS if settings.quick else SECONDS
    clients = QUICK_CLIENTS if settings.quick else CLIENTS
    command = [
        sys.executable,
        "-m",
        "bench.webhooks",
        "--json",
        "--seconds",
        str(seconds),
        "--clients",
        str(clients),
        "--load-cpus",
        ",".join(map(str, sorted(settings.load_cpus))),
    ]
    before = [round(x, 2) for x in os.getloadavg()]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        check=False,
        preexec_fn=lambda: os.sched_setaffinity(0, settings.server_cpus),
    )
    (settings.run_dir / "webhooks.log").write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        raise RuntimeError(f"bench.webhooks failed: see {settings.run_dir / 'webhooks.log'}")
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    for row in rows:
        log(
            f"  webhooks: {row['mode']} {row['webhooks']}: {row['deliveries_per_s']} deliveries/s, "
            f"fan-out p50 {row['fanout_p50_ms']} ms"
        )
    return {
        "rate": RATE,
        "seconds": seconds,
        "clients": clients,
        "load_average": {"start": before, "end": [round(x, 2) for x in os.getloadavg()]},
        "rows": rows,
    }


def _table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| heads | webhooks | deliveries | deliveries/s | fan-out p50 ms | fan-out p99 ms |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['mode']} | {row['webhooks']} "
            f"| {row['delivered']:,}/{row['events'] * row['webhooks']:,} "
            f"| {row['deliveries_per_s']:,} | {row['fanout_p50_ms']} | {row['fanout_p99_ms']} |"
        )
    return lines


def webhooks_section(webhooks: dict[str, Any] | None) -> list[str]:
    """The README's section on webhooks (deliveries per second, their cost to the fan-out)."""
    if not webhooks:
        return []
    rows = webhooks["rows"]
    paced = {row["webhooks"]: row for row in rows if row["mode"] == "paced"}
    load = webhooks["load_average"]
    lines = [
        "",
        "## Webhooks: deliveries, and their cost to the live fan-out",
        "",
        f"A broker in one process (the dev chain idle) pinned to the server's CPU delivers "
        f"webhooks on `newHeads` to a receiver (`bench/webhook_sink.py`, 204 on kept-alive "
        f"connections) while {webhooks['clients']} WebSocket clients "
        "(`bench/webhook_followers.py`) follow `newHeads` on it; the receiver and the clients run on "
        f"the load generator's CPU. {webhooks['rate'] * webhooks['seconds']:,} synthetic heads are "
        f"published on the broker's bus, paced at {webhooks['rate']} per second (the live "
        "fan-out's latency, from publication to a client, with 0, 1 and 100 webhooks running), "
        "then in one burst (the deliveries per second webhooks reach). Every delivery is signed, "
        "in order per webhook, one attempt at a time per webhook; deliveries per second run from "
        "the first publication to the last delivery acknowledged (or a 30 s drain). "
        f"`python -m bench --only webhooks`; load average {load['start']} at its start, "
        f"{load['end']} at its end.",
        "",
        *_table(rows),
    ]
    if 0 in paced and 1 in paced and 100 in paced:
        alone, one, hundred = paced[0], paced[1], paced[100]
        lines += [
            "",
            f"What webhooks cost the live fan-out at {webhooks['rate']} heads per second, in the "
            f"same process: p50 {alone['fanout_p50_ms']} ms without webhooks, "
            f"{one['fanout_p50_ms']} ms with 1, {hundred['fanout_p50_ms']} ms with 100 (p99 "
            f"{alone['fanout_p99_ms']}, {one['fanout_p99_ms']}, {hundred['fanout_p99_ms']} ms). "
            "With Redis the webhooks are delivered by the process holding their lease (a "
            "worker), not by the web processes holding the dapps' connections, so their fan-out "
            "does not pay for them.",
        ]
    lines += [
        "",
        "A webhook sends one attempt at a time, in order, over one kept-alive connection: alone "
        "with a backlog (the burst rows) its rate is bounded by the round trip to the receiver. "
        f"When heads times webhooks ask more than one process delivers ({webhooks['rate']} heads "
        f"per second to 100 webhooks is {webhooks['rate'] * 100:,} deliveries per second), the "
        "webhooks fall behind, their backlogs growing up to `webhook_backlog` each, while the "
        "live fan-out goes on; the deliveries column counts what arrived within the drain.",
    ]
    return lines


def main(argv: list[str] | None = None) -> None:
    cli = argparse.ArgumentParser(prog="python -m bench.webhooks", description=__doc__)
    cli.add_argument(
        "--quick", action="store_true", help=f"{QUICK_SECONDS} s of heads, not {SECONDS}"
    )
    cli.add_argument("--seconds", type=int, help="seconds of paced heads")
    cli.add_argument(
        "--clients", type=int, help=f"WebSocket followers ({CLIENTS}; quick: {QUICK_CLIENTS})"
    )
    cli.add_argument("--json", action="store_true", help="print the rows as JSON (one line)")
    cli.add_argument("--load-cpus", help="CPUs for the receiver and the followers (0,1,...)")
    args = cli.parse_args(argv)
    seconds = args.seconds or (QUICK_SECONDS if args.quick else SECONDS)
    clients = args.clients or (QUICK_CLIENTS if args.quick else CLIENTS)
    load_cpus = {int(c) for c in args.load_cpus.split(",")} if args.load_cpus else None
    rows = trio.run(run, seconds, clients, load_cpus)
    if args.json:
        print(json.dumps(rows), flush=True)
        return
    print(
        f"webhooks bench: {RATE * seconds} heads paced at {RATE}/s, or in a burst; "
        f"{clients} WebSocket followers"
    )
    print("\n".join(_table(rows)))


if __name__ == "__main__":
    main(sys.argv[1:])
