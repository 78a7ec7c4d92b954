"""The one percentile every bench and soak figure uses."""

from __future__ import annotations

import math


def percentile(values: list[float], fraction: float) -> float:
    """The nearest-rank percentile: the smallest value with at least ``fraction`` of ``values``
    at or below it (NaN for none). Of 100 latencies, p99 is the 99th smallest, not the largest
    (the maximum is reported on its own)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(fraction * len(ordered)) - 1))]
