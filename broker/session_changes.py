"""Session changes between processes: who must be told that an identity's scopes changed.

In one process the change is delivered at once. With Redis, every web process receives every change
(see :mod:`broker.redis_bus`) and tells the connections of that identity it holds.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable

import msgspec
import trio

from broker.sessions import Identity


class SessionChange(msgspec.Struct, frozen=True):
    """An identity's session changed; ``session`` is the encoded new session (None: ended).

    ``source`` and ``exclude`` name the process and the connection whose own request made the
    change: that connection got the answer to its request and is not notified again.
    """

    identity: Identity
    session: bytes | None
    source: str = ""
    exclude: int | None = None


ChangeHandler = Callable[[SessionChange], object]


class SessionChangeBus(ABC):
    @abstractmethod
    async def publish(self, change: SessionChange) -> None:
        """Tell every process (this one included) about ``change``."""

    @abstractmethod
    async def serve_reader(
        self,
        handler: ChangeHandler,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Call ``handler`` for every change until cancelled."""


class MemoryChangeBus(SessionChangeBus):
    def __init__(self) -> None:
        self._handlers: list[ChangeHandler] = []

    async def publish(self, change: SessionChange) -> None:
        for handler in self._handlers:
            handler(change)

    async def serve_reader(
        self,
        handler: ChangeHandler,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        self._handlers.append(handler)
        try:
            task_status.started()
            await trio.sleep_forever()
        finally:
            self._handlers.remove(handler)
