"""``scopecast`` with gauges the harness reads: ``python -m soak.gauged serve ...`` is ``scopecast
serve ...`` that also writes, every second, its trio task count and its garbage-collector pauses
(the longest of the last ten seconds, of the whole run, and since it serves) to
``$SOAK_GAUGES/<pid>.json``: the broker's ``/metrics`` has neither. RSS and fds are read from ``/proc`` by the harness itself.

Asked (a file ``<pid>.census-please`` in that folder), it also counts once what the garbage collector
will never free: the objects in cycles among those ``broker.operator.gc_keeper`` froze (a frozen
object is never looked at again, so garbage among them stays for good), to
``<pid>-census.json``."""

from __future__ import annotations

import gc
import json
import os
import sys
import threading
import time
import tracemalloc
from collections import Counter, deque
from pathlib import Path
from typing import Any

import trio

from broker import cli


class Gauges(trio.abc.Instrument):
    """Live trio tasks (an instrument) and GC pauses (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.tasks = 0
        self.max_pause = 0.0
        self.max_pause_cpu = 0.0  # the same pauses in this thread's CPU time (no preemption)
        self.gc_seconds = 0.0
        #: The longest pauses since the process serves, in wall and CPU time: the collections that
        #: began once start-up's objects were frozen (``broker.operator.gc_keeper`` freezes them
        #: before the process says it listens). Start-up's own (imports, the first freeze's
        #: collection of everything they built) make no connection wait: kept apart.
        self.max_serving = 0.0
        self.max_serving_cpu = 0.0
        self.max_start_up_cpu = 0.0
        self._started = 0.0
        self._started_cpu = 0.0
        self._serving = False
        #: While the census runs: its own collection is no pause of the process's.
        self.counting = False
        gc.callbacks.append(self._gc)

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        self.tasks += 1

    def task_exited(self, task: trio.lowlevel.Task) -> None:
        self.tasks -= 1

    def _gc(self, phase: str, info: dict[str, int]) -> None:
        if self.counting:
            return
        if phase == "start":
            self._serving = gc.get_freeze_count() > 0
            self._started = time.perf_counter()
            self._started_cpu = time.thread_time()
            return
        pause = time.perf_counter() - self._started
        cpu = time.thread_time() - self._started_cpu
        self.gc_seconds += pause
        self.max_pause = max(self.max_pause, pause)
        self.max_pause_cpu = max(self.max_pause_cpu, cpu)
        if self._serving:
            self.max_serving = max(self.max_serving, pause)
            self.max_serving_cpu = max(self.max_serving_cpu, cpu)
        else:
            self.max_start_up_cpu = max(self.max_start_up_cpu, cpu)

    def write_every_second(self, path: Path) -> None:
        seconds: deque[float] = deque(maxlen=10)  # the longest pause of each of the last 10 s
        longest = longest_cpu = 0.0
        asked = path.with_name(f"{path.stem}.census-please")
        while True:
            time.sleep(1.0)
            if asked.exists():
                census = self.census_of_cycles()
                part = path.with_name(f"{path.stem}-census.part")
                part.write_text(json.dumps(census))
                part.replace(path.with_name(f"{path.stem}-census.json"))
                asked.unlink()
            seconds.append(self.max_pause)
            self.max_pause = 0.0
            longest = max(longest, seconds[-1])
            longest_cpu = max(longest_cpu, self.max_pause_cpu)
            self.max_pause_cpu = 0.0
            figures = {
                "tasks": self.tasks,
                "gc_max_pause_ms": round(max(seconds) * 1000, 3),
                "gc_max_pause_ms_ever": round(longest * 1000, 3),
                "gc_max_pause_cpu_ms_ever": round(longest_cpu * 1000, 3),
                "gc_max_pause_ms_serving": round(self.max_serving * 1000, 3),
                "gc_max_pause_cpu_ms_serving": round(self.max_serving_cpu * 1000, 3),
                "gc_max_pause_cpu_ms_start_up": round(self.max_start_up_cpu * 1000, 3),
                "gc_seconds": round(self.gc_seconds, 4),
            }
            part = path.with_suffix(".part")
            part.write_text(json.dumps(figures))
            part.replace(path)

    def census_of_cycles(self) -> dict[str, Any]:
        """The objects in cycles that nothing else refers to, frozen ones included, by type;
        then they are freed. The server's thread waits meanwhile (its keeper freezes too)."""
        switch = sys.getswitchinterval()
        sys.setswitchinterval(1000.0)  # no switch to the other thread while this one runs
        self.counting = True
        started = time.perf_counter()
        try:
            frozen = gc.get_freeze_count()
            gc.unfreeze()
            gc.set_debug(gc.DEBUG_SAVEALL)
            gc.collect()
            found = Counter(type(each).__qualname__ for each in gc.garbage)
            gc.set_debug(0)
            gc.garbage.clear()
            gc.collect()  # what was saved is freed now, then the rest frozen again
            gc.freeze()
        finally:
            gc.set_debug(0)
            self.counting = False
            sys.setswitchinterval(switch)
        return {
            "objects": sum(found.values()),
            "by_type": dict(found.most_common(12)),
            "frozen_before": frozen,
            "seconds": round(time.perf_counter() - started, 3),
        }


def trace_allocations(path: Path, every: float, frames: int) -> None:
    """With ``SOAK_TRACEMALLOC=N``: tracemalloc (N frames), and every ``every`` seconds the
    allocations grown since the first snapshot (taken after one period of warm-up), by line, to
    ``path``: what the RSS growth of a soak is made of."""
    tracemalloc.start(frames)
    time.sleep(every)
    first = tracemalloc.take_snapshot()
    while True:
        time.sleep(every)
        snapshot = tracemalloc.take_snapshot()
        grown = snapshot.compare_to(first, "traceback" if frames > 1 else "lineno")[:25]
        current, _peak = tracemalloc.get_traced_memory()
        lines = [f"# {time.strftime('%H:%M:%S')} traced {current / 2**20:.1f} MiB"]
        for stat in grown:
            lines.append(str(stat))
            if frames > 1:
                lines.extend("    " + line for line in stat.traceback.format()[-2 * frames :])
        with path.open("a") as out:
            out.write("\n".join(lines) + "\n\n")


def main() -> None:
    gauges = Gauges()
    folder = Path(os.environ["SOAK_GAUGES"])
    if frames := int(os.environ.get("SOAK_TRACEMALLOC", "0")):
        threading.Thread(
            target=trace_allocations,
            args=(folder / f"{os.getpid()}-tracemalloc.txt", 60.0, frames),
            daemon=True,
        ).start()
    threading.Thread(
        target=gauges.write_every_second, args=(folder / f"{os.getpid()}.json",), daemon=True
    ).start()
    run = trio.run

    def instrumented(*args: Any, **kwargs: Any) -> Any:
        kwargs["instruments"] = [*kwargs.get("instruments", ()), gauges]
        return run(*args, **kwargs)

    trio.run = instrumented  # type: ignore[assignment]  # broker.cli calls trio.run(...)
    cli.main(sys.argv[1:])


if __name__ == "__main__":
    main()
