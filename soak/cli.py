"""``python -m soak``: the reliability suite; writes docs/reliability/.

Scenarios, in order (each writes its part of ``results.json`` and the README as it finishes, so a
partial run still reports): ``faults``, ``solana`` (the faults against a fleet in front of two
Solana nodes, :mod:`soak.solana`), ``soak`` (with the fuzzer of ``fuzz`` running against it),
``overload``. ``SOAK_QUICK=1`` (or ``--quick``) is the quick mode (under 5 minutes on a quiet
machine; smaller and shorter); the published figures come from a full run (under 45 minutes).
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import os
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

from bench.cli import machine, mode_arguments
from bench.procs import ROOT
from soak import report, solana
from soak.deploy import deployment
from soak.faults import FAULTS, run_faults, selected
from soak.settings import Settings

DEFAULT_OUT = ROOT / "docs" / "reliability"
SCENARIOS = ("faults", "solana", "soak", "overload")


class Results:
    """``results.json`` being written: every part is saved (with the README) as it arrives."""

    def __init__(self, out: Path, settings: Settings, only: list[str]) -> None:
        self.out = out
        self.settings = settings
        self.path = out / "results.json"
        self.machine = machine()
        self.partial: dict[str, Any] | None = None
        if (only or settings.only_faults) and self.path.exists():
            # A run of some scenarios: the others' figures stay, and so do the run's date, mode
            # and duration; the parts measured now say their own (and the run is listed).
            self.data: dict[str, Any] = json.loads(self.path.read_text())
            self.partial = {"only": only, "mode": _mode(settings), "date": _now()}
            if settings.only_faults:
                self.partial["faults"] = settings.only_faults
            self.data.setdefault("partial_runs", []).append(self.partial)
        else:
            self.data = {"mode": _mode(settings), "machine": self.machine, "date": _now()}
        #: A run of some faults only (``--faults``): the other rows stay, these are replaced.
        self.some_faults = bool(settings.only_faults)
        if ("faults" in only or not only) and not self.some_faults:
            self.data["faults"] = []

    def solana_fault(self, figures: dict[str, Any]) -> None:
        """One fault's row of the Solana section (a row of the same fault is replaced)."""
        part = self.data.get("solana") or {"faults": []}
        row = {**figures, "mode": _mode(self.settings), "date": _now(), "machine": self.machine}
        rows = [r for r in part["faults"] if r["name"] != figures["name"]] + [row]
        order = [f.name for f in solana.SOLANA_FAULTS]
        rows.sort(key=lambda r: order.index(r["name"]) if r["name"] in order else len(order))
        settings = {k: v for k, v in vars(self.settings).items() if k.startswith("solana_")}
        settings.update(
            {k: getattr(self.settings, k) for k in ("fault_runs", "fault_pause", "freeze_seconds")}
        )
        self.data["solana"] = {"faults": rows, "settings": settings}
        self.save()

    def finish(self, seconds: float) -> None:
        if self.partial is not None:
            self.partial["seconds"] = seconds
        else:
            self.data["seconds"] = seconds
        self.save()

    def save(self) -> None:
        self.machine["load_average_now"] = [round(x, 2) for x in os.getloadavg()]
        self.data["targets"] = report.targets(self.data)
        self.out.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(self.data, indent=2) + "\n")
        report.write(self.data, self.out)

    def part(self, key: str, figures: Any) -> None:
        self.data[key] = {
            **figures,
            "mode": self.partial["mode"] if self.partial else self.data["mode"],
            "date": _now(),
            "machine": self.machine,
        }
        self.save()

    def fault(self, figures: dict[str, Any]) -> None:
        row = {**figures, "mode": _mode(self.settings), "date": _now(), "machine": self.machine}
        rows = self.data.setdefault("faults", [])
        names = [r["name"] for r in rows]
        if figures["name"] in names:
            rows[names.index(figures["name"])] = row
        else:
            rows.append(row)
        order = [f.name for f in FAULTS]
        rows.sort(key=lambda r: order.index(r["name"]) if r["name"] in order else len(order))
        self.save()


def _mode(settings: Settings) -> str:
    return "quick" if settings.quick else "full"


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


async def run(
    settings: Settings, only: list[str], results: Results, folder: Path, log: Callable[[str], None]
) -> None:
    async with trio.open_nursery() as nursery:
        if not only or "soak" in only:
            # The fuzzer's inputs are drawn (or found in the cache) while the faults run, niced:
            # the soak's fuzzer then starts sending at once.
            prepare = ["nice", "-n", "19", sys.executable, "-m", "soak.fuzz", "--prepare"]
            nursery.start_soon(
                functools.partial(
                    trio.run_process,
                    [*prepare, "--inputs", str(settings.fuzz_inputs)],
                    cwd=ROOT,
                    check=False,
                )
            )
        await _scenarios(settings, only, results, folder, log)
        nursery.cancel_scope.cancel()


