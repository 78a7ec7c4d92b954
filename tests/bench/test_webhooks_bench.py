"""The webhooks workload in ``python -m bench`` (bench/webhooks.py): ``--only webhooks`` is a
workload name, a partial run's figures replace the previous ones, and the report renders the
table and the fan-out's cost with and without webhooks."""

from __future__ import annotations

from typing import Any

from bench import cli, report
from bench.webhooks import webhooks_section


def _row(mode: str, hooks: int, p50: float) -> dict[str, Any]:
    return {
        "mode": mode,
        "webhooks": hooks,
        "events": 400,
        "published_s": 2.1,
        "delivered": 400 * hooks,
        "deliveries_per_s": 190 * hooks,
        "fanout_p50_ms": p50,
        "fanout_p99_ms": p50 * 4,
        "notifications": 20_000,
    }


FIGURES = {
    "rate": 200,
    "seconds": 2,
    "clients": 50,
    "load_average": {"start": [1.5, 1.0, 0.5], "end": [1.75, 1.0, 0.5]},
    "rows": [_row("paced", 0, 2.5), _row("paced", 1, 4.0), _row("paced", 100, 9.0)],
}


def test_webhooks_is_a_workload_and_a_partial_run_replaces_its_figures() -> None:
    assert "webhooks" in cli.WORKLOADS
    previous = {"webhooks": {"rows": []}, "burst": {"kept": True}}
    partial = {"webhooks": FIGURES, "date": "d", "mode": "quick", "machine": {}, "method": {}}
    merged = cli.merge(previous, partial, ["webhooks"])
    assert merged["webhooks"] is FIGURES
    assert merged["burst"] == {"kept": True}
    assert merged["partial_updates"][-1]["only"] == ["webhooks"]


def test_the_report_shows_deliveries_and_the_fan_out_with_and_without_webhooks() -> None:
    assert webhooks_section(None) == []
    lines = webhooks_section(FIGURES)
    text = "\n".join(lines)
    assert "| paced | 100 | 40,000/40,000 | 19,000 | 9.0 | 36.0 |" in lines
    assert "p50 2.5 ms without webhooks, 4.0 ms with 1, 9.0 ms with 100" in text
    assert "load average [1.5, 1.0, 0.5] at its start" in text
    assert report.webhooks_section is webhooks_section  # the report renders it
