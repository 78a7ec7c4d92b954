"""The event bus between ingestion and fan-out.

In one process (no ``REDIS_URL``) the bus hands each event straight to its subscribers. With Redis,
the worker appends events to a stream per chain and every web process reads them (see
:mod:`broker.redis_bus`). Both keep the same contract: events of one chain arrive in order, once.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable

import trio

from broker.events import ChainEvent

EventHandler = Callable[[ChainEvent], object]


class EventBus(ABC):
    """Carries chain events from the ingestion side to the fan-out side."""

    @abstractmethod
    async def publish(self, event: ChainEvent) -> None:
        """Append one event (ordered per chain)."""

    @abstractmethod
    async def serve_reader(
        self,
        chains: list[str],
        handler: EventHandler,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Call ``handler`` for every event of ``chains``, in order, until cancelled."""


class MemoryBus(EventBus):
    """The in-process bus: publishing is delivering."""

    def __init__(self) -> None:
        self._handlers: list[EventHandler] = []

    async def publish(self, event: ChainEvent) -> None:
        for handler in self._handlers:
            handler(event)

    async def serve_reader(
        self,
        chains: list[str],
        handler: EventHandler,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        wanted = set(chains)

        def filtered(event: ChainEvent) -> object:
            return handler(event) if event.chain in wanted else None

        self._handlers.append(filtered)
        try:
            task_status.started()
            await trio.sleep_forever()
        finally:
            self._handlers.remove(filtered)
