"""The burst workload: many subscribers to one busy contract's logs, each transaction emitting B
logs, T transactions back to back (B x T frames per subscriber), and what else the server does
meanwhile.

Every system holds its subscribers at once and the trials alternate between them, round after
round (medians; the spread is in ``rounds``), so a machine shared with others weighs on each
alike. Per trial:

- deliveries per second: subscribers x B x T over the time from the first transaction to the last
  frame received;
- latency: from a transaction to its last log at the last subscriber (every transaction of every
  measured round; p99 of those);
- for scopecast, ``eth_blockNumber`` over HTTP from 16 keep-alive connections during the trial,
  each calling again 10 ms after its answer: the latency of the calls that were under way while
  the burst was (sent before the last frame, answered after the first transaction);
- for scopecast, every garbage collection's pause during the trial (``gc.callbacks``).

scopecast's transaction is a block of the synthetic chain with B ``Transfer`` logs of the token
(the broker's real ingestion, bus and hub); Node ``ws`` sends the same log payloads, B x T
``send`` calls per client, as the other peers do. ``--before TREE`` adds scopecast as built from
another source tree (``git archive REV | tar -x -C TREE``), run with this tree's bench: before and
after in one run.
"""

from __future__ import annotations

import json
import shutil
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.procs import ROOT, Child, ChildError, cpu_seconds
from bench.stats import percentile
from bench.workloads import (
    LOGS_PARAMS,
    PYTHON,
    SESSION_REQUEST,
    LoadGenerators,
    Settings,
    _settle,
    invoke,
    start_node,
)

HTTP_CLIENTS = 16
#: Each probe connection's pause between an answer and its next call: about 1,600 calls a second
#: in all, a probe rather than a load (the burst's figures stay comparable with Node's).
HTTP_INTERVAL = 0.01
BLOCK_NUMBER = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "eth_blockNumber", "params": []})


@dataclass(frozen=True)
class BurstSystem:
    key: str
    label: str
    start: Callable[[Settings, str], Child]
    method: str
    path: str
    script: list[list[Any]]
    origin: str | None = None
    #: scopecast: a block of B logs is one transaction; a peer sends each log on its own
    scopecast: bool = True


def _start_scopecast(tree: Path | None) -> Callable[[Settings, str], Child]:
    def start(settings: Settings, name: str) -> Child:
        argv = [PYTHON, "-m", "bench.server", "synthetic"]
        if not settings.gc_freeze:
            argv.append("--no-gc-freeze")
        return Child(name, argv, cpus=settings.server_cpus, log_dir=settings.run_dir, cwd=tree)

    return start


def _scopecast_systems(suffix: str, label: str, tree: Path | None) -> list[BurstSystem]:
    return [
        BurstSystem(
            key=f"scopecast-session{suffix}",
            label=f"scopecast{label}, session (wallet_notify)",
            start=_start_scopecast(tree),
            method="wallet_notify",
            path="/ws/v3/dev",
            script=[
                ["wallet_createSession", SESSION_REQUEST],
                invoke("eth_subscribe", LOGS_PARAMS),
            ],
            origin="https://dapp",
        ),
        BurstSystem(
            key=f"scopecast-direct{suffix}",
            label=f"scopecast{label}, direct (eth_subscription)",
            start=_start_scopecast(tree),
            method="eth_subscription",
            path="/ws/v3/dev",
            script=[["eth_subscribe", LOGS_PARAMS]],
        ),
    ]


def burst_systems(before: Path | None) -> list[BurstSystem]:
    """scopecast in both modes (and as built from ``before``, when given), and Node ``ws``."""
    systems = _scopecast_systems("", "", None)
    if before is not None:
        systems += _scopecast_systems("-before", " before", before)
    systems.append(
        BurstSystem(
            key="node-ws",
            label="Node ws 8.23 (send per client per log)",
            start=start_node,
            method="eth_subscription",
            path="/",
            script=[["eth_subscribe", LOGS_PARAMS]],
            scopecast=False,
        )
    )
    return systems


def prepare_before(tree: Path) -> Path:
    """``tree`` (another revision's source) with this tree's ``bench/`` in place of its own."""
    shutil.rmtree(tree / "bench", ignore_errors=True)
    shutil.copytree(ROOT / "bench", tree / "bench", ignore=shutil.ignore_patterns("node_modules"))
    modules = ROOT / "bench" / "peers" / "node" / "node_modules"
    if modules.exists():
        (tree / "bench" / "peers" / "node" / "node_modules").symlink_to(modules)
    return tree