async def _scenarios(
    settings: Settings, only: list[str], results: Results, folder: Path, log: Callable[[str], None]
) -> None:
    if not only or "faults" in only:
        if selected(settings, sentinel=False):
            async with deployment(folder / "faults", block_time=settings.fault_block_time) as d:
                await run_faults(d, settings, log, results.fault)
        if selected(settings, sentinel=True):
            async with deployment(
                folder / "faults-sentinel", block_time=settings.fault_block_time, sentinel=True
            ) as d:
                await run_faults(d, settings, log, results.fault)
    if (not only or "solana" in only) and solana.selected(settings):
        await solana.run_solana(folder / "solana", settings, log, results.solana_fault)
    if not only or "soak" in only:
        from soak.steady import run_soak

        async with deployment(folder / "soak", block_time=settings.block_time) as d:
            results.part("soak", await run_soak(d, settings, log, results))
    if not only or "overload" in only:
        from soak.overload import run_overload

        async with deployment(folder / "overload", block_time=settings.block_time, webs=0) as d:
            results.part("overload", await run_overload(d, settings, log))


def main(argv: list[str] | None = None) -> None:
    cli = argparse.ArgumentParser(prog="python -m soak", description=__doc__)
    mode_arguments(cli, "SOAK_QUICK", DEFAULT_OUT)
    cli.add_argument("--only", nargs="*", choices=SCENARIOS, help="run only these scenarios")
    cli.add_argument(
        "--faults",
        nargs="*",
        choices=[f.name for f in [*FAULTS, *solana.SOLANA_FAULTS]],
        help="only these faults (the solana_ ones are the Solana section's)",
    )
    cli.add_argument("--fault-clients", type=int, help="override the clients per fault")
    cli.add_argument("--fault-runs", type=int, help="override the runs of each fault")
    cli.add_argument("--solana-clients", type=int, help="override the Solana section's clients")
    cli.add_argument(
        "--no-solana-accounts",
        dest="solana_accounts",
        action="store_false",
        help="the Solana section judges slots only (no accountSubscribe)",
    )
    cli.add_argument("--soak-minutes", type=float, help="override the soak's duration")
    cli.add_argument("--connections", type=int, help="override the soak's connection count")
    cli.add_argument("--overload-connections", type=int, help="override the overload's count")
    cli.add_argument("--fuzz-inputs", type=int, help="override the fuzzer's input count")
    cli.add_argument(
        "--report-only",
        action="store_true",
        help="write README.md and the plots again from results.json, running nothing",
    )
    args = cli.parse_args(argv)
    if args.report_only:
        data = json.loads((args.out / "results.json").read_text())
        data["targets"] = report.targets(data)
        (args.out / "results.json").write_text(json.dumps(data, indent=2) + "\n")
        report.write(data, args.out)
        return

    settings = Settings.for_mode(args.quick)
    settings.only_faults = args.faults or []
    settings.solana_accounts = args.solana_accounts
    for name, value in (
        ("fault_clients", args.fault_clients),
        ("fault_runs", args.fault_runs),
        ("solana_clients", args.solana_clients),
        ("soak_minutes", args.soak_minutes),
        ("soak_connections", args.connections),
        ("overload_connections", args.overload_connections),
        ("fuzz_inputs", args.fuzz_inputs),
    ):
        if value is not None:
            setattr(settings, name, value)
    # Every child inherits the highest fd limit this machine allows (the overload needs it).
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    folder = Path(os.environ.get("TMPDIR", "/tmp")) / f"soak-run-{stamp}"
    only = args.only or []
    results = Results(args.out, settings, only)
    (results.partial or results.data)["settings"] = {
        k: v for k, v in vars(settings).items() if k not in ("only_faults",)
    }
    results.data["fd_limit"] = hard
    started = time.monotonic()

    def log(message: str) -> None:
        print(f"[{time.monotonic() - started:6.1f} s] {message}", flush=True)

    log(f"scopecast soak ({'quick' if args.quick else 'full'} mode); logs in {folder}")
    try:
        trio.run(run, settings, only, results, folder, log)
    finally:
        seconds = round(time.monotonic() - started, 1)
        results.finish(seconds)
        log(f"done in {seconds} s: {results.path}")
        for target in results.data["targets"]:
            log(f"  {'MET ' if target['met'] else 'NOT '} {target['target']}: {target['measured']}")


if __name__ == "__main__":
    main(sys.argv[1:])
