"""The bench's percentile: nearest rank, so that p99 of 100 figures is not simply the largest."""

import math

from bench.stats import percentile


def test_p99_of_a_hundred_is_the_ninety_ninth_smallest() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.99) == 99.0
    assert max(values) == 100.0


def test_median_and_ends() -> None:
    values = [5.0, 1.0, 3.0, 2.0, 4.0]
    assert percentile(values, 0.5) == 3.0
    assert percentile(values, 0.0) == 1.0
    assert percentile(values, 1.0) == 5.0


def test_one_stray_figure_in_two_hundred_does_not_set_p99() -> None:
    values = [70.0] * 199 + [130.0]
    assert percentile(values, 0.99) == 70.0
    assert percentile([70.0] * 198 + [130.0, 131.0], 0.99) == 70.0
    assert percentile([70.0] * 197 + [130.0] * 3, 0.99) == 130.0


def test_nothing_measured() -> None:
    assert math.isnan(percentile([], 0.99))
