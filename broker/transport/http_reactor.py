"""One task answering the requests of every idle keep-alive HTTP connection: the shell's fast lane.

A connection's task parks its connection here when the next request has not arrived yet
(:meth:`HttpReactor.park`). The reactor's task waits on one epoll set of every parked socket; for
each that turns readable it reads, feeds the connection's sans-io machine, and answers every
request whose answer the responder gives at once (bytes: a cached answer) with one non-blocking
write, all without a task switch. Anything else goes back to the connection's task with the event
the reactor stopped at (:class:`Handback`): an answer to await, an upgrade, a refusal, the end, a
body still to come, a write the kernel did not take whole, an error. The task goes on from there
as if it had read the bytes itself, and parks again once it would wait for the next request.

Why: a trio task switch costs about 2 us, more than finding and writing a cached answer. Parked
connections are answered back to back, as an event loop serves them; the others keep their task.

Each parked connection is its own failure domain here as it is in its task: whatever goes wrong
while serving one (a plug-in's ``call_now`` raising through the responder, a bug of ours) goes back
to that connection's task (which answers -32603 if a request was being answered, then closes), and
the reactor serves the others on. The work done per wake-up is bounded (:data:`BATCH` sockets,
:data:`TURN` answers each), so a busy or pipelining client cannot hold the run loop.

It needs ``select.epoll`` (Linux): :func:`open_reactor` says None elsewhere, and connections then
wait for their next request in their own task, through trio's own I/O (the portable path).
"""

from __future__ import annotations

import math
import os
import select
from collections.abc import Awaitable, Callable
from typing import Any, Final, Protocol

import outcome
import trio

from broker.transport.http_protocol import (
    NEED_DATA,
    Event,
    HttpRequest,
    HttpServerConnection,
    RequestReceived,
)

#: Readable sockets served per look at the epoll set, before other tasks run.
BATCH: Final = 64
#: Requests answered per connection per wake-up; what a connection has pipelined beyond them is
#: answered at the next wake-up, after the other tasks ran (and its socket is not read meanwhile:
#: a client pipelining faster than it is answered is held back by TCP, not buffered here). With a
#: cached answer at 10-15 us of CPU (docs/benchmarks), BATCH * TURN = 512 answers keep a wake-up
#: under about 8 ms: the other tasks (WebSocket fan-out, pings, deadlines) wait no longer than that,
#: while one look at the epoll set still serves many connections (the look costs less than their
#: answers as long as it serves tens of them).
TURN: Final = 8
READ_SIZE: Final = 65536

FastResponder = Callable[[HttpRequest], bytes | Awaitable[Any]]


class Handback:
    """What the reactor gives back to a parked connection's task: the event it stopped at (with
    the answer it was given to await, if the event is a request), or bytes of an answer still to
    write, or the error that ended the connection: with the event too, the request being answered
    when it was raised (the task answers it with the error, then closes)."""

    __slots__ = ("error", "event", "pending", "unsent")

    def __init__(
        self,
        *,
        event: Event | None = None,
        pending: Awaitable[Any] | None = None,
        unsent: bytes = b"",
        error: Exception | None = None,
    ) -> None:
        self.event = event
        self.pending = pending
        self.unsent = unsent
        self.error = error


class Parked:
    """A connection between requests, as the reactor serves it."""

    __slots__ = (
        "backlog",
        "conn",
        "fd",
        "idle_timeout",
        "json_lines",
        "respond_now",
        "task",
        "watch",
    )

    def __init__(
        self,
        fd: int,
        conn: HttpServerConnection,
        respond_now: FastResponder,
        watch: Deadline,
        idle_timeout: float,
        json_lines: bytes = b"",
    ) -> None:
        self.fd = fd
        #: The header lines of the answers ``respond_now`` gives as bytes.
        self.json_lines = json_lines
        self.conn = conn
        self.respond_now = respond_now
        self.watch = watch
        self.idle_timeout = idle_timeout
        self.task: trio.lowlevel.Task | None = None
        #: Requests already read are waiting for the next wake-up (see :data:`TURN`).
        self.backlog = False


class Deadline(Protocol):
    """The connection's idle deadline (:meth:`broker.transport.http.ConnectionDeadlines.watch`)."""

    deadline: float


def open_reactor() -> HttpReactor | None:
    """The reactor, where the platform has ``select.epoll`` (Linux); None elsewhere (macOS, the
    BSDs): each keep-alive connection then waits for its next request in its own task, through
    trio's own I/O (kqueue there), at the cost of a task switch per request."""
    if not hasattr(select, "epoll"):
        return None
    return HttpReactor()


