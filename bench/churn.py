"""The churn workload: garbage-collector pauses in a server holding dapp connections that come and go.

What a web process of the soak (``python -m soak``) lives through, in one bench server on the
server core: ``connections`` dapp connections (an ``Origin`` each, a session, a ``newHeads``
subscription in it), then, every second, ``churn`` of them closed and as many opened again and a
head fanned out to all. Every collection is timed inside the server (``gc.callbacks``,
:mod:`bench.gcclock`), in wall time and in the thread's CPU time (on a shared machine the wall
time also counts the time the server was not scheduled). With ``--before TREE`` scopecast as built
from that tree holds the same connections and takes turns with this one, round by round, in the
same run. The pauses while the connections first open are kept apart from the churn's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.burst import prepare_before
from bench.procs import Child, ChildError
from bench.stats import percentile
from bench.workloads import (
    FANOUT_SYSTEMS,
    LoadGenerators,
    Settings,
    _settle,
    start_scopecast,
)

#: The soak's web process: 2,500 connections, 50 a second closed and opened again, a head a second.
CONNECTIONS = 2500
CHURN = 50
#: A pause past this is what the target forbids (ms).
LONG_MS = 20.0


class _Churned:
    """One server under the churn, and the pauses it made."""

    def __init__(self, key: str, label: str, settings: Settings, tree: Path | None) -> None:
        self.key = key
        self.label = label
        self.system = next(s for s in FANOUT_SYSTEMS if s.key == "scopecast-dapp")
        self.server: Child = start_scopecast("synthetic", tree=tree)(settings, f"churn-{key}")
        self.port = self.server.wait_ready()
        self.loadgens = LoadGenerators(settings, f"churn-{key}")
        self.ramp: list[tuple[int, float, float]] = []
        self.pauses: list[tuple[int, float, float]] = []
        self.seconds = 0.0

    def open(self, count: int) -> None:
        self.server.request({"cmd": "gc_pauses"})
        connected = self.loadgens.connect(self.port, self.system, count)
        if connected["failed"]:
            raise ChildError(
                f"churn {self.key}: {connected['failed']} failed {connected['errors']}"
            )
        _settle(self.server, count)
        self.ramp += self.server.request({"cmd": "gc_pauses"})["pauses"]

    def round(self, seconds: float, churn: int) -> None:
        self.server.request({"cmd": "gc_pauses"})
        started = time.monotonic()
        tick = started
        while tick - started < seconds:
            self.loadgens.close(churn)
            connected = self.loadgens.connect(self.port, self.system, churn)
            if connected["failed"]:
                raise ChildError(f"churn {self.key}: {connected['errors']}")
            self.server.request({"cmd": "burst", "kind": "heads", "count": 1})
            tick += 1.0
            time.sleep(max(0.0, tick - time.monotonic()))
        self.seconds += time.monotonic() - started
        self.pauses += self.server.request({"cmd": "gc_pauses"})["pauses"]

    def figures(self) -> dict[str, Any]:
        return {"label": self.label, "ramp": _summary(self.ramp), "churn": _summary(self.pauses)}

    def stop(self) -> None:
        self.loadgens.stop()
        self.server.stop()


def _summary(pauses: list[tuple[int, float, float]]) -> dict[str, Any]:
    wall = [p for _, p, _ in pauses]
    cpu = [c for _, _, c in pauses]
    generations = []
    for generation in range(3):
        mine = [(p, c) for g, p, c in pauses if g == generation]
        generations.append(
            {
                "collections": len(mine),
                "max_ms": _ms(max((p for p, _ in mine), default=0.0)),
                "max_cpu_ms": _ms(max((c for _, c in mine), default=0.0)),
            }
        )
    return {
        "collections": len(pauses),
        "p50_ms": _ms(percentile(wall, 0.5)) if wall else None,
        "p99_ms": _ms(percentile(wall, 0.99)) if wall else None,
        "max_ms": _ms(max(wall, default=0.0)),
        "p99_cpu_ms": _ms(percentile(cpu, 0.99)) if cpu else None,
        "max_cpu_ms": _ms(max(cpu, default=0.0)),
        "over_20ms_cpu": sum(1 for c in cpu if c * 1000 > LONG_MS),
        "generations": generations,
        "longest_cpu_ms": sorted((_ms(c) or 0.0 for c in cpu), reverse=True)[:20],
    }


def _ms(value: float) -> float:
    return round(value * 1000, 2)


def run_churn(
    settings: Settings,
    log: Callable[[str], None],
    *,
    before: Path | None = None,
    connections: int = CONNECTIONS,
    churn: int = CHURN,
) -> dict[str, Any]:
    """Each system's GC pauses as its connections open, then under the churn (rounds alternating
    between systems)."""
    rounds = 2 if settings.quick else 4
    seconds = 15.0 if settings.quick else 30.0
    wanted = [("scopecast", "scopecast", None)]
    if before is not None:
        wanted.append(("scopecast-before", "scopecast before", prepare_before(before)))
    running: list[_Churned] = []
    try:
        for key, label, tree in wanted:
            running.append(_Churned(key, label, settings, tree))
            log(f"  churn: {label}: opening {connections} dapp connections")
            running[-1].open(connections)
        for index in range(rounds):
            order = running[index % len(running) :] + running[: index % len(running)]
            for each in order:
                each.round(seconds, churn)
                found = _summary(each.pauses)
                log(
                    f"  churn {each.label} round {index + 1}: {found['collections']} collections,"
                    f" max {found['max_ms']} ms ({found['max_cpu_ms']} ms CPU) so far"
                )
    finally:
        for each in running:
            each.stop()
    return {
        "connections": connections,
        "churn_per_second": churn,
        "seconds_each": round(running[0].seconds, 1) if running else 0.0,
        "systems": {each.key: each.figures() for each in running},
    }


def churn_section(results: dict[str, Any] | None) -> list[str]:
    """The README's section on the churn workload."""
    if not results:
        return []
    lines = [
        "",
        "## GC pauses under churn",
        "",
        f"{results['connections']:,} dapp connections (an `Origin` each, a session, a `newHeads` "
        f"subscription) held by one server, then for {results['seconds_each']} s, every second, "
        f"{results['churn_per_second']} of them closed and as many opened again and a head fanned "
        "out to all (a soak web process's load, `bench/churn.py`). Each collection timed inside "
        "the server (`gc.callbacks`), in wall time and in the thread's CPU time (the machine is "
        "shared: the wall time also counts waits for a core). *Opening* is while the connections "
        "first open; a system marked *before* is the tree `--before` named, in the same run.",
        "",
        "| system | phase | collections | p50 ms | p99 ms | max ms | p99 CPU ms | max CPU ms "
        "| over 20 ms CPU | max CPU ms by generation (0 / 1 / 2) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for system in results["systems"].values():
        for phase, name in (("ramp", "opening"), ("churn", "churn")):
            f = system[phase]
            generations = " / ".join(
                f"{g['max_cpu_ms']} ({g['collections']})" for g in f["generations"]
            )
            lines.append(
                f"| {system['label']} | {name} | {f['collections']} | {f['p50_ms']} "
                f"| {f['p99_ms']} | {f['max_ms']} | {f['p99_cpu_ms']} | {f['max_cpu_ms']} "
                f"| {f['over_20ms_cpu']} | {generations} |"
            )
    return lines
