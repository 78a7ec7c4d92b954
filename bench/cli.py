"""``python -m bench``: run the workloads against the peers and write docs/benchmarks/.

``BENCH_QUICK=1`` (or ``--quick``) runs the quick mode (fewer, shorter rounds; same methods and
sizes), for development; the published figures come from a full run on a quiet machine.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench import payloads, report
from bench.burst import prepare_before, run_burst
from bench.churn import run_churn
from bench.http_wrk import run_http
from bench.limiter import run_limiter
from bench.procs import ROOT, ChildError
from bench.replay import run_replay
from bench.resume import run_resume
from bench.solana import run_solana
from bench.solana_fleet import run_solana_fleet
from bench.webhooks import run_webhooks
from bench.workloads import (
    FANOUT_SYSTEMS,
    Settings,
    before_systems,
    memory_profile,
    run_devchain,
    run_fanout_systems,
)

DEFAULT_OUT = ROOT / "docs" / "benchmarks"
WORKLOADS = (
    "fanout",
    "burst",
    "churn",
    "solana",
    "solana-fleet",
    "devchain",
    "http",
    "replay",
    "resume",
    "limiter",
    "webhooks",
)


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_kib = 0
    with contextlib.suppress(OSError, IndexError, ValueError):
        memory_kib = int(Path("/proc/meminfo").read_text().split()[1])
    node = shutil.which("node")
    node_version = (
        subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
        if node
        else None
    )
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "memory_gib": round(memory_kib / 1024 / 1024, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "node": node_version,
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def merge(previous: dict[str, Any], partial: dict[str, Any], only: list[str]) -> dict[str, Any]:
    """``previous`` with the parts a ``--only`` run measured replaced, and the run noted."""
    merged = dict(previous)
    for kind, systems in partial.get("fanout", {}).items():
        merged.setdefault("fanout", {}).setdefault(kind, {}).update(systems)
    merged.setdefault("memory", {}).update(partial.get("memory", {}))
    merged.pop("http", None)  # the Python load generator's HTTP figures (replaced by wrk's)
    for key in (
        "burst",
        "churn",
        "fanout_reference",
        "solana",
        "solana_fleet",
        "getlogs",
        "http_wrk",
        "replay",
        "resume",
        "limiter",
        "webhooks",
        "profiles",
        "memory_profile",
    ):
        if key in partial:
            merged[key] = partial[key]
    merged["partial_updates"] = [
        *previous.get("partial_updates", []),
        {
            "date": partial["date"],
            "mode": partial["mode"],
            "only": only,
            "machine": partial["machine"],
            "method": partial["method"],
        },
    ]
    return merged


def mode_arguments(cli: argparse.ArgumentParser, variable: str, out: Path) -> None:
    """``--quick`` (also ``VARIABLE=1``) and ``--out``, as ``python -m bench`` and ``python -m
    soak`` take them."""
    cli.add_argument(
        "--quick",
        action="store_true",
        default=os.environ.get(variable, "") not in ("", "0"),
        help=f"the quick mode (also {variable}=1)",
    )
    cli.add_argument("--out", type=Path, default=out, help="where results go")


def main(argv: list[str] | None = None) -> None:
    cli = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    mode_arguments(cli, "BENCH_QUICK", DEFAULT_OUT)
    cli.add_argument(
        "--only",
        nargs="*",
        choices=[*WORKLOADS, *(s.key for s in FANOUT_SYSTEMS)],
        help="run only these workloads or fan-out systems",
    )
    cli.add_argument("--sizes", type=int, nargs="*", help="subscriber counts (default 1k 5k 10k)")
    cli.add_argument("--loadgens", type=int, default=1, help="load generator processes")
    cli.add_argument(
        "--profile",
        action="store_true",
        help="attach py-spy to the scopecast servers during the measured rounds at the largest "
        "size and during the HTTP runs; the top functions go to README.md, the raw profiles stay "
        "in the run's log directory (figures of a profiled run are not for publishing)",
    )
    cli.add_argument(
        "--no-gc-freeze",
        dest="gc_freeze",
        action="store_false",
        help="experiment: skip the gc.freeze() scopecast serve does at start-up",
    )
    cli.add_argument(
        "--memory-profile",
        action=argparse.BooleanOptionalAction,
        help="trace what an idle session connection keeps, line by line (tracemalloc); "
        "default: in full mode, and in a --only run only when asked",
    )
    cli.add_argument(
        "--before",
        type=Path,
        help="the burst and churn workloads and the idle memory of the session and dapp "
        "connections also measure scopecast as built from this source tree "
        "(`git archive REV | tar -x -C TREE`), beside this one in the same run",
    )
    args = cli.parse_args(argv)

    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if (os.cpu_count() or 1) < 2:
        raise SystemExit("the bench needs two cores: one for the server, one for the load")
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    run_dir = Path(os.environ.get("TMPDIR", "/tmp")) / f"scopecast-bench-{stamp}"
    run_dir.mkdir(parents=True)
    settings = Settings.for_mode(args.quick, args.out, run_dir)
    settings.loadgens = args.loadgens
    settings.profile = args.profile
    settings.gc_freeze = args.gc_freeze
    if args.sizes:
        settings.sizes = sorted(args.sizes)
    only = set(args.only or [])
    # Every core but the server's: the orchestrator too stays off the server core.
    os.sched_setaffinity(0, settings.load_cpus)
    payloads.write_peer_files(run_dir / "payloads", 4096)

    def log(message: str) -> None:
        print(message, flush=True)

    started = time.monotonic()
    log(f"scopecast bench ({'quick' if args.quick else 'full'} mode); logs in {run_dir}")
    results: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "mode": "quick" if args.quick else "full",
        "machine": machine(),
        "method": {
            "server_cpus": sorted(settings.server_cpus),
            "load_generator_cpus": sorted(settings.load_cpus),
            "load_generators": settings.loadgens,
            "events_per_round": settings.burst,
            "warmup_events": settings.warmup_burst,
            "rounds": settings.rounds,
            "head_payload_bytes": payloads.HEAD_SIZE,
            "log_payload_bytes": len(payloads.log_json(payloads.FIRST_BLOCK)),
            "http_clients": settings.http_clients,
            "http_seconds": settings.http_seconds,
            "gc_freeze": settings.gc_freeze,
            "profiled": settings.profile,
        },
    }
    fanout_systems = [s for s in FANOUT_SYSTEMS if not only or "fanout" in only or s.key in only]
    if args.before is not None:
        fanout_systems = before_systems(fanout_systems, prepare_before(args.before))
    results.update(run_fanout_systems(fanout_systems, settings, log, ("heads", "logs")))
    if not only or "burst" in only:
        log("bursts: 5,000 subscribers to one contract, 2 transactions of 50 logs")
        results["burst"] = run_burst(settings, log, before=args.before)
    if not only or "churn" in only:
        log("churn: GC pauses in a server holding dapp connections that come and go")
        results["churn"] = run_churn(settings, log, before=args.before)
    if not only or "solana" in only:
        log("Solana: slot and account notifications, direct and in sessions")
        results["solana"] = run_solana(settings, log)
    if not only or "solana-fleet" in only:
        log("Solana: slots through a worker and Redis to two web processes")
        results["solana_fleet"] = run_solana_fleet(settings, log)
    if not only or "devchain" in only:
        log("dev chain: reference fan-out, getLogs, HTTP")
        devchain = run_devchain(settings, log)
        results["fanout_reference"] = devchain["fanout_reference"]
        results["getlogs"] = devchain["getlogs"]
    if not only or "http" in only:
        log("HTTP: every node call under wrk, beside Node's http server")
        results["http_wrk"] = run_http(settings, log)
    if not only or "replay" in only:
        log("the response cache: a mix of dapp calls replayed in front of an upstream node")
        results["replay"] = run_replay(settings, log)
    if not only or "limiter" in only:
        log("access control: what a key's rate limit costs per request (memory, Redis)")
        results["limiter"] = run_limiter(1000 if args.quick else 5000)
    if not only or "resume" in only:
        log("resume: replay to 1,000 reconnecting clients; fan-out with and without cursors")
        results["resume"] = run_resume(settings, log)
    if not only or "webhooks" in only:
        log("webhooks: deliveries to a local receiver (1, 100), and their cost to the fan-out")
        results["webhooks"] = run_webhooks(settings, log)
    if args.memory_profile or (args.memory_profile is None and not args.quick and not only):
        log("memory profile: an idle session connection, line by line")
        try:
            results["memory_profile"] = memory_profile(settings, log)
        except ChildError as exc:  # the last part: the run's figures are still written
            log(f"memory profile not taken: {exc}")
    results["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    results["seconds"] = round(time.monotonic() - started, 1)
    if settings.profile:
        results["profiles"] = report.summarise_profiles(run_dir / "profiles")
    if only and (args.out / "results.json").exists():
        results = merge(json.loads((args.out / "results.json").read_text()), results, sorted(only))
    results["targets"] = report.targets(results)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    report.write(results, args.out)
    log(f"done in {results['seconds']} s: {args.out / 'results.json'}, README.md, plots")
    for target in results["targets"]:
        log(f"  {'MET ' if target['met'] else 'NOT '} {target['target']}: {target['measured']}")


if __name__ == "__main__":
    main(sys.argv[1:])
