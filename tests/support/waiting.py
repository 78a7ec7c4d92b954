"""Waiting for what offers no event to wait on: a condition polled until it holds.

Most waits in the suite are on events (a :class:`~tests.redis.collect.Collector` growing, a
notification, a process's output line). Some things only show in a snapshot: a metric, a list the
operator API returns, another process's state, a key in Redis. :func:`eventually` polls those, so
that a test waits only as long as it must (no fixed delay that a slow machine could outlast), and a
condition that never holds fails naming what was awaited instead of with a bare timeout.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

import trio

T = TypeVar("T")

#: Seconds between two looks: short beside what is awaited (a round trip, a block, a process).
POLL_INTERVAL: Final = 0.01


async def eventually(
    probe: Callable[[], T | Awaitable[T]],
    what: str,
    *,
    within: float = 30.0,
    every: float = POLL_INTERVAL,
) -> T:
    """The first truthy value ``probe`` returns (it may be a coroutine function), called every
    ``every`` seconds (more than the default when each look costs a request); an
    ``AssertionError`` saying ``what`` was awaited if none comes within ``within`` seconds."""
    with trio.move_on_after(within):
        while True:
            found = probe()
            value = await found if inspect.isawaitable(found) else found
            if value:
                return value
            await trio.sleep(every)
    raise AssertionError(f"not within {within:g} s: {what}")
