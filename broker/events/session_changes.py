"""Session changes between processes: who must be told that an identity's scopes changed.

In one process the change is delivered at once. With Redis, every web process receives every change
(see :mod:`broker.redis`) and tells the connections of that identity it holds.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable

import msgspec
import trio

from broker.events.bus import DEFAULT_RESUME_WINDOW, MemoryLog, Position
from broker.sessions import Identity
from broker.sessions.metamask import AccountsChanged


class SessionChange(msgspec.Struct, frozen=True, gc=False):
    """An identity's session changed; ``session`` is the encoded new session (None: ended).

    Untracked by the garbage collector (``gc=False``): it holds strings, bytes and the
    untracked :class:`Identity` and :class:`AccountsChanged`, so it can be in no cycle; the
    change logs keep one per change for the resume window.

    ``source`` and ``exclude`` name the process and the connection whose own request made the
    change: that connection got the answer to its request and is not notified again.
    """

    identity: Identity
    session: bytes | None
    source: str = ""
    exclude: int | None = None
    #: The ``metamask_accountsChanged`` the change calls for (MetaMask's Solana wallet follows
    #: its account by it), worked out where the session before the change was known.
    accounts_changed: AccountsChanged | None = None


ChangeHandler = Callable[[SessionChange, Position], object]


class SessionChangeBus(ABC):
    @abstractmethod
    async def publish(self, change: SessionChange) -> None:
        """Tell every process (this one included) about ``change``."""

    @abstractmethod
    async def serve_reader(
        self,
        handler: ChangeHandler,
        *,
        task_status: trio.TaskStatus[Position] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Call ``handler(change, position)`` for every change until cancelled; started, it
        reports the position before the first change it delivers."""

    @abstractmethod
    async def read_range(
        self, after: Position, upto: Position
    ) -> list[tuple[Position, SessionChange]] | None:
        """The changes after ``after`` up to ``upto``, oldest first; None when they cannot all be
        read (see :meth:`broker.events.bus.EventBus.read_range`)."""

    async def holds(self, position: Position) -> bool:
        """Whether the log still holds the change at ``position`` (see
        :meth:`broker.events.bus.EventBus.holds`)."""
        await trio.lowlevel.checkpoint()
        return True


class MemoryChangeBus(SessionChangeBus):
    def __init__(self, *, window: float = DEFAULT_RESUME_WINDOW) -> None:
        self._handlers: list[ChangeHandler] = []
        self._log: MemoryLog[SessionChange] = MemoryLog(window=window)

    async def publish(self, change: SessionChange) -> None:
        await trio.lowlevel.checkpoint()  # as trio's async functions; cancelled: not published
        position = self._log.append(change)
        for handler in self._handlers:
            handler(change, position)

    async def serve_reader(
        self,
        handler: ChangeHandler,
        *,
        task_status: trio.TaskStatus[Position] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        self._handlers.append(handler)
        try:
            task_status.started(self._log.position)
            await trio.sleep_forever()
        finally:
            self._handlers.remove(handler)

    async def read_range(
        self, after: Position, upto: Position
    ) -> list[tuple[Position, SessionChange]] | None:
        await trio.lowlevel.checkpoint()
        return self._log.read_range(after, upto)