class _Running:
    """One system under test: its server, its load generator and what was measured."""

    def __init__(self, system: BurstSystem, settings: Settings, subscribers: int) -> None:
        self.system = system
        self.server = system.start(settings, f"burst-{system.key}")
        self.port = self.server.wait_ready()
        self.loadgens = LoadGenerators(settings, f"burst-{system.key}")
        connected = self.loadgens.all(
            {
                "cmd": "connect",
                "port": self.port,
                "path": system.path,
                "count": subscribers,
                "script": system.script,
                "origin": system.origin,
                "window": 256,
                "sample_every": 500,
            }
        )[0]
        if connected["failed"]:
            raise ChildError(f"{system.key}: {connected['failed']} failed: {connected['errors']}")
        _settle(self.server, subscribers)
        self.rates: list[float] = []
        self.latencies: list[float] = []
        self.http: list[float] = []
        self.http_rounds: list[float] = []
        self.pauses: list[float] = []
        self.cpu_pauses: list[float] = []
        #: each generation's collections, longest pause and longest in CPU time
        self.generations = [(0, 0.0, 0.0), (0, 0.0, 0.0), (0, 0.0, 0.0)]
        self.cpu_rates: list[float] = []
        #: CPU seconds of the server and of the load generator, and the wall seconds, of the
        #: measured trials (from the first transaction to the last frame's arrival)
        self.cpu_totals = [0.0, 0.0, 0.0]
        self.problems: list[str] = []
        self.span = 10.0

    def stop(self) -> None:
        self.loadgens.stop()
        self.server.stop()


def _trial(
    running: _Running,
    probe: Child,
    *,
    subscribers: int,
    logs: int,
    transactions: int,
    measured: bool,
) -> None:
    system, server = running.system, running.server
    frames = logs * transactions
    group = logs if system.scopecast else 1
    armed = running.loadgens.all(
        {"cmd": "arm", "count": frames, "method": system.method, "timeout": 120, "group": group}
    )
    if armed[0]["armed"] != subscribers:
        running.problems.append(f"armed {armed[0]['armed']} of {subscribers}")
    if system.scopecast:
        server.request({"cmd": "gc_pauses"})
        probe.send(
            {
                "cmd": "http",
                "port": running.port,
                "path": "/v3/dev",
                "body": BLOCK_NUMBER,
                "clients": HTTP_CLIENTS,
                "warmup": 0.0,
                "seconds": running.span * 1.5 + 1.0,
                "samples": True,
                "interval": HTTP_INTERVAL,
            }
        )
        time.sleep(0.3)  # the probe's connections open and its calls flow
    cpu0, load0 = cpu_seconds(server.pid), running.loadgens.cpu()
    if system.scopecast:
        published = server.request({"cmd": "burst", "kind": f"logs:{logs}", "count": transactions})
        starts = published["published"]
    else:
        published = server.request({"cmd": "burst", "kind": "logs", "count": frames})
        starts = published["published"][::logs]  # a transaction: its first log's send
    reply = running.loadgens.children[0].receive(180)
    cpu1, load1, wall1 = cpu_seconds(server.pid), running.loadgens.cpu(), time.monotonic()
    problems = reply["problems"] + reply["lost"]
    if reply["missing"]:
        problems.append(f"{reply['missing']} connections missed frames")
    running.problems.extend(problems)
    last = reply["last"]
    finished = max(last)
    if system.scopecast:
        answered = probe.receive(running.span * 1.5 + 60)
        gc_pauses = server.request({"cmd": "gc_pauses"})["pauses"]
        during = [
            done - sent
            for sent, done in answered["samples"]
            if sent <= finished and done >= starts[0]
        ]
        if measured:
            running.http.extend(during)
            if during:
                running.http_rounds.append(percentile(during, 0.99))
            running.pauses.extend(pause for _, pause, _ in gc_pauses)
            running.cpu_pauses.extend(cpu for _, _, cpu in gc_pauses)
            for generation, pause, cpu in gc_pauses:
                count, longest, longest_cpu = running.generations[generation]
                running.generations[generation] = (
                    count + 1,
                    max(longest, pause),
                    max(longest_cpu, cpu),
                )
    if min(last) == 0 or not measured:
        return
    running.span = finished - starts[0]
    deliveries = subscribers * frames
    running.rates.append(deliveries / running.span)
    running.cpu_rates.append(deliveries / max(cpu1 - cpu0, 1e-9))
    totals = running.cpu_totals
    totals[0] += cpu1 - cpu0
    totals[1] += load1 - load0
    totals[2] += wall1 - starts[0]
    running.latencies.extend(last[(t + 1) * logs - 1] - started for t, started in enumerate(starts))


def _ms(value: float | None) -> float | None:
    return round(value * 1000, 1) if value is not None else None


