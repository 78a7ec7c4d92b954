"""A connection's outbound byte path: direct non-blocking writes, a bounded backlog.

Fan-out calls :meth:`Outbox.send` for thousands of connections per event, so it never awaits and
never wakes a task when the socket can take the bytes at once (the common case). Only when the
kernel buffer is full are the unsent frames kept, and the socket is handed to the process's one
:class:`_Flusher`, which waits (on an epoll of its own) for the sockets that pushed back to become
writable and writes each backlog with one ``writev``: a burst that fills thousands of sockets
costs no task, coroutine or context per connection (they set the garbage collector off), and the
flusher's work per wake-up is bounded, so other tasks run between two batches.

A frame is queued while the bytes already waiting are within ``limit``, so one frame larger than
the limit (a full 10,000-log ``eth_getLogs`` reply is about 5 MB) still goes out whole, and the
backlog never exceeds ``limit`` plus one frame. A frame that finds more than ``limit`` bytes waiting
means the peer is a slow consumer: the queued frames are dropped (a frame already half-written is
finished so the stream stays well-formed), a final frame (the close frame) is queued in their
place, and ``on_overflow`` is called so that the connection can end itself. Messages are never
silently skipped: after an overflow nothing more is accepted.

During a delivery step (:class:`Cork`: the events of a block, a batch read from the bus, the
fan-outs they begin), :meth:`Outbox.send_held` holds a connection's frames instead of writing
them, and each connection's go out in one write as the step is released: a connection with
several subscriptions (a head and its logs, several accounts a slot wrote) gets them all in one
write, still as separate frames. Only such connections hold (the hub gives them ``send_held``). A
frame sent directly meanwhile (a reply, a ping) releases what is held first, then goes: the order
never changes and nothing waits for the step. What is held is the frame itself, or one
``bytearray`` per connection and step once there are two (no container the collector tracks).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import os
import select
import time
from collections import deque
from collections.abc import Awaitable, Callable
from itertools import islice
from typing import Any, Final, Protocol

import trio

log = logging.getLogger(__name__)

DEFAULT_LIMIT: Final = 4 * 1024 * 1024
_IOV_BATCH: Final = 512  # below IOV_MAX (1024 on Linux)
#: Sockets the flusher writes between two checkpoints.
_FLUSH_BATCH: Final = 256


class TaskStarter(Protocol):
    """Where the flusher runs: a nursery, or a connection that runs its tasks in one behind its
    own exception boundary."""

    def start_soon(self, async_fn: Callable[[], Awaitable[Any]]) -> None: ...


class Cork:
    """This trio run's delivery steps: while :attr:`holds` is above 0, :meth:`Outbox.send_held`
    holds frames; the outboxes holding some are in :attr:`held` until :meth:`release`.

    A step is held by a ``with corked():`` block (one bus read, one block's events) or by the hub's
    delivery queue across the slices of the fan-outs such a block began
    (:mod:`broker.events.subscriptions._delivery`), which then releases them a slice at a time."""

    __slots__ = ("_at", "_last_batch", "_nesting", "batch", "held", "holds")

    def __init__(self) -> None:
        self.holds = 0
        self.held: list[Outbox] = []
        #: The number of the ``with`` block under way (0: none): what it submits belongs together.
        self.batch = 0
        self._nesting = 0
        self._last_batch = 0
        self._at = 0  # held outboxes already released by a sliced release

    def new_batch(self) -> int:
        self._last_batch += 1
        return self._last_batch

    def __enter__(self) -> None:
        if not self._nesting:
            self.batch = self.new_batch()
        self._nesting += 1
        self.holds += 1

    def __exit__(self, *_: object) -> None:
        self._nesting -= 1
        if not self._nesting:
            self.batch = 0
        self.holds -= 1
        if not self.holds and self.held:
            self.release(math.inf)

    def release(self, until: float) -> bool:
        """Write what the held outboxes hold, one write each, until ``time.perf_counter()``
        passes ``until`` (False: some are left for the next call)."""
        held = self.held
        at = self._at
        while at < len(held):
            stop = min(len(held), at + _RELEASE_CHECK)
            for i in range(at, stop):
                _release(held[i])
            at = stop
            if at < len(held) and time.perf_counter() >= until:
                self._at = at
                return False
        held.clear()
        self._at = 0
        return True


#: Held outboxes released between two looks at the clock.
_RELEASE_CHECK: Final = 64


class Outbox:
    """Writes frames to one socket without awaiting; past ``limit`` bytes unsent, the peer is cut off.

    The backlog is at most ``limit`` plus the one frame that found it within the limit.
    """

    __slots__ = (
        "_backlog",
        "_backlog_size",
        "_cork",
        "_fd",
        "_flushing",
        "_head_offset",
        "_held",
        "_idle",
        "_nursery",
        "_on_overflow",
        "_overflow_frame",
        "_sock",
        "accepting",
        "broken",
        "limit",
        "overflowed",
    )

    def __init__(
        self,
        sock: trio.socket.SocketType,
        nursery: TaskStarter,
        *,
        limit: int = DEFAULT_LIMIT,
        overflow_frame: bytes = b"",
        on_overflow: Callable[[], None] | None = None,
    ) -> None:
        self._sock = sock
        self._fd = sock.fileno()
        self._nursery: TaskStarter | None = nursery
        # Created when the socket first pushes back, dropped once drained: most connections never
        # need one, and an empty deque costs more than the rest of the outbox.
        self._backlog: deque[bytes | bytearray] | None = None
        self._backlog_size = 0
        self._cork = _run_cork()
        # Frames held during a delivery step (send_held): the frame, or a bytearray once two.
        self._held: bytes | bytearray | None = None
        self._head_offset = 0  # bytes of _backlog[0] already written
        self._flushing = False
        self._idle: trio.Event | None = None
        self._overflow_frame = overflow_frame
        self._on_overflow = on_overflow
        self.limit = limit
        self.accepting = True
        self.overflowed = False
        self.broken = False

    @property
    def backlog_size(self) -> int:
        """Bytes accepted but not yet written to the socket."""
        return self._backlog_size

    def send(self, frame: bytes | bytearray) -> bool:
        """Queue one whole frame for the peer; False if nothing more is accepted."""
        if not self.accepting:
            return False
        if self._held is not None:  # what a step held goes first, now: nothing waits for it
            self._release()
        if not self._backlog:
            try:
                written = os.write(self._fd, frame)
            except BlockingIOError:
                written = 0
            except OSError:
                self._break()
                return False
            if written == len(frame):
                return True
            self._head_offset = written
            self._backlog_size = -written
        elif self._backlog_size > self.limit:
            self._overflow()
            return False
        if self._backlog is None:
            self._backlog = deque()
        self._backlog.append(frame)
        self._backlog_size += len(frame)
        self._ensure_flusher()
        return True

    def send_held(self, frame: bytes) -> bool:
        """:meth:`send`, but during a delivery step (:class:`Cork`) the frame is held, with every
        other this connection gets in the step, until the step is released (then they go in one
        write) or a frame is sent to it directly (then they go first)."""
        if self._cork.holds and self.accepting and not self._backlog:
            self._hold(frame)
            return True
        return self.send(frame)

    def _hold(self, frame: bytes | bytearray) -> None:
        held = self._held
        if held is None:
            self._held = frame
            self._cork.held.append(self)
        elif type(held) is bytearray:
            held += frame
        else:
            joined = bytearray(held)
            joined += frame
            self._held = joined

    def _release(self) -> None:
        """The step ended, or a frame is sent directly: what is held goes out in one write (or
        waits in the backlog, as any frame would)."""
        held = self._held
        if held is None or self.broken:
            return
        self._held = None
        accepting, self.accepting = self.accepting, True
        try:
            self.send(held)
        finally:
            # Held frames were accepted: they go even if nothing more is (an overflow now stops
            # it as it would any frame).
            self.accepting = accepting and self.accepting

    def send_last(self, frame: bytes | bytearray) -> None:
        """Queue a final frame (a close frame) and accept nothing after it."""
        if self.accepting:
            self.send(frame)
            self.accepting = False

    async def drain(self) -> None:
        """Wait until everything queued has been written, or the socket broke."""
        # Only one task may wait on the fd: the flusher writes, drain waits for the flusher.
        while self._backlog and not self.broken:
            self._ensure_flusher()
            if self._idle is None:
                self._idle = trio.Event()
            await self._idle.wait()
        await trio.lowlevel.checkpoint()

    def stop(self) -> None:
        """Forget the backlog and accept nothing more (the socket is about to close)."""
        self.accepting = False
        self.broken = True
        self._backlog = None
        self._held = None
        self._backlog_size = 0
        if self._flushing:
            _flusher().forget(self)  # before the socket closes and its number is reused
            self._flushed()
        # The connection's own method: dropped, so that a connection that ended is freed by
        # reference counting (broker.operator.gc_keeper freezes what lives long; a cycle would stay).
        self._on_overflow = None
        self._nursery = None  # the connection, often: it holds this outbox (no cycle either)

    def _overflow(self) -> None:
        self.overflowed = True
        self.accepting = False
        backlog = self._backlog
        assert backlog is not None
        partial = backlog[0] if self._head_offset else None
        backlog.clear()
        if partial is not None:
            backlog.append(partial)
        if self._overflow_frame:
            backlog.append(self._overflow_frame)
        self._backlog_size = sum(map(len, backlog)) - self._head_offset
        if backlog:
            self._ensure_flusher()
        if self._on_overflow is not None:
            self._on_overflow()

    def _break(self) -> None:
        self.stop()

    def _ensure_flusher(self) -> None:
        if not self._flushing:
            self._flushing = True
            assert self._nursery is not None, "a stopped outbox sends nothing"
            _flusher().add(self, self._nursery)

    def _writable(self) -> bool:
        """The flusher found the socket writable: write; whether a backlog is left to wait for."""
        if self._sock.fileno() != self._fd:  # closed meanwhile: the number may be another's
            self._break()
        else:
            self._write_backlog()
        if self._backlog and not self.broken:
            return True
        self._flushed()
        return False

    def _flushed(self) -> None:
        self._flushing = False
        if self._idle is not None:
            self._idle.set()
            self._idle = None

    def _write_backlog(self) -> None:
        backlog = self._backlog
        if self.broken or not backlog:
            return
        buffers: list[bytes | bytearray | memoryview] = list(islice(backlog, _IOV_BATCH))
        if self._head_offset:
            buffers[0] = memoryview(buffers[0])[self._head_offset :]
        try:
            written = os.writev(self._fd, buffers)
        except BlockingIOError:
            return
        except OSError:
            self._break()
            return
        self._backlog_size -= written
        written += self._head_offset
        while backlog and written >= len(backlog[0]):
            written -= len(backlog.popleft())
        self._head_offset = written
        if not backlog:
            self._backlog = None


class _Flusher:
    """Writes the backlogs of every outbox whose socket pushed back, in one task that runs while
    there are any (started in the nursery of the outbox that needed it first)."""

    __slots__ = ("_epoll", "_running", "_waiting")

    def __init__(self) -> None:
        self._epoll = select.epoll()
        self._waiting: dict[int, Outbox] = {}
        self._running = False

    def add(self, outbox: Outbox, nursery: TaskStarter) -> None:
        try:
            # One-shot: once reported writable, a socket is reported again only when re-armed.
            self._epoll.register(outbox._fd, select.EPOLLOUT | select.EPOLLONESHOT)
        except OSError:
            outbox._break()
            return
        self._waiting[outbox._fd] = outbox
        if not self._running:
            self._running = True
            nursery.start_soon(self._serve)

    def forget(self, outbox: Outbox) -> None:
        # By identity: once a socket closed, its number may be a newer socket's, whose outbox
        # is then the one registered under it.
        if self._waiting.get(outbox._fd) is outbox:
            del self._waiting[outbox._fd]
            with contextlib.suppress(OSError):  # closed already: the kernel dropped it
                self._epoll.unregister(outbox._fd)

    async def _serve(self) -> None:
        epoll, waiting = self._epoll, self._waiting
        try:
            while waiting:
                await trio.lowlevel.wait_readable(epoll.fileno())
                for fd, _ in epoll.poll(0, _FLUSH_BATCH):
                    # The outbox registered under the number now: a stopped one was forgotten
                    # before its socket closed, so a reused number never reaches it.
                    outbox = waiting.get(fd)
                    if outbox is None:
                        continue
                    if _still_writing(outbox):
                        epoll.modify(fd, select.EPOLLOUT | select.EPOLLONESHOT)
                    else:
                        self.forget(outbox)
                await trio.lowlevel.checkpoint()  # a batch at a time: others run in between
        finally:
            self._running = False
            if waiting:  # cancelled (the server stops): the drains waiting are let go
                for outbox in list(waiting.values()):
                    self.forget(outbox)
                    outbox._flushed()


def _release(outbox: Outbox) -> None:
    """``outbox._release()``, behind its connection's boundary, as :func:`_still_writing`."""
    try:
        outbox._release()
    except Exception:
        log.exception("writing a connection's held frames failed: that connection is cut off")
        outbox._break()


def _still_writing(outbox: Outbox) -> bool:
    """``outbox._writable()``, behind its connection's boundary: the flusher serves every
    connection, so what goes wrong writing one connection's backlog ends that one only."""
    try:
        return outbox._writable()
    except Exception:
        log.exception("writing a connection's backlog failed: that connection is cut off")
        outbox._break()
        return False


class _PortableFlusher:
    """Where ``select.epoll`` is missing (macOS, the BSDs): each outbox that pushed back waits
    for its socket in a task of its own, through trio's own I/O (kqueue there). A task per slow
    consumer instead of one for all, as before the shared flusher."""

    __slots__ = ()

    def add(self, outbox: Outbox, nursery: TaskStarter) -> None:
        nursery.start_soon(functools.partial(self._serve, outbox))

    def forget(self, outbox: Outbox) -> None:
        # Its socket is about to close: the task waiting on it is woken (and ends) first.
        trio.lowlevel.notify_closing(outbox._sock)

    async def _serve(self, outbox: Outbox) -> None:
        try:
            while outbox._flushing:
                await trio.lowlevel.wait_writable(outbox._sock)
                if not _still_writing(outbox):
                    return
        except trio.ClosedResourceError:
            return  # forgotten: the outbox was stopped, its socket is closing
        finally:
            if outbox._flushing and not outbox.broken:  # cancelled: the drains are let go
                outbox._flushed()


_CORK: trio.lowlevel.RunVar[Cork] = trio.lowlevel.RunVar("scopecast_outbox_cork")


def _run_cork() -> Cork:
    """This trio run's cork (one of its own outside a run: never entered)."""
    try:
        return _CORK.get()
    except LookupError:
        found = Cork()
        _CORK.set(found)
        return found
    except RuntimeError:  # not in a trio run
        return Cork()


def corked() -> Cork:
    """This trio run's :class:`Cork`: ``with corked():`` (nested or not) is one delivery step, whose
    held frames go out as the outermost ends, one write per connection, unless the delivery queue
    holds them longer (across the slices of the fan-outs the step began)."""
    return _run_cork()


_FLUSHER: trio.lowlevel.RunVar[_Flusher | _PortableFlusher] = trio.lowlevel.RunVar(
    "scopecast_outbox_flusher"
)


def _flusher() -> _Flusher | _PortableFlusher:
    """This trio run's flusher: one task for all, or a task per outbox without epoll."""
    try:
        return _FLUSHER.get()
    except LookupError:
        found: _Flusher | _PortableFlusher = (
            _Flusher() if hasattr(select, "epoll") else _PortableFlusher()
        )
        _FLUSHER.set(found)
        return found
