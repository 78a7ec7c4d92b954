"""Short garbage collections in a process that holds thousands of connections.

A full collection scans every object the collector tracks: about 36 per idle dapp connection (a
session and a subscription; 65 before they were cut), so at 2,500 connections a full collection
paused every connection for 200 ms and more (the soak's figure). Almost none of those objects is
ever freed by the collector: a connection that ends is freed by reference counting (it leaves no
cycle: ``tests/broker/test_gc_keeper.py``). So the keeper collects what is new and then freezes it
(``gc.freeze()``), at start-up and every :data:`FREEZE_INTERVAL`: the collector's generations then
hold only what the last interval made, and a collection, full or not, costs what that interval
made, not what the process holds. Frozen objects still go as soon as nothing refers to them; only a
cycle among them would be kept, which is why connections must leave none.
"""

from __future__ import annotations

import gc
import logging
import time
from typing import Final

import trio

log = logging.getLogger(__name__)

#: How often what is new is collected and frozen. Each time costs what the interval made (about
#: 5 ms for a thousand new connections' objects), against a full collection of everything. A
#: quarter of a second, not one: CPython's own full collections (once the unfrozen survivors
#: grew by a quarter) then also find at most a quarter second's objects. Measured with
#: ``bench/churn.py`` (2,500 dapp connections, 50 a second closed and opened again): p99 of the
#: pauses 1.3-1.7 ms of CPU instead of 16-17 ms with one second.
FREEZE_INTERVAL: Final = 0.25
_SLOW: Final = 0.05


def collect_and_freeze() -> float:
    """Collect what is not frozen yet, freeze what survives; the seconds it took."""
    started = time.perf_counter()
    gc.collect()
    gc.freeze()
    return time.perf_counter() - started


async def serve_gc_keeper(
    interval: float = FREEZE_INTERVAL,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Freeze what start-up built, then what each ``interval`` adds, until cancelled."""
    collect_and_freeze()
    task_status.started()
    while True:
        await trio.sleep(interval)
        took = collect_and_freeze()
        if took > _SLOW:
            log.info("collecting and freezing new objects took %.0f ms", took * 1000)
