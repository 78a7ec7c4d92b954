"""What the garbage collector alone would free: objects in reference cycles.

The GC keeper (``broker.operator.gc_keeper``) freezes what is alive every quarter second, and a
cycle among frozen objects is never collected: what outlives a quarter second must be freed by
reference counting. Tests run the code under test with the collector off, then count here what
only a collection finds."""

from __future__ import annotations

import collections
import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_off() -> Iterator[None]:
    """No automatic collection inside (what forms a cycle stays for :func:`cyclic_garbage`)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def cyclic_garbage(modules: tuple[str, ...]) -> collections.Counter[str]:
    """The objects a collection frees now whose types come from ``modules`` (prefixes), by
    ``module.type``; then they are freed."""
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        return collections.Counter(
            f"{type(o).__module__}.{type(o).__qualname__}"
            for o in gc.garbage
            if type(o).__module__.startswith(modules)
        )
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.collect()
