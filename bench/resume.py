"""Resume after a drop, measured: replay throughput, and what cursors cost the live fan-out.

- **Replay**: ``clients`` connections subscribe to heads on the synthetic chain, each keeps the
  cursor of its last notification, and all of them drop; ``missed`` heads are published while they
  are away; then all reconnect at once with ``?resume=<cursor>`` and read until
  ``scopecast_resumed``. Reported: notifications replayed per second (all of them, from the first
  reconnect to the last ``scopecast_resumed``) and each client's time to resume (p50, p99). The
  clients run here, on the load core; the server on its own.
- **Cost**: the live fan-out (heads and logs, direct subscriptions) with cursors in every frame (as
  shipped) and with ``resume_window = 0`` (no cursors), in the same run.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any
from urllib.parse import quote

import trio

from bench.procs import Child, ChildError
from bench.stats import percentile
from bench.workloads import (
    FANOUT_SYSTEMS,
    Settings,
    run_fanout_system,
    start_scopecast,
)
from tests.support.rawws import RawWebSocket

_DIRECT = next(s for s in FANOUT_SYSTEMS if s.key == "scopecast-direct")
COST_SYSTEMS = [
    replace(_DIRECT, key="scopecast-direct-cursors", label="scopecast, direct, with cursors"),
    replace(
        _DIRECT,
        key="scopecast-direct-no-cursors",
        label="scopecast, direct, resume_window = 0",
        start=start_scopecast("synthetic", resume=False),
    ),
]
_SUBSCRIBE = {"jsonrpc": "2.0", "id": 1, "method": "eth_subscribe", "params": ["newHeads"]}
_HANDSHAKES = 100  # connections opening at once


async def _text(conn: RawWebSocket) -> bytes:
    """The next text message (pings are answered)."""
    while True:
        frame = await conn.frame()
        if frame is None:
            raise ChildError(f"the server closed a connection ({conn.close_code})")
        opcode, payload = frame
        if opcode == 0x1:
            return payload
        if opcode == 0x9:
            await conn.send_text(payload, opcode=0xA)


async def _subscribed(port: int, limit: trio.CapacityLimiter) -> RawWebSocket:
    async with limit:
        conn = await RawWebSocket.connect(port, "/ws/v3/dev")
    await conn.call(_SUBSCRIBE)
    await _text(conn)
    return conn


async def _resume(
    port: int,
    cursor: str,
    limit: trio.CapacityLimiter,
    started: float,
    done: list[tuple[int, float]],
) -> None:
    async with limit:
        conn = await RawWebSocket.connect(port, f"/ws/v3/dev?resume={quote(cursor)}")
    try:
        replayed = 0
        while True:
            message = await _text(conn)
            if b'"scopecast_resumed"' in message:
                params = json.loads(message)["params"]
                if not params["complete"] or params["replayed"] != replayed:
                    raise ChildError(f"resume incomplete: {params} after {replayed} notifications")
                done.append((replayed, time.monotonic() - started))
                return
            replayed += 1
    finally:
        conn.close()


async def _replay_round(server: Child, port: int, clients: int, missed: int) -> dict[str, Any]:
    limit = trio.CapacityLimiter(_HANDSHAKES)
    conns: list[RawWebSocket] = []
    cursors: list[str] = []

    async def open_one() -> None:
        conns.append(await _subscribed(port, limit))

    async with trio.open_nursery() as nursery:
        for _ in range(clients):
            nursery.start_soon(open_one)
    await trio.to_thread.run_sync(server.request, {"cmd": "burst", "kind": "heads", "count": 1})
    for conn in conns:
        cursors.append(json.loads(await _text(conn))["params"]["cursor"])
        conn.close()
    await trio.to_thread.run_sync(
        server.request, {"cmd": "burst", "kind": "heads", "count": missed}
    )
    done: list[tuple[int, float]] = []
    started = time.monotonic()
    async with trio.open_nursery() as nursery:
        for cursor in cursors:
            nursery.start_soon(_resume, port, cursor, limit, started, done)
    seconds = time.monotonic() - started
    replayed = sum(n for n, _ in done)
    recovery = sorted(t for _, t in done)
    return {
        "clients": clients,
        "missed": missed,
        "replayed": replayed,
        "seconds": round(seconds, 3),
        "notifications_per_s": round(replayed / seconds),
        "resumed_p50_ms": round(percentile(recovery, 0.5) * 1000, 1),
        "resumed_p99_ms": round(percentile(recovery, 0.99) * 1000, 1),
    }


def run_resume(settings: Settings, log: Callable[[str], None]) -> dict[str, Any]:
    """The replay figures and the fan-out with and without cursors."""
    clients = 1000
    missed = 20 if settings.quick else 100
    server = start_scopecast("synthetic")(settings, "resume-replay")
    try:
        port = server.wait_ready()
        rounds = [trio.run(_replay_round, server, port, clients, missed) for _ in range(2)]
    finally:
        server.stop()
    replay = max(rounds, key=lambda r: r["notifications_per_s"])
    log(
        f"  replay to {clients} reconnecting clients, {missed} missed each: "
        f"{replay['notifications_per_s']}/s, resumed p50 {replay['resumed_p50_ms']} ms "
        f"p99 {replay['resumed_p99_ms']} ms"
    )
    cost: dict[str, Any] = {}
    for system in COST_SYSTEMS:
        _memory, fanout = run_fanout_system(system, settings, log)
        cost[system.key] = {"label": system.label, **fanout}
    return {"replay": replay, "rounds": rounds, "fanout_cost": cost}