class HttpReactor:
    """Serves parked HTTP connections from one task (:meth:`serve`)."""

    def __init__(self) -> None:
        self._epoll = select.epoll()
        self._parked: dict[int, Parked] = {}
        #: Parked connections with requests read and not answered yet (see :data:`TURN`).
        self._backlog: list[Parked] = []
        self._closing = False

    def __len__(self) -> int:
        return len(self._parked)

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Answer parked connections until cancelled (then every parked one is handed back with
        :class:`trio.ClosedResourceError`)."""
        epoll = self._epoll
        task_status.started()
        try:
            while True:
                await trio.lowlevel.wait_readable(epoll.fileno())
                events = epoll.poll(0, BATCH)
                while events or self._backlog:
                    self._serve_ready(events)
                    # Other tasks first; by then the next requests have most often arrived, and
                    # taking them at once costs less than waiting for them through trio's epoll.
                    await trio.lowlevel.checkpoint()
                    events = epoll.poll(0, BATCH)
        finally:
            for found in list(self._parked.values()):
                self.hand_back(found, Handback(error=trio.ClosedResourceError()))
            epoll.close()

    def close_idle(self) -> None:
        """The graceful stop: answer the requests that have already arrived on parked
        connections (as :meth:`serve` would), then let every connection still idle go (handed back
        closed), and from now on close a connection instead of parking it: a client reconnects
        elsewhere at once instead of waiting for the idle deadline, and no request it sent is
        dropped unanswered. Connections with a request under way finish it first."""
        self._closing = True
        self._serve_ready(self._epoll.poll(0))
        for found in list(self._parked.values()):
            if found.backlog:  # requests read and not answered yet: its task answers them
                self.hand_back(found, Handback(event=found.conn.next_event()))
            else:
                self.hand_back(found, Handback(error=trio.ClosedResourceError()))

    async def park(self, parked: Parked) -> Handback:
        """Leave ``parked`` to the reactor until it hands the connection back (at once, closed,
        once :meth:`close_idle` was called)."""
        if self._closing:
            await trio.lowlevel.checkpoint()
            return Handback(error=trio.ClosedResourceError())
        fd = parked.fd
        self._epoll.register(fd, select.EPOLLIN)
        self._parked[fd] = parked
        parked.task = trio.lowlevel.current_task()

        def abort(_: object) -> trio.lowlevel.Abort:
            self._forget(parked)
            return trio.lowlevel.Abort.SUCCEEDED

        handback = await trio.lowlevel.wait_task_rescheduled(abort)
        assert isinstance(handback, Handback)
        return handback

    def parked(self, parked: Parked) -> bool:
        return self._parked.get(parked.fd) is parked

    def hand_back(self, parked: Parked, handback: Handback) -> None:
        """Give ``parked`` back to its task with ``handback`` (it must be parked)."""
        self._forget(parked)
        task, parked.task = parked.task, None
        assert task is not None
        trio.lowlevel.reschedule(task, outcome.Value(handback))

    def _forget(self, parked: Parked) -> None:
        parked.backlog = False
        # By identity: a connection closed meanwhile may have left its number to a newer one.
        if self._parked.get(parked.fd) is parked:
            del self._parked[parked.fd]
            self._epoll.unregister(parked.fd)

    def _serve_ready(self, events: list[tuple[int, int]]) -> None:
        """Serve the connections left with requests at the last wake-up, then the parked
        connections ``events`` (from the epoll set) says are readable."""
        now = trio.current_time()
        parked = self._parked
        backlog, self._backlog = self._backlog, []
        for waiting in backlog:
            if waiting.backlog and parked.get(waiting.fd) is waiting:
                waiting.backlog = False
                self._serve_guarded(waiting, now, read=False)
        for fd, _ in events:
            found = parked.get(fd)
            # One still answering what it sent before is not read: TCP holds the rest back.
            if found is not None and not found.backlog:
                self._serve_guarded(found, now, read=True)

    def _serve_guarded(self, parked: Parked, now: float, *, read: bool) -> None:
        try:
            self._serve_one(parked, now, read=read)
        except Exception as exc:
            # Our own bug on one connection: that connection's task raises it (its boundary logs
            # it once and closes it); the reactor and the other connections go on.
            if self.parked(parked):
                self.hand_back(parked, Handback(error=exc))

    def _serve_one(self, parked: Parked, now: float, *, read: bool) -> None:
        fd = parked.fd
        conn = parked.conn
        if read:
            try:
                data = os.read(fd, READ_SIZE)
            except BlockingIOError:
                return
            except OSError as exc:
                self.hand_back(parked, Handback(error=exc))
                return
            conn.receive_data(data)
        answered = 0
        while True:
            event = conn.next_event()
            if event is NEED_DATA and not conn.headers_complete:
                if answered:
                    parked.watch.deadline = now + parked.idle_timeout
                return  # between requests, or part-way through a head: stay parked
            if not isinstance(event, RequestReceived):
                self.hand_back(parked, Handback(event=event))
                return
            if answered == TURN:  # the rest at the next wake-up, after the other tasks
                parked.backlog = True
                self._backlog.append(parked)
                return
            parked.watch.deadline = math.inf
            try:
                answer = parked.respond_now(event.request)
            except Exception as exc:  # the task answers the request with it, and closes
                self.hand_back(parked, Handback(event=event, error=exc))
                return
            if not isinstance(answer, bytes):
                self.hand_back(parked, Handback(event=event, pending=answer))
                return
            reply = conn.send_json(answer, parked.json_lines)
            try:
                written = os.write(fd, reply)
            except BlockingIOError:
                written = 0
            except OSError as exc:
                self.hand_back(parked, Handback(error=exc))
                return
            if written != len(reply):
                self.hand_back(parked, Handback(unsent=reply[written:]))
                return
            answered += 1
