"""The Solana fleet workload (bench/solana_fleet.py): the config its processes share is one the web
and worker roles accept, serving the node through ``solana-upstream``; the subscribers split over the
web processes; the report puts the row beside the in-process figure."""

from __future__ import annotations

import tomllib
from typing import Any

from bench import report
from bench.solana_fleet import CHAIN, LABEL, NETWORK, SYSTEM, fleet_config, split
from broker.config import Config, network_specs


def test_the_fleet_config_fronts_the_node_with_solana_upstream() -> None:
    parsed = tomllib.loads(fleet_config(4321))
    specs, _ = network_specs(Config(networks=parsed["networks"]))
    (spec,) = specs
    assert (spec.name, spec.chain, spec.adapter) == (NETWORK, CHAIN, "solana-upstream")
    assert spec.options["upstreams"] == [
        {
            "http": "http://127.0.0.1:4321/solana/v3/dev",
            "ws": "ws://127.0.0.1:4321/solana/ws/v3/dev",
        }
    ]
    assert SYSTEM.path == "/solana/ws/v3/dev"
    assert SYSTEM.subscribe == {"slots": [["slotSubscribe", []]]}


def test_subscribers_split_evenly_over_the_web_processes() -> None:
    assert split(10_000, 2) == [5000, 5000]
    assert split(7, 2) == [4, 3]
    assert sum(split(1001, 3)) == 1001


def _figures(subscribers: int, rate: int, p99: float) -> dict[str, Any]:
    return {
        "subscribers": subscribers,
        "notifications_per_s": rate,
        "notifications_per_server_cpu_s": rate,
        "p50_ms": p99 / 2,
        "p99_ms": p99,
        "server_cpu_share": 0.9,
        "loadgen_cpu_share": 0.5,
    }


def test_the_report_puts_the_fleet_beside_the_in_process_figure() -> None:
    fleet = {
        "label": LABEL,
        "web_processes": 2,
        "sizes": [_figures(10_000, 40_000, 900.0)],
        "cpu_seconds": {"web0": 1.5, "worker": 0.25},
        "mode": "quick",
        "date": "2026-11-28T05:00:00+00:00",
        "load_average": [[3.5, 2.0, 1.0], [4.0, 2.5, 1.5]],
    }
    direct = {"label": "direct", "sizes": [_figures(10_000, 120_000, 280.0)]}
    solana = {"fanout": {"slots": {"scopecast-solana-direct": direct}}}
    text = "\n".join(report._solana_fleet_section(fleet, solana))
    assert "### slotNotification through Redis to 2 web processes" in text
    assert f"| {LABEL} | 10,000 | 40,000 | 40,000 | 450.0 | 900.0 | 0.90 | 0.50 |" in text
    assert "120,000 notifications/s, p99 280.0 ms" in text
    assert "40,000/s, p99 900.0 ms" in text
    assert "web0 1.5, worker 0.25" in text
    assert "load average [3.5, 2.0, 1.0] at the start of this workload, [4.0, 2.5, 1.5]" in text
    # without the in-process figures (a run of the fleet alone), the row stands alone
    alone = "\n".join(report._solana_fleet_section(fleet, None))
    assert "In one process" not in alone
    assert report._solana_fleet_section(None, solana) == []
