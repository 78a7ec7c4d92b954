"""Progress of a chain import, as one line rewritten on a terminal (and nothing elsewhere)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO


def progress_line(done: int, total: int, seconds: float) -> str:
    """``importing blocks: 1,200/5,000 (400 blocks/s, 10 s left)``."""
    rate = done / seconds if seconds > 0 else 0.0
    left = (total - done) / rate if rate > 0 else 0.0
    return f"importing blocks: {done:,}/{total:,} ({rate:,.0f} blocks/s, {left:,.0f} s left)"


def summary_line(total: int, seconds: float) -> str:
    rate = total / seconds if seconds > 0 else 0.0
    return f"imported {total:,} blocks in {seconds:.1f} s ({rate:,.0f} blocks/s)"


class TerminalProgress:
    """Reports to ``stream`` only when it is a terminal, at most ``per_second`` times a second."""

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        per_second: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._tty = self._stream.isatty()
        self._clock = clock
        self._interval = 1.0 / per_second
        self._started = clock()
        self._last = float("-inf")

    def __call__(self, done: int, total: int) -> None:
        if not self._tty:
            return
        now = self._clock()
        if done < total and now - self._last < self._interval:
            return
        self._last = now
        self._stream.write("\r" + progress_line(done, total, now - self._started) + "\x1b[K")
        if done == total:
            self._stream.write("\r" + summary_line(total, now - self._started) + "\x1b[K\n")
        self._stream.flush()
