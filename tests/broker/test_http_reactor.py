"""The HTTP reactor (broker.transport.http_reactor) on socket pairs, with trio's clock jumping: parked
connections are answered by the reactor's task while answers come at once, and every other case
goes back to the connection's own task, in order, with nothing lost."""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest
import trio
import trio.testing

from broker.transport.http import (
    IDLE_TIMEOUT,
    ConnectionDeadlines,
    HttpRequest,
    HttpResponse,
    handle_http,
)
from broker.transport.http_reactor import TURN, HttpReactor


def post(body: bytes) -> bytes:
    return b"POST /v3/dev HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


async def unexpected(request: HttpRequest) -> HttpResponse:
    raise AssertionError(f"respond called for {request!r}")


class Responder:
    """Answers ``sync:<text>`` at once with ``<text>``, ``async:<text>`` after a checkpoint, and
    records which task gave each answer."""

    def __init__(self) -> None:
        self.tasks: list[trio.lowlevel.Task] = []
        self.gate = trio.Event()  # what ``gated:<text>`` waits for

    def __call__(self, request: HttpRequest) -> bytes | Awaitable[bytes]:
        self.tasks.append(trio.lowlevel.current_task())
        kind, _, text = request.body.partition(b":")
        if kind == b"sync":
            return text
        if kind == b"big":
            return b"x" * int(text)
        if kind == b"boom":
            raise RuntimeError("the responder failed")
        if kind == b"gated":
            return self._gated(text)
        return self._later(text)

    async def _gated(self, text: bytes) -> bytes:
        await self.gate.wait()
        return text

    async def _later(self, text: bytes) -> bytes:
        await trio.lowlevel.checkpoint()
        return text


async def read_reply(sock: trio.socket.SocketType, buffer: bytearray) -> bytes:
    """One whole response's body from ``sock`` (``buffer`` keeps what came after it)."""
    _, body = await read_response(sock, buffer)
    return body


