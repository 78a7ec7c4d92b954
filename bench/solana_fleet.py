"""Solana slot fan-out through Redis to two web processes: the deployment production runs, measured
beside the in-process figure of :mod:`bench.solana`.

Real OS processes, every one pinned to the server core: a ``scopecast serve --block-time 0`` node
(its ``solana`` dev network plays the Solana node), a ``redis-server`` of its own, one ``scopecast
worker`` (it leads the chain: the ``solana-upstream`` adapter follows the node's slots and publishes
them on the chain's Redis Stream) and two ``scopecast serve --role web`` processes (each reads the
stream and fans the slots out), all from one config naming the node as the network's upstream. The
load generator opens half of the ``slotSubscribe`` subscribers on each web process.

Each event is a ``scopecast_advanceSlots`` call on the node (over HTTP, one after the other); its
publish time is the moment the call started, so the latency is slot-to-last-subscriber: the node's
slot, its PubSub notification, the worker's ``getBlock``, Redis, the web process's fan-out and the
socket. The server CPU is that of all five processes.
"""

from __future__ import annotations

import datetime
import functools
import http.client
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adapters.solana import dev_chain_id
from bench.procs import Child, ChildError, cpu_seconds, free_port
from bench.workloads import PYTHON, FanoutSystem, LoadGenerators, Settings, measure_bursts

CHAIN = dev_chain_id()
NETWORK = "solana"
LABEL = "scopecast, Solana through Redis to two web processes (slotNotification)"
SYSTEM = FanoutSystem(
    key="scopecast-solana-fleet",
    label=LABEL,
    memory_label="-",
    start=lambda settings, name: _started_by_the_fleet(),
    path=f"/{NETWORK}/ws/v3/dev",
    method="slotNotification",
    idle_script=[],
    subscribe={"slots": [["slotSubscribe", []]]},
    unsubscribe={"slots": [["slotUnsubscribe", ["$sub"]]]},
    kinds=("slots",),
)
#: What the worker logs once it leads the chain and follows the node's slots.
LEADING = "leading; publishing the family's events"
FOLLOWING = "following slots over upstream"


def _started_by_the_fleet() -> Child:
    raise ChildError("the fleet's processes are started by Fleet.start")


def scopecast() -> str:
    return str(Path(PYTHON).parent / "scopecast")


def fleet_config(node_port: int) -> str:
    """The config every process of the fleet reads: one Solana network, the node its upstream."""
    base = f"127.0.0.1:{node_port}/{NETWORK}"
    return (
        f"[networks.{NETWORK}]\n"
        f'chain = "{CHAIN}"\n'
        f'upstreams = [{{http = "http://{base}/v3/dev", ws = "ws://{base}/ws/v3/dev"}}]\n'
    )


def _healthy(port: int) -> bool:
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        connection.request("GET", "/healthz")
        return connection.getresponse().status == 200
    except OSError:
        return False


