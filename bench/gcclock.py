"""Time spent in the garbage collector of a Python server under test (``gc.callbacks``)."""

from __future__ import annotations

import gc
import time


class GcClock:
    """Time spent in each generation's collections (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.seconds = [0.0, 0.0, 0.0]
        self.collections = [0, 0, 0]
        self._started = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            generation = info["generation"]
            self.seconds[generation] += time.perf_counter() - self._started
            self.collections[generation] += 1


GC_CLOCK = GcClock()
