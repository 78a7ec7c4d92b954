"""The soak's census (``soak.gauged``) finds garbage the GC keeper froze for good, and frees it."""

from __future__ import annotations

import gc

from soak.gauged import Gauges


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def test_the_census_counts_frozen_cycles_then_frees_them() -> None:
    gauges = Gauges()
    try:
        gc.collect()
        first, second = _Node(), _Node()
        first.other, second.other = second, first
        gc.freeze()  # as the keeper does while both are alive
        del first, second  # a cycle among frozen objects: the collector never sees it
        assert gc.collect() == 0
        census = gauges.census_of_cycles()
        assert census["by_type"].get("_Node") == 2
        assert census["objects"] >= 2
        assert gc.get_freeze_count() > 0  # frozen again, as the keeper left it
        assert gauges.census_of_cycles()["by_type"].get("_Node") is None  # freed by the first
    finally:
        gc.callbacks.remove(gauges._gc)
        gc.unfreeze()
