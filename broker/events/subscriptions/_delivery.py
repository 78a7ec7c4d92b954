"""Fan-outs one after another, in slices: a burst of half a million frames no longer holds up the
calls, pings and smaller events that arrive while it is sent.

What a cursor says relies on the order kept here. A fan-out begins (its chain's position
advances, its subscribers are taken as they are then) only when the one before it has ended, and
whatever else says where a connection stands (a session change's cursor, the cursor a graceful
stop closes with) waits its turn behind the fan-outs begun before it (:meth:`DeliveryQueue.submit`,
:meth:`DeliveryQueue.delivered`). So between two slices of one event's fan-out, the live positions
are that event's, and no connection is told of a position before it has that position's frames.
A resume stays exact too: it reads up to the position of the fan-out under way (whose entry is
kept in memory as the fan-out begins) and attaches its subscriptions after that fan-out took its
subscribers, so the event reaches it once, by the replay.

The fan-outs submitted in one delivery step (:class:`~broker.transport.outbox.Cork`: a block's
head and logs, one read of the bus) are one step for the connections with several subscriptions:
their frames are held across the slices until the step's last fan-out ends, then a final step
(:class:`_Release`) writes them, one write per connection, in slices too. A frame sent to such a
connection meanwhile (a reply, a ping, a session change in its turn) writes what it holds first,
so the order above holds and nothing waits for the step. The queue is busy (:meth:`delivered`
waits) until what was held is written.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from typing import Final, Protocol

import trio

from broker.transport.outbox import Cork, corked

#: How long one slice of a fan-out may run before other tasks get their turn. A call arriving
#: during a burst waits at most about this long (plus the other tasks' turns).
SLICE_SECONDS: Final = 0.004
#: Fan-outs (and turns) waiting behind the one under way, at most. Past it the event path pays:
#: the waiting ones are delivered at once, in the reader's task, which holds the bus reader back
#: (events arrive far slower than they are fanned out; this only bounds the queue).
MAX_WAITING: Final = 256


class Step(Protocol):
    """A fan-out under way."""

    def run(self, until: float) -> bool:
        """Deliver until done (True) or until ``time.perf_counter()`` passes ``until`` (False)."""
        ...


Begin = Callable[[], "Step | None"]
"""Begins a fan-out when its turn comes (None: nothing left to do after what it did at once)."""


class DeliveryQueue:
    """The fan-outs of one process, run in order, each in slices of :data:`SLICE_SECONDS`.

    Without :meth:`serve` running (a hub used on its own) every fan-out runs to the end at once.
    """

    __slots__ = (
        "_current",
        "_holding",
        "_idle",
        "_serving",
        "_waiting",
        "_wake",
        "max_waiting",
        "slice",
    )

    def __init__(self, *, slice_seconds: float = SLICE_SECONDS, max_waiting: int = MAX_WAITING):
        self.slice = slice_seconds
        self.max_waiting = max_waiting
        self._current: Step | None = None
        # each fan-out to begin, with the step (Cork batch) it was submitted in
        self._waiting: deque[tuple[Begin, int]] = deque()
        #: The step whose fan-outs are under way while their frames are held (None: none).
        self._holding: int | None = None
        self._serving = False
        self._wake: trio.Event | None = None
        self._idle: trio.Event | None = None

    @property
    def busy(self) -> bool:
        """Whether a fan-out is under way or waiting, or frames of one are still held."""
        return self._current is not None or bool(self._waiting) or self._holding is not None

    def submit(self, begin: Begin) -> None:
        """Begin a fan-out after those submitted before it: at once if none is under way (its
        first slice runs in the caller's task), else in :meth:`serve`'s task."""
        busy = self.busy
        cork = corked()
        self._waiting.append((begin, cork.batch or cork.new_batch()))
        if not self._serving:
            self._run(math.inf)
        elif not busy:
            if not self._run(time.perf_counter() + self.slice) and self._wake is not None:
                self._wake.set()
        elif len(self._waiting) > self.max_waiting:
            self._run(math.inf)

    def in_turn(self, call: Callable[[], None]) -> None:
        """Call ``call`` once the fan-outs submitted before are delivered (at once if none is
        under way)."""

        def begin() -> None:
            call()

        self.submit(begin)

    async def delivered(self) -> None:
        """Return once no fan-out is under way or waiting, and what one held is written. The
        caller's code up to its next checkpoint runs before any other fan-out begins."""
        await trio.lowlevel.checkpoint()
        while self.busy:
            if self._idle is None:
                self._idle = trio.Event()
            await self._idle.wait()

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run the fan-outs that do not finish in one slice, a slice at a time, until cancelled
        (then what is left is delivered at once)."""
        self._serving = True
        task_status.started()
        try:
            while True:
                if not self.busy:
                    self._wake = trio.Event()
                    await self._wake.wait()
                    continue
                # Every other runnable task (a call's reply, an HTTP request, a ping) goes first.
                await trio.lowlevel.checkpoint()
                self._run(time.perf_counter() + self.slice)
        finally:
            self._serving = False
            self._wake = None
            self._run(math.inf)

    def _run(self, until: float) -> bool:
        """Deliver until nothing is left (True) or ``until`` has passed (False)."""
        cork = corked()
        with cork:  # what this slice holds outside a step of the queue's goes as it ends
            return self._run_held(cork, until)

    def _run_held(self, cork: Cork, until: float) -> bool:
        while True:
            try:
                current = self._current
                if current is None:
                    current = self._current = self._next_step(cork)
                    if current is None:
                        if self._holding is not None:
                            return False  # the step may still submit: released in a later slice
                        break
                done = current.run(until)
            except BaseException:
                self._current = None  # a fan-out that failed (or failed to begin) is not retried
                if self._holding is not None:  # what it held goes now: nothing stays held
                    self._end_hold(cork, math.inf)
                raise
            if not done:
                return False
            self._current = None
        if self._idle is not None:
            self._idle.set()
            self._idle = None
        return True

    def _next_step(self, cork: Cork) -> Step | None:
        """The next fan-out, begun; or the release of a step's held frames once its fan-outs are
        all delivered; None when nothing is left."""
        waiting = self._waiting
        while True:
            holding = self._holding
            if holding is not None and not waiting:
                if holding == cork.batch and self._serving:
                    return None  # the step that submitted them is under way: it may add more
                return _Release(self, cork)
            if holding is not None and waiting[0][1] != holding:
                return _Release(self, cork)
            if not waiting:
                return None
            begin, batch = waiting.popleft()
            if holding is None:
                # The fan-outs submitted in one step (a block's head and logs, one bus read) are
                # one step for the connections that hold: their frames leave in one write each.
                self._holding = batch
                cork.holds += 1
            # A fan-out begins (its position advanced, its subscribers taken) only here, once
            # the one before has ended: the cursors of a connection's frames only go forward.
            step = begin()
            if step is not None:
                return step

    def _end_hold(self, cork: Cork, until: float) -> bool:
        """Release what the step held, until ``until`` (True: all of it, and the step ends)."""
        if not cork.release(until):
            return False
        self._holding = None
        cork.holds -= 1
        return True


class _Release:
    """The end of a step: its held frames written, one write per connection, in slices."""

    __slots__ = ("_cork", "_queue")

    def __init__(self, queue: DeliveryQueue, cork: Cork) -> None:
        self._queue = queue
        self._cork = cork

    def run(self, until: float) -> bool:
        return self._queue._end_hold(self._cork, until)
