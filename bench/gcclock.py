"""Time spent in the garbage collector of a Python server under test (``gc.callbacks``)."""

from __future__ import annotations

import gc
import time
from collections import deque


class GcClock:
    """Time spent in each generation's collections (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.seconds = [0.0, 0.0, 0.0]
        self.collections = [0, 0, 0]
        #: Each collection's pause (generation, wall seconds, CPU seconds), the most recent ones:
        #: on a machine shared with others the wall time includes waits for the CPU.
        self.pauses: deque[tuple[int, float, float]] = deque(maxlen=100_000)
        self._started = 0.0
        self._started_cpu = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            self._started_cpu = time.thread_time()
        else:
            generation = info["generation"]
            pause = time.perf_counter() - self._started
            self.seconds[generation] += pause
            self.collections[generation] += 1
            self.pauses.append((generation, pause, time.thread_time() - self._started_cpu))

    def take_pauses(self) -> list[tuple[int, float, float]]:
        """The pauses since the last call."""
        taken = list(self.pauses)
        self.pauses.clear()
        return taken


GC_CLOCK = GcClock()