def wait_until(what: str, ready: Callable[[], bool], child: Child, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if child.proc.poll() is not None:
            raise ChildError(f"{child.name} exited ({child.proc.returncode}): {child.log_path}")
        if time.monotonic() > deadline:
            raise ChildError(f"{what}: not in {timeout:.0f} s (see {child.log_path})")
        time.sleep(0.2)


@dataclass
class Fleet:
    """The fleet's processes, started in order; :meth:`stop` stops every one started."""

    settings: Settings
    children: dict[str, Child] = field(default_factory=dict)
    node_port: int = 0
    web_ports: list[int] = field(default_factory=list)

    def _child(self, name: str, argv: list[str], level: str = "WARNING") -> Child:
        child = Child(
            name,
            argv,
            cpus=self.settings.server_cpus,
            log_dir=self.settings.run_dir,
            env={"SCOPECAST_LOG_LEVEL": level},
            controlled=False,
        )
        self.children[name] = child
        return child

    def start(self, webs: int = 2) -> None:
        redis_port = free_port()
        self._child(
            "fleet-redis",
            [
                *("redis-server", "--port", str(redis_port), "--bind", "127.0.0.1"),
                *("--save", "", "--appendonly", "no", "--dir", str(self.settings.run_dir)),
            ],
        )
        self.node_port = free_port()
        node = self._child(
            "fleet-node",
            [
                *(scopecast(), "serve", "--host", "127.0.0.1", "--port", str(self.node_port)),
                *("--block-time", "0"),
            ],
        )
        config = self.settings.run_dir / "solana-fleet.toml"
        config.write_text(fleet_config(self.node_port))
        wait_until("the node", lambda: _healthy(self.node_port), node)
        redis_url = f"redis://127.0.0.1:{redis_port}/0"
        shared = ["--config", str(config), "--redis-url", redis_url]
        worker = self._child("fleet-worker", [scopecast(), "worker", *shared], level="INFO")

        def following() -> bool:
            text = worker.log_path.read_text(errors="replace")
            return LEADING in text and FOLLOWING in text

        # it leads once Redis answers: the redis-server is up too
        wait_until("the worker leading the chain", following, worker)
        for index in range(webs):
            port = free_port()
            web = self._child(
                f"fleet-web{index}",
                [
                    *(scopecast(), "serve", "--role", "web"),
                    *("--host", "127.0.0.1", "--port", str(port), *shared),
                ],
            )
            wait_until(f"web process {index}", functools.partial(_healthy, port), web)
            self.web_ports.append(port)

    def cpu(self) -> dict[str, float]:
        return {name: cpu_seconds(child.pid) for name, child in self.children.items()}

    def stop(self) -> None:
        for child in reversed(list(self.children.values())):
            child.stop()


class SlotMaker:
    """``scopecast_advanceSlots`` on the node, one call a slot, over one keep-alive connection."""

    def __init__(self, port: int) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.body = json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "scopecast_advanceSlots", "params": []}
        )

    def __call__(self, count: int) -> list[float]:
        """``count`` slots; the time each call started (``time.monotonic()``)."""
        started = []
        for _ in range(count):
            started.append(time.monotonic())
            self.connection.request(
                "POST",
                f"/{NETWORK}/v3/dev",
                body=self.body,
                headers={"Content-Type": "application/json"},
            )
            reply = json.loads(self.connection.getresponse().read())
            if "error" in reply:
                raise ChildError(f"scopecast_advanceSlots: {reply['error']}")
        return started


def split(total: int, parts: int) -> list[int]:
    """``total`` subscribers over ``parts`` web processes, as evenly as can be."""
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def run_solana_fleet(settings: Settings, log: Callable[[str], None]) -> dict[str, Any]:
    """The fan-out of slots at the largest size, split over two web processes."""
    size = max(settings.sizes)
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    fleet = Fleet(settings)
    loadgens: LoadGenerators | None = None
    try:
        fleet.start()
        log(f"  fleet up: node {fleet.node_port}, web processes {fleet.web_ports}")
        loadgens = LoadGenerators(settings, "solana-fleet")
        for port, share in zip(fleet.web_ports, split(size, len(fleet.web_ports)), strict=True):
            connected = loadgens.connect(port, SYSTEM, share)
            if connected["failed"]:
                raise ChildError(f"connect to {port}: {connected['errors']}")
        assert SYSTEM.subscribe is not None
        subscribed = loadgens.script(SYSTEM.subscribe["slots"])
        if subscribed["failed"] or subscribed["ready"] != size:
            raise ChildError(f"slotSubscribe: {subscribed}")
        cpu_before = fleet.cpu()
        figures = measure_bursts(
            fleet.children["fleet-web0"],
            loadgens,
            kind="slots",
            method="slotNotification",
            subscribers=size,
            settings=settings,
            trigger=SlotMaker(fleet.node_port),
            server_clock=lambda: sum(fleet.cpu().values()),
        )
        cpu_after = fleet.cpu()
    finally:
        if loadgens is not None:
            loadgens.stop()
        fleet.stop()
    log(
        f"  solana fleet slots x{size}: {figures['notifications_per_s']}/s"
        f" ({figures['notifications_per_server_cpu_s']}/server-CPU-s)"
        f" p50 {figures['p50_ms']} ms p99 {figures['p99_ms']} ms"
        + (f" PROBLEMS {figures['problems']}" if figures["problems"] else "")
    )
    return {
        "label": LABEL,
        "mode": "quick" if settings.quick else "full",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "load_average": [load_at_start, [round(x, 2) for x in os.getloadavg()]],
        "web_processes": len(fleet.web_ports),
        "sizes": [figures],
        "cpu_seconds": {
            name.removeprefix("fleet-"): round(cpu_after[name] - cpu_before[name], 2)
            for name in cpu_before
        },
    }