async def read_response(sock: trio.socket.SocketType, buffer: bytearray) -> tuple[bytes, bytes]:
    """One whole response's head and body from ``sock`` (``buffer`` keeps what came after it)."""
    while b"\r\n\r\n" not in buffer:
        data = await sock.recv(65536)
        assert data, "closed before a reply"
        buffer += data
    head, _, _ = bytes(buffer).partition(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
    start = len(head) + 4
    while len(buffer) < start + length:
        data = await sock.recv(1 << 20)
        assert data, "closed in the middle of a reply"
        buffer += data
    body = bytes(buffer[start : start + length])
    del buffer[: start + length]
    return head, body


async def park_after_one(sock: trio.socket.SocketType) -> bytearray:
    """One request answered on ``sock``; returns once the connection waits in the reactor."""
    buffer = bytearray()
    await sock.send(post(b"sync:one"))
    assert await read_reply(sock, buffer) == b"one"
    await trio.testing.wait_all_tasks_blocked()
    return buffer


class Served:
    def __init__(self, reactor: HttpReactor, reactor_task: trio.lowlevel.Task) -> None:
        self.reactor = reactor
        self.reactor_task = reactor_task
        self.outcomes: list[object] = []


@asynccontextmanager
async def serving(
    responder: Callable[[HttpRequest], bytes | Awaitable[bytes]],
) -> AsyncIterator[tuple[Served, trio.socket.SocketType, trio.Nursery]]:
    """A connection handled with a reactor; yields the client's end (and the nursery)."""
    deadlines, reactor = ConnectionDeadlines(), HttpReactor()
    async with trio.open_nursery() as nursery:
        await nursery.start(deadlines.serve)
        reactor_task = await nursery.start(_reactor_task, reactor)
        served = Served(reactor, reactor_task)
        ours, theirs = trio.socket.socketpair()

        async def connection() -> None:
            try:
                served.outcomes.append(
                    await handle_http(
                        trio.SocketStream(ours),
                        unexpected,
                        deadlines,
                        body_limit=1 << 20,
                        body_timeout=2.0,
                        respond_now=responder,
                        reactor=reactor,
                    )
                )
            except Exception as exc:
                served.outcomes.append(exc)
            finally:
                ours.close()

        nursery.start_soon(connection)
        with theirs:
            yield served, theirs, nursery
        nursery.cancel_scope.cancel()


async def _reactor_task(
    reactor: HttpReactor, *, task_status: trio.TaskStatus[trio.lowlevel.Task]
) -> None:
    task_status.started(trio.lowlevel.current_task())
    await reactor.serve()


async def test_answers_that_come_at_once_are_given_by_the_reactor_task(
    autojump_clock: trio.testing.MockClock,
) -> None:
    responder = Responder()
    async with serving(responder) as (served, sock, _):
        buffer = bytearray()
        for index in range(5):
            await sock.send(post(b"sync:%d" % index))
            assert await read_reply(sock, buffer) == b"%d" % index
            await trio.testing.wait_all_tasks_blocked()
            assert len(served.reactor) == 1  # parked between requests
        # The first request was read by the connection's task; once parked, the reactor answers.
        assert responder.tasks[0] is not served.reactor_task
        assert all(task is served.reactor_task for task in responder.tasks[1:])


async def test_an_answer_to_await_goes_back_to_the_connection_task_in_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    responder = Responder()
    async with serving(responder) as (served, sock, _):
        buffer = bytearray()
        await sock.send(post(b"sync:first"))
        assert await read_reply(sock, buffer) == b"first"
        await trio.testing.wait_all_tasks_blocked()
        # Pipelined: answered at once, awaited, at once again: the replies keep the order.
        await sock.send(post(b"sync:a") + post(b"async:b") + post(b"sync:c") + post(b"async:d"))
        assert [await read_reply(sock, buffer) for _ in range(4)] == [b"a", b"b", b"c", b"d"]
        await trio.testing.wait_all_tasks_blocked()
        assert len(served.reactor) == 1  # parked again once nothing is left to read
        await sock.send(post(b"async:e"))
        assert await read_reply(sock, buffer) == b"e"
        assert not buffer


async def test_an_answer_the_kernel_does_not_take_whole_is_written_by_the_task(
    autojump_clock: trio.testing.MockClock,
) -> None:
    size = 8 * 1024 * 1024  # far beyond a socket buffer
    async with serving(Responder()) as (_, sock, _):
        buffer = bytearray()
        await sock.send(post(b"sync:warm"))
        assert await read_reply(sock, buffer) == b"warm"
        await trio.testing.wait_all_tasks_blocked()
        await sock.send(post(b"big:%d" % size) + post(b"sync:after"))
        await trio.sleep(1)  # the client reads nothing for a while
        assert await read_reply(sock, buffer) == b"x" * size
        assert await read_reply(sock, buffer) == b"after"


async def test_an_idle_parked_connection_is_closed_at_its_deadline(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with serving(Responder()) as (served, sock, _):
        await park_after_one(sock)
        started = trio.current_time()
        assert await sock.recv(1) == b""  # closed, not answered
        waited = trio.current_time() - started
        assert IDLE_TIMEOUT <= waited <= IDLE_TIMEOUT + 1
        await trio.testing.wait_all_tasks_blocked()
        assert len(served.reactor) == 0
        assert served.outcomes == [None]


async def test_a_client_closing_while_parked_ends_the_connection(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with serving(Responder()) as (served, sock, _):
        await park_after_one(sock)
        assert len(served.reactor) == 1
        sock.shutdown(trio.socket.SHUT_WR)
        await trio.testing.wait_all_tasks_blocked()
        assert len(served.reactor) == 0
        assert served.outcomes == [None]


async def test_a_responder_failing_in_the_reactor_ends_that_connection_with_an_answer(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    async with serving(Responder()) as (served, sock, _):
        buffer = await park_after_one(sock)
        await sock.send(post(b"boom:") + post(b"sync:never"))
        head, reply = await read_response(sock, buffer)
        assert head.startswith(b"HTTP/1.1 500 Internal Server Error\r\n")
        assert json.loads(reply)["error"]["code"] == -32603
        assert await sock.recv(1) == b""  # then closed: the request after it is not answered
        await trio.testing.wait_all_tasks_blocked()
        assert len(served.reactor) == 0
        assert served.outcomes == [None]  # handled on the connection: nothing raised further
    [logged] = [r for r in caplog.records if r.exc_info]
    assert str(logged.exc_info[1]) == "the responder failed"


async def test_a_parked_connection_task_can_be_cancelled(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with serving(Responder()) as (served, sock, nursery):
        await park_after_one(sock)
        assert len(served.reactor) == 1
        nursery.cancel_scope.cancel()
        await trio.testing.wait_all_tasks_blocked()
        assert len(served.reactor) == 0


async def test_parked_connections_are_let_go_when_the_reactor_stops(
    autojump_clock: trio.testing.MockClock,
) -> None:
    deadlines, reactor = ConnectionDeadlines(), HttpReactor()
    outcomes: list[object] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(deadlines.serve)
        reactor_scope = trio.CancelScope()

        async def run_reactor() -> None:
            with reactor_scope:
                await reactor.serve()

        nursery.start_soon(run_reactor)
        clients = []
        for _ in range(3):
            ours, theirs = trio.socket.socketpair()
            clients.append(theirs)

            async def connection(sock: trio.socket.SocketType = ours) -> None:
                outcomes.append(
                    await handle_http(
                        trio.SocketStream(sock),
                        unexpected,
                        deadlines,
                        body_limit=1024,
                        body_timeout=2.0,
                        respond_now=functools.partial(Responder()),
                        reactor=reactor,
                    )
                )
                sock.close()

            nursery.start_soon(connection)
            await theirs.send(post(b"sync:x"))
            assert await read_reply(theirs, bytearray()) == b"x"
        await trio.testing.wait_all_tasks_blocked()
        assert len(reactor) == 3
        reactor_scope.cancel()
        await trio.testing.wait_all_tasks_blocked()
        assert outcomes == [None, None, None]
        for sock in clients:
            assert await sock.recv(1) == b""
            sock.close()
        nursery.cancel_scope.cancel()


async def test_close_idle_answers_what_has_arrived_then_closes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with serving(Responder()) as (served, sock, _):
        buffer = await park_after_one(sock)
        # A request has reached the socket but the reactor has not looked yet: answered first.
        await sock.send(post(b"sync:two"))
        served.reactor.close_idle()
        assert await read_reply(sock, buffer) == b"two"
        assert await sock.recv(1) == b""  # then closed, long before the idle deadline
        assert trio.current_time() < IDLE_TIMEOUT
        await trio.testing.wait_all_tasks_blocked()
        assert len(served.reactor) == 0
        assert served.outcomes == [None]


async def test_after_close_idle_a_call_under_way_is_answered_then_the_connection_closes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    responder = Responder()
    async with serving(responder) as (served, sock, _):
        buffer = await park_after_one(sock)
        await sock.send(post(b"gated:later"))
        await trio.testing.wait_all_tasks_blocked()  # handed back: its task awaits the answer
        assert len(served.reactor) == 0
        served.reactor.close_idle()
        responder.gate.set()
        assert await read_reply(sock, buffer) == b"later"
        assert await sock.recv(1) == b""  # it would have parked again: closed instead
        assert trio.current_time() < IDLE_TIMEOUT
        assert served.outcomes == [None]


async def test_a_pipelining_client_gets_a_bounded_turn_per_wake_up(
    autojump_clock: trio.testing.MockClock,
) -> None:
    responder = Responder()
    seen: list[int] = []  # how many answers the reactor had given when another task ran
    first = trio.Event()
    watched = responder.__call__

    def watching(request: HttpRequest) -> bytes | Awaitable[bytes]:
        if request.body.startswith(b"sync:0"):
            first.set()
        return watched(request)

    async def other_task() -> None:
        await first.wait()  # woken from inside the reactor's wake-up: runs at its checkpoint
        seen.append(len(responder.tasks))

    count = 50 * TURN  # 400 requests, in one read
    async with serving(watching) as (served, sock, nursery):
        buffer = await park_after_one(sock)
        responder.tasks.clear()
        nursery.start_soon(other_task)
        await trio.testing.wait_all_tasks_blocked()
        await sock.send(b"".join(post(b"sync:%d" % i) for i in range(count)))
        assert [await read_reply(sock, buffer) for _ in range(count)] == [
            b"%d" % i for i in range(count)
        ]
        # Not all of them before another task ran: a turn of TURN answers, then the others run
        # (trio orders the tasks woken in one batch at random: some turns may come first).
        [answered_first] = seen
        assert answered_first < count
        assert answered_first % TURN == 0
        assert all(task is served.reactor_task for task in responder.tasks)


async def test_without_a_reactor_close_idle_answers_what_has_arrived_then_closes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # The portable path (no select.epoll): the idle connection waits in its own task.
    deadlines = ConnectionDeadlines()
    outcomes: list[object] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(deadlines.serve)
        ours, theirs = trio.socket.socketpair()

        async def connection() -> None:
            with ours:
                outcomes.append(
                    await handle_http(
                        trio.SocketStream(ours),
                        unexpected,
                        deadlines,
                        body_limit=1024,
                        body_timeout=2.0,
                        respond_now=Responder(),
                    )
                )

        nursery.start_soon(connection)
        with theirs:
            buffer = bytearray()
            await theirs.send(post(b"sync:one"))
            assert await read_reply(theirs, buffer) == b"one"
            await trio.testing.wait_all_tasks_blocked()  # idle, waiting for the next request
            await theirs.send(post(b"sync:two"))
            deadlines.close_idle()
            assert await read_reply(theirs, buffer) == b"two"
            assert await theirs.recv(1) == b""  # then closed, long before the idle deadline
            assert trio.current_time() < IDLE_TIMEOUT
        await trio.testing.wait_all_tasks_blocked()
        assert outcomes == [None]
        nursery.cancel_scope.cancel()