def _figures(running: _Running, subscribers: int) -> dict[str, Any]:
    found: dict[str, Any] = {
        "label": running.system.label,
        "subscribers": subscribers,
        "rounds": len(running.rates),
        "deliveries_per_s": round(statistics.median(running.rates)) if running.rates else None,
        "deliveries_per_s_rounds": [round(r) for r in running.rates],
        "deliveries_per_server_cpu_s": round(statistics.median(running.cpu_rates))
        if running.cpu_rates
        else None,
        "p50_ms": _ms(percentile(running.latencies, 0.5)) if running.latencies else None,
        "p99_ms": _ms(percentile(running.latencies, 0.99)) if running.latencies else None,
        "max_ms": _ms(max(running.latencies)) if running.latencies else None,
        "server_cpu_share": round(running.cpu_totals[0] / running.cpu_totals[2], 2)
        if running.cpu_totals[2]
        else None,
        "loadgen_cpu_share": round(running.cpu_totals[1] / running.cpu_totals[2], 2)
        if running.cpu_totals[2]
        else None,
        "problems": running.problems[:5],
    }
    if running.system.scopecast:
        http = running.http
        found["http_during_burst"] = {
            "calls": len(http),
            "p50_ms": _ms(percentile(http, 0.5)) if http else None,
            "p99_ms": _ms(percentile(http, 0.99)) if http else None,
            "max_ms": _ms(max(http)) if http else None,
            "p99_ms_rounds": [_ms(v) for v in running.http_rounds],
        }
        pauses = running.pauses
        found["gc_pauses"] = {
            "collections": len(pauses),
            "p50_ms": _ms(percentile(pauses, 0.5)) if pauses else None,
            "p99_ms": _ms(percentile(pauses, 0.99)) if pauses else None,
            "max_ms": _ms(max(pauses)) if pauses else None,
            "max_cpu_ms": _ms(max(running.cpu_pauses)) if running.cpu_pauses else None,
            "pauses_ms": sorted((_ms(p) or 0.0 for p in pauses), reverse=True)[:200],
            "by_generation": [
                {"collections": count, "max_ms": _ms(longest), "max_cpu_ms": _ms(longest_cpu)}
                for count, longest, longest_cpu in running.generations
            ],
        }
    return found


def run_burst(
    settings: Settings,
    log: Callable[[str], None],
    *,
    before: Path | None = None,
    subscribers: int | None = None,
    logs: int = 50,
    transactions: int = 2,
) -> dict[str, Any]:
    """Every system's figures under the burst workload (trials alternating between systems)."""
    subscribers = subscribers or 5000  # the workload's size in both modes (quick: fewer rounds)
    rounds = 3 if settings.quick else 7
    systems = burst_systems(prepare_before(before) if before is not None else None)
    running: list[_Running] = []
    probe = Child(
        "burst-http-probe",
        [PYTHON, "-m", "bench.loadgen", "99"],
        cpus=settings.load_cpus,
        log_dir=settings.run_dir,
    )
    try:
        for system in systems:
            log(f"  burst: {system.label}, {subscribers} subscribers")
            running.append(_Running(system, settings, subscribers))
        for round_index in range(rounds + 1):
            order = running[round_index % len(running) :] + running[: round_index % len(running)]
            for each in order:
                _trial(
                    each,
                    probe,
                    subscribers=subscribers,
                    logs=logs,
                    transactions=transactions,
                    measured=round_index > 0,
                )
            if round_index:
                log(
                    f"  burst round {round_index}: "
                    + ", ".join(
                        f"{r.system.key} {round(r.rates[-1]) if r.rates else '-'}/s"
                        for r in running
                    )
                )
    finally:
        for each in running:
            each.stop()
        probe.stop()
    return {
        "subscribers": subscribers,
        "logs_per_transaction": logs,
        "transactions": transactions,
        "rounds": rounds,
        "http_clients": HTTP_CLIENTS,
        "systems": {r.system.key: _figures(r, subscribers) for r in running},
    }


# -- report ------------------------------------------------------------------------------------------


