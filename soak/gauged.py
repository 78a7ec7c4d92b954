"""``scopecast`` with gauges the harness reads: ``python -m soak.gauged serve ...`` is ``scopecast
serve ...`` that also writes, every second, its trio task count and its garbage-collector pauses
(the longest of the last ten seconds, and of the whole run) to ``$SOAK_GAUGES/<pid>.json``: the
broker's ``/metrics`` has neither. RSS and fds are read from ``/proc`` by the harness itself."""

from __future__ import annotations

import gc
import json
import os
import sys
import threading
import time
from collections import deque
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
        self._started = 0.0
        self._started_cpu = 0.0
        gc.callbacks.append(self._gc)

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        self.tasks += 1

    def task_exited(self, task: trio.lowlevel.Task) -> None:
        self.tasks -= 1

    def _gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            self._started_cpu = time.thread_time()
            return
        pause = time.perf_counter() - self._started
        self.gc_seconds += pause
        self.max_pause = max(self.max_pause, pause)
        self.max_pause_cpu = max(self.max_pause_cpu, time.thread_time() - self._started_cpu)

    def write_every_second(self, path: Path) -> None:
        seconds: deque[float] = deque(maxlen=10)  # the longest pause of each of the last 10 s
        longest = longest_cpu = 0.0
        while True:
            time.sleep(1.0)
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
                "gc_seconds": round(self.gc_seconds, 4),
            }
            part = path.with_suffix(".part")
            part.write_text(json.dumps(figures))
            part.replace(path)


def main() -> None:
    gauges = Gauges()
    folder = Path(os.environ["SOAK_GAUGES"])
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
