"""A handler that keeps what it is given, for tests to wait on without polling (nor sleeping to
see that nothing more comes: :meth:`Collector.before` waits for markers published last)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

import trio

T = TypeVar("T")


class Collector(Generic[T]):
    def __init__(self) -> None:
        self.items: list[T] = []
        #: The bus positions items came with (a bus reader's handler is given one).
        self.positions: list[str] = []
        self._grew = trio.Event()

    def __call__(self, item: T, position: str | None = None) -> None:
        self.items.append(item)
        if position is not None:
            self.positions.append(position)
        self._grew.set()
        self._grew = trio.Event()

    async def wait_until(self, done: Callable[[list[T]], bool]) -> list[T]:
        while not done(self.items):
            await self._grew.wait()
        return self.items

    async def wait_for(self, count: int) -> list[T]:
        """Wait until ``count`` items arrived."""
        return await self.wait_until(lambda items: len(items) >= count)

    async def before(self, markers: Sequence[T]) -> list[T]:
        """Wait until every one of ``markers`` arrived; what arrived except them.

        The test publishes the markers after everything else, one on each stream this handler
        reads: a stream delivers in order, so a repeat or a stray of anything published earlier
        arrives before its stream's marker and shows in what this returns, with no time to wait.
        """
        await self.wait_until(lambda items: all(marker in items for marker in markers))
        items = list(self.items)
        for marker in markers:
            items.remove(marker)
        return items
