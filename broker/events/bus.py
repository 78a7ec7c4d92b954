"""The event bus between ingestion and fan-out.

It carries every chain's events: the EVM profile's block events, and a chain family's own events
(:class:`~broker.events.chain_events.FamilyEvent`) when the family says how they travel
(:meth:`adapters.base.SubscriptionFamily.event_codec`, given to :meth:`EventBus.carry`).
In one process (no ``REDIS_URL``) the bus hands each event straight to its subscribers. With Redis,
the worker appends events to a stream per chain and every web process reads them (see
:mod:`broker.redis`). Both keep the same contract: events of one chain arrive in order, once,
each with its *position* on the chain's log, and a reader can read back what it delivered after a
position (:meth:`EventBus.read_range`) for as long as the bus retains it: that is how a dropped
connection is resumed (:mod:`broker.events.resume`).
"""

from __future__ import annotations

import itertools
import secrets
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Sequence
from typing import Final, Generic, TypeVar

import trio

from adapters.base import EventCodec
from broker.events.chain_events import HubEvent
from broker.transport.outbox import corked

Position = str
"""Where an entry sits on a chain's (or the session changes') log; opaque outside its bus."""

EventHandler = Callable[[HubEvent, Position], object]

#: How long an entry stays readable by :meth:`EventBus.read_range` (seconds), by default.
DEFAULT_RESUME_WINDOW: Final = 300.0
#: Entries a memory log keeps at most, whatever their age.
MEMORY_RETAINED: Final = 4096

T = TypeVar("T")


#: Numbers every memory log's entries: positions of one process's logs compare across logs.
_numbers = itertools.count(1)


class MemoryLog(Generic[T]):
    """An in-process log with positions and bounded retention (sans-io; the clock is given).

    Positions are ``m<epoch>-<n>``: the epoch is new for every log, so a position handed out by an
    earlier process (or an earlier log) is never mistaken for one of this log's; ``n`` comes from
    one counter for the whole process, so entries of two logs can be put in the order they came.
    """

    def __init__(
        self,
        *,
        window: float = DEFAULT_RESUME_WINDOW,
        retained: int = MEMORY_RETAINED,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.window = window
        self._clock = clock
        self._prefix = f"m{secrets.token_hex(3)}-"
        self._last = 0
        self._trimmed = 0  # the number of the newest entry dropped
        self._entries: deque[tuple[int, float, T]] = deque(maxlen=max(retained, 1))

    @property
    def position(self) -> Position:
        """The position of the newest entry (``…-0`` before the first)."""
        return f"{self._prefix}{self._last}"

    def append(self, value: T) -> Position:
        if len(self._entries) == self._entries.maxlen:
            self._trimmed = self._entries[0][0]
        self._last = next(_numbers)
        now = self._clock()
        self._entries.append((self._last, now, value))
        self._trim(now)
        return self.position

    def _trim(self, now: float) -> None:
        entries = self._entries
        while len(entries) > 1 and entries[0][1] < now - self.window:
            self._trimmed = entries.popleft()[0]

    def number(self, position: Position) -> int | None:
        """The entry number of one of this log's positions (None: not one of this log's)."""
        if not position.startswith(self._prefix):
            return None
        digits = position[len(self._prefix) :]
        return int(digits) if digits.isdigit() else None

    def read_range(self, after: Position, upto: Position) -> list[tuple[Position, T]] | None:
        """The entries after ``after`` up to ``upto`` (inclusive), oldest first; None when
        ``after`` is not this log's or entries after it are no longer retained."""
        self._trim(self._clock())
        first, last = self.number(after), self.number(upto)
        if first is None or last is None or first > self._last:
            return None
        if first < last and first < self._trimmed:
            return None  # trimmed (too many entries since, or too long ago)
        return [(f"{self._prefix}{n}", v) for n, _, v in self._entries if first < n <= last]


class EventBus(ABC):
    """Carries chain events from the ingestion side to the fan-out side."""

    def carry(self, chain: str, codec: EventCodec) -> None:  # noqa: B027 - optional
        """Carry the family events of ``chain``, encoded by ``codec`` where they leave the
        process (a bus in this process's memory hands them over as they are: nothing to do)."""

    @abstractmethod
    async def publish(self, event: HubEvent) -> None:
        """Append one event (ordered per chain)."""

    async def publish_all(self, events: Sequence[HubEvent]) -> None:
        """Append ``events`` in order (a block's head and logs): one :meth:`publish` each, unless
        the bus can deliver them in one step (then a connection gets them in one write)."""
        for event in events:
            await self.publish(event)

    @abstractmethod
    async def serve_reader(
        self,
        chains: list[str],
        handler: EventHandler,
        *,
        task_status: trio.TaskStatus[dict[str, Position]] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Call ``handler(event, position)`` for every event of ``chains``, in order, until
        cancelled. Started, it reports each chain's position before the first event it delivers."""

    @abstractmethod
    async def read_range(
        self, chain: str, after: Position, upto: Position
    ) -> list[tuple[Position, HubEvent]] | None:
        """The events of ``chain`` after ``after`` up to ``upto``, oldest first; None when they
        cannot all be read (``after`` unknown or malformed, or entries after it trimmed)."""

    async def holds(self, chain: str, position: Position) -> bool:
        """Whether ``chain``'s log still holds the entry at ``position`` (a bus in this process's
        memory loses nothing while the process lives: True)."""
        await trio.lowlevel.checkpoint()
        return True


class MemoryBus(EventBus):
    """The in-process bus: publishing is delivering."""

    def __init__(self, *, window: float = DEFAULT_RESUME_WINDOW) -> None:
        self.window = window
        self._handlers: list[tuple[frozenset[str], EventHandler]] = []
        self._logs: dict[str, MemoryLog[HubEvent]] = {}

    def _log(self, chain: str) -> MemoryLog[HubEvent]:
        log = self._logs.get(chain)
        if log is None:
            log = self._logs[chain] = MemoryLog(window=self.window)
        return log

    async def publish(self, event: HubEvent) -> None:
        # A checkpoint, as trio's async functions are, before the event is delivered (cancelled:
        # not published). Measured: 13 us a publish, once per event, where fanning an event out to
        # 1,000 subscribers takes about 7 ms (docs/benchmarks): 0.2 %.
        await trio.lowlevel.checkpoint()
        self._deliver(event)

    async def publish_all(self, events: Sequence[HubEvent]) -> None:
        # One checkpoint (cancelled: none published), then every event in one delivery step.
        await trio.lowlevel.checkpoint()
        with corked():
            for event in events:
                self._deliver(event)

    def _deliver(self, event: HubEvent) -> None:
        position = self._log(event.chain).append(event)
        for chains, handler in self._handlers:
            if event.chain in chains:
                handler(event, position)

    async def serve_reader(
        self,
        chains: list[str],
        handler: EventHandler,
        *,
        task_status: trio.TaskStatus[dict[str, Position]] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        entry = (frozenset(chains), handler)
        self._handlers.append(entry)
        try:
            task_status.started({chain: self._log(chain).position for chain in chains})
            await trio.sleep_forever()
        finally:
            self._handlers.remove(entry)

    async def read_range(
        self, chain: str, after: Position, upto: Position
    ) -> list[tuple[Position, HubEvent]] | None:
        await trio.lowlevel.checkpoint()
        return self._log(chain).read_range(after, upto)