def burst_section(burst: dict[str, Any] | None, out: Path) -> list[str]:
    """The README's section on the burst workload, with its plot written beside it."""
    if not burst:
        return []
    systems = burst["systems"]
    node = systems.get("node-ws", {}).get("deliveries_per_s")
    lines = [
        "",
        "## Bursts: one busy contract",
        "",
        f"{burst['subscribers']:,} subscribers to one token's logs; {burst['transactions']} "
        f"transactions back to back, each emitting {burst['logs_per_transaction']} logs "
        f"({burst['subscribers'] * burst['logs_per_transaction'] * burst['transactions']:,} frames "
        "a trial). Systems alternate trial by trial, "
        f"{burst['rounds']} measured rounds each (medians; the rounds show the noise). Latency: "
        "from a transaction to its last log at the last subscriber. HTTP: `eth_blockNumber` from "
        f"{burst['http_clients']} keep-alive connections, the calls under way during the burst. "
        "GC: every collection's pause in the server during the trials. CPU share: CPU seconds "
        "over wall seconds from the first transaction to the last frame (1.0: a whole core); "
        "on a shared machine, well under 1.0 for both means the trial waited for a core.",
        "",
        "| system | deliveries/s | vs Node | per server CPU-s | p50 ms | p99 ms | HTTP p99 ms "
        "(calls) | GC pauses: n, p99, max ms (max CPU ms) | CPU share: server, load gen "
        "| rounds (deliveries/s) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for figures in systems.values():
        rate = figures["deliveries_per_s"]
        versus = f"{rate / node:.2f}x" if rate and node else "-"
        http = figures.get("http_during_burst")
        gc = figures.get("gc_pauses")
        lines.append(
            f"| {figures['label']} | {rate or '-':,} | {versus} | "
            f"{figures['deliveries_per_server_cpu_s'] or '-':,} | {figures['p50_ms']} | "
            f"{figures['p99_ms']} | "
            + (f"{http['p99_ms']} ({http['calls']:,})" if http else "-")
            + " | "
            + (
                f"{gc['collections']}, {gc['p99_ms']}, {gc['max_ms']} ({gc.get('max_cpu_ms')})"
                if gc
                else "-"
            )
            + f" | {figures.get('server_cpu_share', '-')}, {figures.get('loadgen_cpu_share', '-')}"
            + f" | {', '.join(f'{r:,}' for r in figures['deliveries_per_s_rounds'])} |"
        )
    lines += _before_after(systems)
    name = _plot(burst, out)
    if name:
        lines += ["", f"![bursts]({name})"]
    return lines


def _before_after(systems: dict[str, Any]) -> list[str]:
    """The closing note: this tree against ``--before``'s, per mode, from the same run."""
    notes = []
    for mode in ("session", "direct"):
        after, before = systems.get(f"scopecast-{mode}"), systems.get(f"scopecast-{mode}-before")
        if not after or not before:
            continue
        http_after = (after.get("http_during_burst") or {}).get("p99_ms")
        http_before = (before.get("http_during_burst") or {}).get("p99_ms")
        notes.append(
            f"- {mode}: deliveries/s {before['deliveries_per_s'] or '-':,} -> "
            f"{after['deliveries_per_s'] or '-':,} (per server CPU-s "
            f"{before['deliveries_per_server_cpu_s'] or '-':,} -> "
            f"{after['deliveries_per_server_cpu_s'] or '-':,}); p50 {before['p50_ms']} -> "
            f"{after['p50_ms']} ms, p99 {before['p99_ms']} -> {after['p99_ms']} ms; HTTP p99 "
            f"{http_before} -> {http_after} ms"
        )
    if not notes:
        return []
    return ["", "Before (`--before`) and after, from the same run, trial by trial:", "", *notes]


def _plot(burst: dict[str, Any], out: Path) -> str | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    systems = burst["systems"]
    figure, (rate_axis, http_axis, gc_axis) = plt.subplots(1, 3, figsize=(15, 4.5))
    names = [f["label"] for f in systems.values()]
    rows = list(range(len(names)))
    rate_axis.barh(rows, [f["deliveries_per_s"] or 0 for f in systems.values()], color="#4878a8")
    rate_axis.set_yticks(rows, names, fontsize=7)
    rate_axis.invert_yaxis()
    rate_axis.set(title="burst: deliveries / s", xlabel="frames / s")
    for figures in [f for f in systems.values() if "http_during_burst" in f]:
        rounds = figures["http_during_burst"]["p99_ms_rounds"]
        http_axis.plot(range(1, len(rounds) + 1), rounds, "-o", label=figures["label"])
        pauses = figures["gc_pauses"]["pauses_ms"]
        gc_axis.plot(range(1, len(pauses) + 1), pauses, "-", label=figures["label"])
    http_axis.axhline(50, color="grey", linestyle=":", label="target: 50 ms")
    http_axis.set(title="eth_blockNumber p99 during the burst", xlabel="round", ylabel="ms")
    gc_axis.set(title="GC pauses, longest first", xlabel="collection (rank)", ylabel="ms")
    gc_axis.set_xscale("log")
    for axis in (rate_axis, http_axis, gc_axis):
        axis.grid(True, alpha=0.3)
    for axis in (http_axis, gc_axis):
        axis.set_ylim(bottom=0)
        axis.legend(fontsize=7)
    figure.tight_layout()
    name = "burst.png"
    figure.savefig(out / name, dpi=110)
    plt.close(figure)
    return name
