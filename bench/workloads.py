"""The workloads: fan-out with idle-connection memory, HTTP queries, getLogs; each against its peers.

Every server runs pinned to the server core, every load generator to the other core. A system's
connections are opened once, at the largest size, in steps (1k, 5k, 10k): after each step the
server's resident memory gives the idle-connection figure (measured before any notification, so no
transient buffer of the fan-out counts). Then the connections subscribe and the fan-out is measured
from the largest size down, closing connections between sizes.
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import msgspec

from bench import payloads
from bench.procs import Child, ChildError, cpu_seconds, rss_kib
from bench.stats import percentile

PYTHON = sys.executable
SCOPE = payloads.CHAIN
HEADS_PARAMS: list[Any] = ["newHeads"]
LOGS_PARAMS: list[Any] = ["logs", {"address": payloads.TOKEN}]
SESSION_REQUEST = {
    "optionalScopes": {
        SCOPE: {
            "methods": ["eth_subscribe", "eth_unsubscribe", "eth_blockNumber"],
            "notifications": ["eth_subscription"],
        }
    }
}


def invoke(method: str, params: list[Any], scope: str = SCOPE) -> list[Any]:
    """A script step calling ``method`` inside the session, on ``scope``."""
    return [
        "wallet_invokeMethod",
        {"scope": scope, "request": {"method": method, "params": params}},
    ]


#: A dapp's connection: a session, then a subscription in it (with an Origin of its own).
DAPP_SCRIPT: list[list[Any]] = [
    ["wallet_createSession", SESSION_REQUEST],
    invoke("eth_subscribe", HEADS_PARAMS),
]


@dataclass
class Settings:
    """How much to measure (quick mode: fewer and shorter rounds, same methods)."""

    quick: bool
    out: Path
    run_dir: Path
    sizes: list[int] = field(default_factory=lambda: [1000, 5000, 10000])
    burst: int = 20
    #: 10 rounds of 20: the p99 of 200 events, so that one stray event (any system has them, now
    #: and then, on a shared machine) does not decide it alone.
    rounds: int = 10
    #: Events each warm-up round publishes before the measured rounds. More than 16: the first 16
    #: or so frames each connection receives cost every system about a quarter more (measured at
    #: 10,000 subscribers, newHeads, one event after another: Node ``ws`` 88 ms an event, then
    #: 72-76; scopecast 83, then 65-70), a start-up of the connection on the kernel's or the
    #: client's side, not a server's; with 5, the p99 of the steady fan-out measured that start-up.
    warmup_burst: int = 20
    http_seconds: float = 5.0
    #: wrk runs of each system per HTTP call, alternating scopecast and the Node peer (medians)
    http_rounds: int = 3
    http_warmup: float = 1.0
    settle_seconds: float = 0.5
    #: Blocks of the log chain eth-tester queries (None: all of them, as scopecast).
    tester_blocks: int | None = None
    http_clients: int = 64
    getlogs_repeat: int = 20
    log_total: int = 100_000
    loadgens: int = 1
    server_cpus: set[int] = field(default_factory=lambda: {0})
    load_cpus: set[int] = field(default_factory=lambda: {1})
    profile: bool = False
    gc_freeze: bool = True
    systems: list[str] | None = None
    reference_subscribers: int = 1000

    @classmethod
    def for_mode(cls, quick: bool, out: Path, run_dir: Path) -> Settings:
        if quick:
            return cls(
                quick=True,
                out=out,
                run_dir=run_dir,
                burst=10,
                rounds=2,
                http_seconds=2.0,
                http_rounds=2,
                http_warmup=0.5,
                settle_seconds=0.2,
                getlogs_repeat=5,
                tester_blocks=20,
            )
        return cls(quick=False, out=out, run_dir=run_dir, reference_subscribers=10000)


# -- fan-out systems ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class FanoutSystem:
    """A server under test and how its clients subscribe."""

    key: str
    label: str
    memory_label: str
    start: Callable[[Settings, str], Child]
    path: str
    #: The notification's method, or one per kind (Solana's differ: slotNotification, ...).
    method: str | dict[str, str]
    idle_script: list[list[Any]]
    subscribe: dict[str, list[list[Any]]] | None  # None: subscribed from the start (the peers)
    unsubscribe: list[list[Any]] | dict[str, list[list[Any]]]
    origin: str | None = None
    supports_logs_filter: bool = True
    #: What is fanned out, in the order first measured.
    kinds: tuple[str, ...] = ("heads", "logs")
    #: How the server publishes ``count`` events of a kind, answering their publish times
    #: (``trigger(server, kind, count)``); None: the synthetic chain's ``burst``.
    trigger: Callable[[Child, str, int], list[float]] | None = None

    def notification(self, kind: str) -> str:
        return self.method if isinstance(self.method, str) else self.method[kind]

    def unsubscribe_script(self, kind: str) -> list[list[Any]]:
        return self.unsubscribe if isinstance(self.unsubscribe, list) else self.unsubscribe[kind]


@contextlib.contextmanager
def profiling(settings: Settings, pid: int, name: str) -> Iterator[None]:
    """py-spy attached to ``pid`` for the duration of the block (profile mode only); the raw
    profile goes to RUN_DIR/profiles/NAME.txt. py-spy runs on the load core, never pausing the
    server (``--nonblocking``)."""
    if not settings.profile:
        yield
        return
    profiles = settings.run_dir / "profiles"
    profiles.mkdir(exist_ok=True)
    spy = subprocess.Popen(
        [
            str(Path(PYTHON).parent / "py-spy"),
            "record",
            "--pid",
            str(pid),
            "--nonblocking",
            "--rate",
            "500",
            "--format",
            "raw",
            "--output",
            str(profiles / f"{name}.txt"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=(settings.run_dir / f"py-spy-{name}.log").open("wb"),
        preexec_fn=lambda: os.sched_setaffinity(0, settings.load_cpus),
    )
    time.sleep(1.0)  # attached and sampling
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)
        spy.wait(60)


def start_scopecast(
    mode: str, *, cache: bool = True, resume: bool = True, tree: Path | None = None
) -> Callable[[Settings, str], Child]:
    """``tree``: another source tree to run (``--before``; default this one)."""

    def start(settings: Settings, name: str) -> Child:
        argv = [PYTHON, "-m", "bench.server", mode]
        if not settings.gc_freeze:
            argv.append("--no-gc-freeze")
        if not cache:
            argv.append("--no-response-cache")
        if not resume:
            argv.append("--no-resume")
        return Child(name, argv, cpus=settings.server_cpus, log_dir=settings.run_dir, cwd=tree)

    return start


def start_websockets(settings: Settings, name: str) -> Child:
    argv = [
        PYTHON,
        "-m",
        "bench.peers.websockets_server",
        "--payloads",
        str(settings.run_dir / "payloads"),
    ]
    return Child(name, argv, cpus=settings.server_cpus, log_dir=settings.run_dir)


def start_node(settings: Settings, name: str) -> Child:
    server = Path(__file__).parent / "peers" / "node" / "server.mjs"
    argv = ["node", "--expose-gc", str(server), "--payloads", str(settings.run_dir / "payloads")]
    return Child(name, argv, cpus=settings.server_cpus, log_dir=settings.run_dir)


FANOUT_SYSTEMS = [
    FanoutSystem(
        key="scopecast-session",
        label="scopecast, session (wallet_notify)",
        memory_label="scopecast, connection holding a session",
        start=start_scopecast("synthetic"),
        path="/ws/v3/dev",
        method="wallet_notify",
        idle_script=[["wallet_createSession", SESSION_REQUEST]],
        subscribe={
            "heads": [invoke("eth_subscribe", HEADS_PARAMS)],
            "logs": [invoke("eth_subscribe", LOGS_PARAMS)],
        },
        unsubscribe=[invoke("eth_unsubscribe", ["$sub"])],
        origin="https://dapp",
    ),
    # Memory only: what a dapp's connection holds (its own Origin, a session, a subscription).
    FanoutSystem(
        key="scopecast-dapp",
        label="scopecast, dapp connection",
        memory_label="scopecast, dapp connection: own Origin, session, subscription",
        start=start_scopecast("synthetic"),
        path="/ws/v3/dev",
        method="wallet_notify",
        idle_script=DAPP_SCRIPT,
        subscribe={},
        unsubscribe=[],
        origin="https://dapp",
        kinds=(),
    ),
    FanoutSystem(
        key="scopecast-direct",
        label="scopecast, direct (eth_subscription)",
        memory_label="scopecast, bare connection",
        start=start_scopecast("synthetic"),
        path="/ws/v3/dev",
        method="eth_subscription",
        idle_script=[],
        subscribe={
            "heads": [["eth_subscribe", HEADS_PARAMS]],
            "logs": [["eth_subscribe", LOGS_PARAMS]],
        },
        unsubscribe=[["eth_unsubscribe", ["$sub"]]],
    ),
    FanoutSystem(
        key="node-ws",
        label="Node ws 8.23 (send per client)",
        memory_label="Node ws 8.23, subscribed connection",
        start=start_node,
        path="/",
        method="eth_subscription",
        idle_script=[["eth_subscribe", HEADS_PARAMS]],
        subscribe=None,
        unsubscribe=[],
    ),
    FanoutSystem(
        key="websockets",
        label="Python websockets 17.4 (broadcast)",
        memory_label="Python websockets 17.4, subscribed connection",
        start=start_websockets,
        path="/",
        method="eth_subscription",
        idle_script=[["eth_subscribe", HEADS_PARAMS]],
        subscribe=None,
        unsubscribe=[],
    ),
]


#: The systems whose idle memory ``--before TREE`` also measures, as built from that tree.
MEMORY_BEFORE = ("scopecast-dapp", "scopecast-session")


def before_systems(systems: list[FanoutSystem], tree: Path) -> list[FanoutSystem]:
    """``systems`` with, after each of :data:`MEMORY_BEFORE`, the same connections held by
    scopecast as built from ``tree`` (memory only), so that both are measured in one sitting."""
    out: list[FanoutSystem] = []
    for system in systems:
        out.append(system)
        if system.key in MEMORY_BEFORE:
            out.append(
                replace(
                    system,
                    key=f"{system.key}-before",
                    label=f"{system.label} (before)",
                    memory_label=f"{system.memory_label} (before)",
                    start=start_scopecast("synthetic", tree=tree),
                    kinds=(),
                )
            )
    return out


class LoadGenerators:
    """The load generator processes, addressed as one."""

    def __init__(self, settings: Settings, name: str) -> None:
        self.children = [
            Child(
                f"{name}-loadgen{i}",
                [PYTHON, "-m", "bench.loadgen", str(i)],
                cpus=settings.load_cpus,
                log_dir=settings.run_dir,
            )
            for i in range(settings.loadgens)
        ]

    def split(self, total: int) -> list[int]:
        count = len(self.children)
        return [total // count + (1 if i < total % count else 0) for i in range(count)]

    def all(self, message: dict[str, Any], timeout: float = 600) -> list[dict[str, Any]]:
        for child in self.children:
            child.send(message)
        return [child.receive(timeout) for child in self.children]

    def connect(self, port: int, system: FanoutSystem, count: int) -> dict[str, Any]:
        for child, share in zip(self.children, self.split(count), strict=True):
            child.send(
                {
                    "cmd": "connect",
                    "port": port,
                    "path": system.path,
                    "count": share,
                    "script": system.idle_script,
                    "origin": system.origin,
                    "window": 256,
                    "sample_every": 1000,
                }
            )
        replies = [child.receive(600) for child in self.children]
        return {
            "ready": sum(r["ready"] for r in replies),
            "failed": sum(r["failed"] for r in replies),
            "errors": [e for r in replies for e in r["errors"]][:5],
            "seconds": max(r["seconds"] for r in replies),
        }

    def script(self, script: list[list[Any]]) -> dict[str, Any]:
        replies = self.all({"cmd": "script", "script": script, "window": 1 << 30})
        return {
            "ready": sum(r["ready"] for r in replies),
            "failed": sum(r["failed"] for r in replies),
            "errors": [e for r in replies for e in r["errors"]][:5],
        }

    def close(self, count: int | None = None) -> None:
        if count is None:
            self.all({"cmd": "close"})
            return
        for child, share in zip(self.children, self.split(count), strict=True):
            child.send({"cmd": "close", "count": share})
        for child in self.children:
            child.receive()

    def cpu(self) -> float:
        return sum(cpu_seconds(child.pid) for child in self.children)

    def stop(self) -> None:
        for child in self.children:
            child.stop()


def _settle(server: Child, expected: int, timeout: float = 30.0) -> dict[str, Any]:
    """Full GC in the server and wait until it holds ``expected`` connections."""
    deadline = time.monotonic() + timeout
    while True:
        state = server.request({"cmd": "settle"})
        if state["connections"] == expected or time.monotonic() > deadline:
            return state
        time.sleep(0.2)


def measure_bursts(
    server: Child,
    loadgens: LoadGenerators,
    *,
    kind: str,
    method: str,
    subscribers: int,
    settings: Settings,
    trigger: Callable[[int], list[float]] | None = None,
    server_clock: Callable[[], float] | None = None,
) -> dict[str, Any]:
    """Warm-up, then ``settings.rounds`` bursts of ``settings.burst`` events; the figures.
    ``server_clock``: the server side's CPU seconds so far (default: ``server``'s own), for a
    server side of several processes."""
    clock = server_clock or functools.partial(cpu_seconds, server.pid)
    latencies: list[float] = []
    rates: list[float] = []
    cpu_rates: list[float] = []
    problems: list[str] = []
    server_cpu = loadgen_cpu = wall = 0.0
    gc_before = server.request({"cmd": "stats"}) if trigger is None else None
    for round_index in range(settings.rounds + 1):
        count = settings.warmup_burst if round_index == 0 else settings.burst
        armed = loadgens.all({"cmd": "arm", "count": count, "method": method, "timeout": 120})
        if sum(a["armed"] for a in armed) != subscribers:
            problems.append(f"armed {sum(a['armed'] for a in armed)} of {subscribers}")
        cpu0, lg0, t0 = clock(), loadgens.cpu(), time.monotonic()
        if trigger is None:
            published = server.request({"cmd": "burst", "kind": kind, "count": count})["published"]
        else:
            published = trigger(count)
        replies = [child.receive(180) for child in loadgens.children]
        cpu1, lg1, t1 = clock(), loadgens.cpu(), time.monotonic()
        for reply in replies:
            problems.extend(reply["problems"])
            problems.extend(reply["lost"])
            if reply["missing"]:
                problems.append(f"{reply['missing']} connections missed notifications")
        last = [max(reply["last"][i] for reply in replies) for i in range(count)]
        if round_index == 0 or min(last) == 0:
            continue
        span = max(last) - published[0]
        deliveries = subscribers * count
        rates.append(deliveries / span)
        cpu_rates.append(deliveries / max(cpu1 - cpu0, 1e-9))
        round_latencies = [done - sent for done, sent in zip(last, published, strict=True)]
        latencies.extend(round_latencies)
        _keep_latencies(settings, server.name, kind, subscribers, published, round_latencies)
        server_cpu += cpu1 - cpu0
        loadgen_cpu += lg1 - lg0
        wall += t1 - t0
    result: dict[str, Any] = {
        "subscribers": subscribers,
        "events_per_round": settings.burst,
        "rounds": len(rates),
        "notifications_per_s": round(statistics.median(rates)) if rates else None,
        "notifications_per_s_rounds": [round(r) for r in rates],
        "notifications_per_server_cpu_s": round(statistics.median(cpu_rates))
        if cpu_rates
        else None,
        "p50_ms": round(percentile(latencies, 0.5) * 1000, 1) if latencies else None,
        "p99_ms": round(percentile(latencies, 0.99) * 1000, 1) if latencies else None,
        "max_ms": round(max(latencies) * 1000, 1) if latencies else None,
        "server_cpu_share": round(server_cpu / wall, 2) if wall else None,
        "loadgen_cpu_share": round(loadgen_cpu / wall, 2) if wall else None,
        "problems": problems[:5],
    }
    if gc_before is not None and "gc_seconds" in gc_before:
        gc_after = server.request({"cmd": "stats"})
        result["gc_seconds"] = round(sum(gc_after["gc_seconds"]) - sum(gc_before["gc_seconds"]), 4)
        result["gc_collections"] = [
            a - b
            for a, b in zip(gc_after["gc_collections"], gc_before["gc_collections"], strict=True)
        ]
    return result


def _keep_latencies(
    settings: Settings,
    server: str,
    kind: str,
    subscribers: int,
    published: list[float],
    latencies: list[float],
) -> None:
    """Each event's latency, with its publish time, in the run's log directory (not published:
    to see when a tail happened, e.g. the first events of every connection)."""
    with (settings.run_dir / "fanout-latencies.jsonl").open("a") as out:
        record = {
            "server": server,
            "kind": kind,
            "subscribers": subscribers,
            "published": published,
            "latencies_ms": [round(v * 1000, 2) for v in latencies],
        }
        out.write(json.dumps(record) + "\n")


def run_fanout_system(system: FanoutSystem, settings: Settings, log: Callable[[str], None]) -> Any:
    """Memory at each size, then fan-out of each kind (heads and logs) at each size (largest
    first)."""
    memory: list[dict[str, Any]] = []
    fanout: dict[str, list[dict[str, Any]]] = {kind: [] for kind in system.kinds}
    server = system.start(settings, system.key)
    loadgens: LoadGenerators | None = None
    try:
        port = server.wait_ready()
        loadgens = LoadGenerators(settings, system.key)
        tracked_before = _settle(server, 0).get("gc_objects")
        time.sleep(settings.settle_seconds)
        baseline = rss_kib(server.pid)
        opened = 0
        for size in settings.sizes:
            connected = loadgens.connect(port, system, size - opened)
            if connected["failed"]:
                raise ChildError(
                    f"{system.key}: {connected['failed']} failed: {connected['errors']}"
                )
            opened = size
            settled = _settle(server, size)
            time.sleep(settings.settle_seconds)
            rss = rss_kib(server.pid)
            memory.append(
                {
                    "connections": size,
                    "kib_per_connection": round((rss - baseline) / size, 2),
                    "rss_mib": round(rss / 1024, 1),
                    "baseline_rss_mib": round(baseline / 1024, 1),
                    "connect_seconds": connected["seconds"],
                    **{
                        key: settled[key]
                        for key in ("full_collection_ms", "tracked_objects")
                        if key in settled
                    },
                }
            )
            if tracked_before is not None and "gc_objects" in settled:
                # Frozen or not: what a full collection without gc.freeze() would visit.
                memory[-1]["gc_objects_per_connection"] = round(
                    (settled["gc_objects"] - tracked_before) / size, 1
                )
            log(
                f"  {system.key}: {size} idle connections, {memory[-1]['kib_per_connection']} KiB each"
            )
        current: str | None = None
        kinds = list(system.kinds)
        for size in sorted(settings.sizes, reverse=True):
            if opened > size:
                loadgens.close(opened - size)
                opened = size
                _settle(server, size)
            for kind in kinds:
                if system.subscribe is not None and current != kind:
                    if current is not None:
                        unsubscribed = loadgens.script(system.unsubscribe_script(current))
                        if unsubscribed["failed"]:
                            raise ChildError(f"unsubscribe failed: {unsubscribed['errors']}")
                    subscribed = loadgens.script(system.subscribe[kind])
                    if subscribed["failed"]:
                        raise ChildError(f"subscribe failed: {subscribed['errors']}")
                    current = kind
                profiled = size == max(settings.sizes) and system.key.startswith("scopecast")
                with profiling(
                    settings if profiled else replace(settings, profile=False),
                    server.pid,
                    f"{system.key}-{kind}-{size}",
                ):
                    figures = measure_bursts(
                        server,
                        loadgens,
                        kind=kind,
                        method=system.notification(kind),
                        subscribers=size,
                        settings=settings,
                        trigger=None
                        if system.trigger is None
                        else functools.partial(system.trigger, server, kind),
                    )
                fanout[kind].append(figures)
                log(
                    f"  {system.key} {kind} x{size}: {figures['notifications_per_s']}/s"
                    f" ({figures['notifications_per_server_cpu_s']}/server-CPU-s)"
                    f" p50 {figures['p50_ms']} ms p99 {figures['p99_ms']} ms"
                    + (f" PROBLEMS {figures['problems']}" if figures["problems"] else "")
                )
            kinds.reverse()  # the kind subscribed now goes first at the next size
    finally:
        if loadgens is not None:
            loadgens.stop()
        server.stop()
    for kind in fanout:
        fanout[kind].sort(key=lambda f: f["subscribers"])
    return memory, fanout


def run_fanout_systems(
    systems: list[FanoutSystem],
    settings: Settings,
    log: Callable[[str], None],
    kinds: tuple[str, ...],
    what: str = "fan-out and idle memory",
) -> dict[str, Any]:
    """:func:`run_fanout_system` for each system: ``{"fanout": {kind: {system key: {label,
    sizes}}}, "memory": {system key: {label, sizes}}}``."""
    results: dict[str, Any] = {"fanout": {kind: {} for kind in kinds}, "memory": {}}
    for system in systems:
        log(f"{what}: {system.label}")
        memory, fanout = run_fanout_system(system, settings, log)
        results["memory"][system.key] = {"label": system.memory_label, "sizes": memory}
        for kind, figures in fanout.items():
            results["fanout"][kind][system.key] = {"label": system.label, "sizes": figures}
    return results


def memory_profile(
    settings: Settings, log: Callable[[str], None], connections: int = 2000
) -> dict[str, Any]:
    """What one idle session connection keeps, by the scopecast line that allocated it
    (tracemalloc, 30 frames deep; each allocation is charged to the innermost broker/adapters/
    schemas frame of its stack)."""
    system = next(s for s in FANOUT_SYSTEMS if s.key == "scopecast-session")
    server = Child(
        "scopecast-tracemalloc",
        [PYTHON, "-m", "bench.server", "synthetic", "--tracemalloc", "30"],
        cpus=settings.server_cpus,
        log_dir=settings.run_dir,
    )
    loadgens: LoadGenerators | None = None
    try:
        port = server.wait_ready()
        loadgens = LoadGenerators(settings, "tracemalloc")
        loadgens.connect(port, system, 200)  # warm every cache and lazy import first
        server.request({"cmd": "trace", "per": 1}, timeout=300)
        connected = loadgens.connect(port, system, connections)
        if connected["failed"]:
            raise ChildError(f"tracemalloc run: {connected['errors']}")
        traced = server.request({"cmd": "trace", "per": connections, "top": 400}, timeout=600)
    finally:
        if loadgens is not None:
            loadgens.stop()
        server.stop()
    owners: dict[str, float] = {}
    detail: dict[str, dict[str, float]] = {}
    for line in traced["lines"]:
        owner = next(
            (
                f
                for f in reversed(line["stack"])
                if f.startswith(("broker/", "adapters/", "schemas/"))
            ),
            line["where"],
        )
        owners[owner] = owners.get(owner, 0.0) + line["bytes_per"]
        where = detail.setdefault(owner, {})
        where[line["where"]] = where.get(line["where"], 0.0) + line["bytes_per"]
    ranked = sorted(owners.items(), key=lambda item: -item[1])
    log(f"  traced {traced['total_bytes_per']} bytes per idle session connection")
    return {
        "connections": connections,
        "bytes_per_connection": traced["total_bytes_per"],
        "by_line": [
            {
                "line": owner,
                "bytes": round(size),
                "allocated_in": [
                    [where, round(n)]
                    for where, n in sorted(detail[owner].items(), key=lambda item: -item[1])[:4]
                ],
            }
            for owner, size in ranked[:25]
        ],
    }


# -- the dev chain: reference fan-out, getLogs, HTTP -------------------------------------------------


class HttpClient:
    """One keep-alive HTTP/1.1 connection for single timed requests."""

    def __init__(self, port: int) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)

    def rpc_raw(self, method: str, params: list[Any]) -> bytes:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        self.connection.request(
            "POST", "/v3/dev", body=body, headers={"Content-Type": "application/json"}
        )
        return self.connection.getresponse().read()

    def rpc(self, method: str, params: list[Any]) -> Any:
        reply = msgspec.json.decode(self.rpc_raw(method, params))
        if "error" in reply:
            raise ChildError(f"{method}: {reply['error']}")
        return reply["result"]


def build_log_chain(
    client: HttpClient,
    total_logs: int,
    log: Callable[[str], None],
    *,
    per_call: int = 0,
) -> dict[str, Any]:
    """Deploy the log emitter and call it until the chain holds ``total_logs`` of its logs, through
    the dev chain's public methods (``eth_sendRawTransaction``, mined at once with block time 0),
    ``per_call`` logs a call (default :data:`bench.logchain.LOGS_PER_CALL`)."""
    from eth_account import Account
    from eth_utils.address import to_checksum_address

    from adapters.devchain.accounts import DEFAULT_MNEMONIC, derive_accounts
    from bench import logchain

    started = time.perf_counter()
    key = derive_accounts(DEFAULT_MNEMONIC, 10)[9].key.to_bytes()
    account = Account.from_key(key)
    nonce = int(client.rpc("eth_getTransactionCount", [account.address, "latest"]), 16)

    def send(to: str | None, data: bytes, gas: int) -> None:
        nonlocal nonce
        base_fee = int(client.rpc("eth_getBlockByNumber", ["latest", False])["baseFeePerGas"], 16)
        tx: dict[str, Any] = {
            "type": 2,
            "chainId": logchain.CHAIN_ID,
            "nonce": nonce,
            "maxPriorityFeePerGas": 10**9,
            "maxFeePerGas": 3 * base_fee + 10**9,
            "gas": gas,
            "value": 0,
            "data": data,
        }
        if to is not None:
            tx["to"] = to_checksum_address(to)
        raw = Account.sign_transaction(tx, key).raw_transaction
        client.rpc("eth_sendRawTransaction", ["0x" + raw.hex()])
        nonce += 1

    import rlp
    from eth_hash.auto import keccak

    contract = "0x" + keccak(rlp.encode([bytes.fromhex(account.address[2:]), nonce]))[12:].hex()
    send(None, logchain.deployer(logchain.emitter_runtime()), 1_000_000)
    if client.rpc("eth_getCode", [contract, "latest"]) in ("0x", None):
        raise ChildError("the log emitter was not deployed")
    first_block = int(client.rpc("eth_blockNumber", []), 16) + 1
    per_call = per_call or logchain.LOGS_PER_CALL
    calls = total_logs // per_call
    for index in range(calls):
        data = per_call.to_bytes(32, "big") + logchain.sender_word(index % logchain.SENDERS)
        send(contract, data, logchain.GAS_PER_CALL)
    last_block = int(client.rpc("eth_blockNumber", []), 16)
    seconds = time.perf_counter() - started
    log(f"  log chain: {calls} calls in blocks {first_block}..{last_block}, {seconds:.1f} s")
    return {
        "contract": contract,
        "first_block": first_block,
        "last_block": last_block,
        "emitted_logs": calls * per_call,
        "build_seconds": round(seconds, 1),
    }


def _timed_http_getlogs(client: HttpClient, query: dict[str, Any], repeat: int) -> dict[str, Any]:
    timings = []
    count = 0
    size = 0
    for _ in range(repeat):
        started = time.perf_counter()
        raw = client.rpc_raw("eth_getLogs", [query])
        timings.append(time.perf_counter() - started)
        size = len(raw)
    reply = msgspec.json.decode(raw)
    if "error" in reply:
        raise ChildError(f"eth_getLogs: {reply['error']}")
    count = len(reply["result"])
    return {
        "results": count,
        "reply_bytes": size,
        "median_ms": round(statistics.median(timings) * 1000, 1),
        "min_ms": round(min(timings) * 1000, 1),
        "max_ms": round(max(timings) * 1000, 1),
    }


def _ms(seconds: list[float]) -> dict[str, float]:
    return {
        "median_ms": round(statistics.median(seconds) * 1000, 1),
        "min_ms": round(min(seconds) * 1000, 1),
    }


def run_devchain(settings: Settings, log: Callable[[str], None]) -> dict[str, Any]:
    """The reference fan-out through the real dev chain, then getLogs (the chain's own work: the
    response cache is off, or every repeat after the first would be a cache hit)."""
    from bench import logchain

    results: dict[str, Any] = {}
    server = start_scopecast("devchain", cache=False)(settings, "scopecast-devchain")
    try:
        port = server.wait_ready()
        client = HttpClient(port)
        results["fanout_reference"] = _reference_fanout(server, port, settings, log)

        chain = build_log_chain(client, settings.log_total, log)
        topic = "0x" + logchain.TRANSFER_TOPIC.hex()
        query = {
            "fromBlock": "0x0",
            "toBlock": "latest",
            "address": chain["contract"],
            "topics": [topic, logchain.sender_topic(3)],
        }
        total_query = {"fromBlock": "0x0", "toBlock": "latest", "address": chain["contract"]}
        over_limit = client.rpc_raw("eth_getLogs", [total_query])
        http_figures = _timed_http_getlogs(client, query, settings.getlogs_repeat)
        inprocess = server.request(
            {"cmd": "getlogs", "filter": query, "repeat": settings.getlogs_repeat}, timeout=600
        )
        # eth-tester answers the same query, over the whole chain (full mode) or over its first
        # ``tester_blocks`` blocks (quick mode: it takes about 0.2 s a block), and so does scopecast.
        last = chain["last_block"]
        if settings.tester_blocks is not None:
            last = min(last, chain["first_block"] + settings.tester_blocks - 1)
        whole = last == chain["last_block"]
        same = query if whole else {**query, "toBlock": hex(last)}
        same_http = http_figures if whole else _timed_http_getlogs(client, same, 3)
        tester = server.request(
            {
                "cmd": "tester_getlogs",
                "from_block": 0,
                "to_block": last,
                "address": chain["contract"],
                "topics": [topic, logchain.sender_topic(3)],
                "repeat": 1 if settings.quick else 3,
            },
            timeout=3600,
        )
        results["getlogs"] = {
            "chain": {**chain, "over_limit_reply": over_limit[:160].decode(errors="replace")},
            "query": query,
            "scopecast_http": http_figures,
            "scopecast_in_process": {**_ms(inprocess["seconds"]), "results": inprocess["results"]},
            "versus_eth_tester": {
                "query": same,
                "scopecast_http": {
                    "median_ms": same_http["median_ms"],
                    "min_ms": same_http["min_ms"],
                    "results": same_http["results"],
                },
                "eth_tester": {**_ms(tester["seconds"]), "results": tester["results"]},
            },
        }
        log(
            f"  getLogs {http_figures['results']} results: {http_figures['median_ms']} ms over HTTP,"
            f" {results['getlogs']['scopecast_in_process']['median_ms']} ms in-process;"
            f" to block {last}: scopecast {same_http['median_ms']} ms,"
            f" eth-tester {tester['seconds'][0] * 1000:.0f} ms"
        )

    finally:
        server.stop()
    return results


def _reference_fanout(
    server: Child, port: int, settings: Settings, log: Callable[[str], None]
) -> dict[str, Any]:
    """newHeads through the real dev chain: each event is an ``evm_mine`` (mining included)."""
    loadgens = LoadGenerators(settings, "devchain-reference")
    try:
        system = next(s for s in FANOUT_SYSTEMS if s.key == "scopecast-direct")
        size = settings.reference_subscribers
        connected = loadgens.connect(port, system, size)
        if connected["failed"]:
            raise ChildError(f"reference: {connected['errors']}")
        subscribed = loadgens.script(system.subscribe["heads"])  # type: ignore[index]
        if subscribed["failed"]:
            raise ChildError(f"reference: {subscribed['errors']}")
        figures = measure_bursts(
            server,
            loadgens,
            kind="heads",
            method="eth_subscription",
            subscribers=size,
            settings=settings,
            trigger=lambda count: server.request({"cmd": "mine", "count": count}, 300)["published"],
        )
        log(
            f"  dev chain reference x{size}: {figures['notifications_per_s']}/s,"
            f" p50 {figures['p50_ms']} ms p99 {figures['p99_ms']} ms (evm_mine included)"
        )
        loadgens.close()
        _settle(server, 0)
        return figures
    finally:
        loadgens.stop()
