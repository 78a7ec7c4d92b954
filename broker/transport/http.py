"""HTTP/1.1 connections: JSON-RPC over POST, health, metrics, admin, and the WebSocket upgrade.

The protocol is :mod:`broker.transport.http_protocol` (no I/O); this is its trio shell. It reads and writes
the socket directly (``wait_readable`` then ``os.read``; non-blocking ``os.write``, awaiting only
when the kernel buffer is full), which keeps the per-request path short.

Keep-alive is supported; a connection that sends no request head within ``IDLE_TIMEOUT`` is closed.
A request body over the limit gets 413 before it is read; a body not received in full within its
deadline gets 408; either closes the connection. A reply the client does not read within the write
deadline is dropped with its connection. ``Content-Type`` checks are the responder's.

A connection is a failure domain: a responder that raises while answering a request gets that
request answered by the ``fault`` handler (-32603; it logs the error once), then the connection
closes; nothing raised on one connection's behalf reaches the server.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

import trio

from broker.transport.http_protocol import (
    ENDED,
    NEED_DATA,
    HttpServerConnection,
    Refused,
    RequestReceived,
    UpgradeRequested,
)
from broker.transport.http_protocol import (
    HttpRequest as HttpRequest,
)
from broker.transport.http_protocol import (
    HttpResponse as HttpResponse,
)
from broker.transport.http_reactor import TURN, Handback, HttpReactor, Parked
from schemas.errors import InternalError, InvalidRequest, RpcError, ServerError
from schemas.jsonrpc import NULL_ID, decode_call, error_bytes

log = logging.getLogger(__name__)

IDLE_TIMEOUT: Final = 75.0
#: Seconds a reply may take to be written (``[server] write_timeout``): a client that stops
#: reading is dropped, and the task and the reply it holds are freed.
WRITE_TIMEOUT: Final = 30.0
JSON_HEADERS: Final = [(b"content-type", b"application/json")]


Upgrade = Callable[[trio.SocketStream, bytes], Awaitable[None]]
"""Takes over the stream for a WebSocket, given the bytes that came after the request head."""


@dataclass(frozen=True, slots=True)
class Takeover:
    """An accepted upgrade, returned by :func:`handle_http` so that its caller runs it once the HTTP
    state (parser, headers) is gone: a WebSocket lives long, and must not keep them alive."""

    upgrade: Upgrade
    trailing: bytes


Responder = Callable[[HttpRequest], Awaitable[HttpResponse | Upgrade]]
FastResponder = Callable[[HttpRequest], bytes | Awaitable[HttpResponse | Upgrade | bytes | None]]
"""For a plain request (not an upgrade): the answer given at once, or what to await for it; bytes
are the body of a 200 JSON answer (whose head :meth:`HttpServerConnection.send_json` builds), None
an empty one (a JSON-RPC notification's)."""


Fault = Callable[[HttpRequest, Exception], HttpResponse]
"""Answers a request whose responder raised (and logs the error, once)."""


def json_error(status: int, error: RpcError) -> HttpResponse:
    """A status with a JSON-RPC error body (401 for a missing key, 413, ...)."""
    return HttpResponse(status, error_bytes(NULL_ID, error), JSON_HEADERS)


def internal_error(request: HttpRequest, error: Exception) -> HttpResponse:
    """The default :data:`Fault`: 500 with -32603, the error logged (not the request's target,
    which holds an API key)."""
    log.error("HTTP %s request failed", request.method.decode("latin-1"), exc_info=error)
    return json_error(500, InternalError())


#: What a call still under way when the graceful stop's grace runs out is answered (README).
SHUTTING_DOWN: Final = "server shutting down"


def stopping_answer(request: HttpRequest) -> HttpResponse:
    """503 with -32000 "server shutting down", for a request cancelled by the end of the graceful
    stop: its client gets an answer it can retry elsewhere, not an empty reply. The call's id
    when the body is one call (a batch's members are not answered one by one: null id)."""
    call = decode_call(request.body) if request.method == b"POST" else None
    raw_id = NULL_ID if call is None or call.id is None else call.id
    return HttpResponse(503, error_bytes(raw_id, ServerError(SHUTTING_DOWN)), JSON_HEADERS)


def is_websocket_upgrade(request: HttpRequest) -> bool:
    upgrade = request.header(b"upgrade")
    connection = request.header(b"connection") or b""
    return (
        upgrade is not None and upgrade.lower() == b"websocket" and b"upgrade" in connection.lower()
    )


async def _write_rest(
    sock: trio.socket.SocketType, fd: int, data: bytes, written: int, watch: _Watch, within: float
) -> None:
    """Write ``data[written:]``, waiting whenever the kernel's buffer is full, within ``within``
    seconds (``watch`` closes the socket past it: the client stopped reading). A deadline kept
    by the connection's watch, not a cancel scope: see :class:`ConnectionDeadlines`."""
    view = memoryview(data)[written:]
    watch.writing = True
    watch.deadline = trio.current_time() + within
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            await trio.lowlevel.wait_writable(sock)
            if sock.fileno() != fd:  # closed meanwhile (its deadline passed): the fd may be reused
                raise trio.ClosedResourceError from None
            continue
        view = view[written:]
    watch.writing = False


async def _write(
    sock: trio.socket.SocketType, fd: int, data: bytes, watch: _Watch, within: float
) -> None:
    try:
        written = os.write(fd, data)  # most often all of it, at once
    except BlockingIOError:
        written = 0
    if written != len(data):
        await _write_rest(sock, fd, data, written, watch, within)


def _write_nowait(fd: int, data: bytes) -> None:
    """Best effort, for a last answer on a connection being dropped: never waits."""
    with contextlib.suppress(OSError):
        os.write(fd, data)


def _discard_nowait(fd: int, limit: int = 1 << 20) -> None:
    """Read and drop what the client sent and nobody read: closing a socket with unread bytes
    resets the connection, and the reset may reach the client before the answer just written."""
    with contextlib.suppress(OSError):
        while limit > 0 and (data := os.read(fd, 65536)):
            limit -= len(data)


class ConnectionDeadlines:
    """The idle and body deadlines of every HTTP connection, enforced by one task.

    A cancel scope per request would cost more than answering a cached request (moving a trio
    deadline reorders the run loop's deadline heap twice per request). Instead each connection
    records its deadline in a plain attribute, and :meth:`serve` wakes every ``resolution``
    seconds to end the connections past theirs: a deadline is honoured to within ``resolution``.
    """

    def __init__(self, resolution: float = 0.5) -> None:
        self.resolution = resolution
        self._watches: set[_Watch] = set()
        #: The graceful stop has begun (:meth:`close_idle`): idle connections end.
        self.closing = False
        self._idle: set[trio.socket.SocketType] = set()

    def __len__(self) -> int:
        """The connections watched: every HTTP connection open (not upgraded)."""
        return len(self._watches)

    def watch(self, deadline: float, expire: Callable[[], None]) -> _Watch:
        """Call ``expire`` once ``watch.deadline`` (``deadline`` to start with) has passed."""
        watch = _Watch(deadline, expire)
        self._watches.add(watch)
        return watch

    def forget(self, watch: _Watch) -> None:
        self._watches.discard(watch)

    async def wait_idle(self, sock: trio.socket.SocketType) -> None:
        """Wait until ``sock`` is readable, or :meth:`close_idle` is called: the wait between two
        requests of a connection that has no reactor (the portable path)."""
        # Not a cancel scope per wait (about 5 us each: a sixth of this path's cost per request):
        # close_idle wakes the wait as trio wakes a socket's waiters when it is closed.
        self._idle.add(sock)
        try:
            await trio.lowlevel.wait_readable(sock)
        except trio.ClosedResourceError:
            if not self.closing or sock.fileno() == -1:
                raise  # closed for real (its deadline passed)
            # Woken by close_idle: the caller reads once more, then ends.
        finally:
            self._idle.discard(sock)

    def close_idle(self) -> None:
        """The graceful stop of the connections that wait without a reactor: each reads once
        more (a request that has arrived is answered), then ends instead of waiting again."""
        self.closing = True
        for sock in list(self._idle):
            trio.lowlevel.notify_closing(sock)  # each is closed once its connection ends

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """End connections past their deadlines, until cancelled."""
        task_status.started()
        while True:
            await trio.sleep(self.resolution)
            now = trio.current_time()
            for watch in [w for w in self._watches if w.deadline <= now]:
                self._watches.discard(watch)
                watch.expire()


def _expired() -> None:
    """The callback of a watch whose connection has ended (forgotten already)."""


class _Watch:
    __slots__ = ("deadline", "expire", "writing")

    def __init__(self, deadline: float, expire: Callable[[], None]) -> None:
        self.deadline = deadline
        self.expire = expire
        #: The deadline is the write deadline (a reply is part-way out: no 408 after it).
        self.writing = False


async def handle_http(
    stream: trio.SocketStream,
    respond: Responder,
    deadlines: ConnectionDeadlines,
    *,
    body_limit: int,
    body_timeout: float,
    respond_now: FastResponder | None = None,
    reactor: HttpReactor | None = None,
    write_timeout: float = WRITE_TIMEOUT,
    fault: Fault = internal_error,
    json_lines: bytes = b"",
) -> Takeover | None:
    """Answer requests on one TCP connection until it closes, is idle too long, or upgrades to a
    WebSocket (then the accepted upgrade is returned, to be run by the caller).

    A connection waiting for a request head longer than ``IDLE_TIMEOUT`` is closed; one whose
    request body has not arrived in full ``body_timeout`` after its head gets 408 and is closed
    (a client trickling its body must not hold the connection). ``deadlines`` enforces both.
    ``respond_now``, when given, answers plain requests instead of ``respond``; with a
    ``reactor`` too, the connection is parked there whenever its next request has not arrived
    (:mod:`broker.transport.http_reactor`), and answered there while the answers come at once.
    A reply not written within ``write_timeout`` seconds ends the connection. A request whose
    responder raises is answered by ``fault``, and the connection closes. ``json_lines``: the
    header lines (CRLF-terminated) of the answers ``respond_now`` gives as bytes (the
    responder's policy: this shell adds no header of its own).
    """
    conn = HttpServerConnection(body_limit=body_limit)
    sock = stream.socket
    fd = sock.fileno()

    def expire() -> None:
        if parked is not None and reactor is not None and reactor.parked(parked):
            reactor.hand_back(parked, Handback(error=trio.ClosedResourceError()))
        if conn.headers_complete and not watch.writing:
            timeout = json_error(
                408, InvalidRequest(f"request body not received within {body_timeout:g} s")
            )
            _write_nowait(fd, conn.send_response(timeout))
            _discard_nowait(fd)
        sock.close()  # wakes this connection's task, waiting to read, with ClosedResourceError

    watch = deadlines.watch(trio.current_time() + IDLE_TIMEOUT, expire)
    parked = (
        None
        if reactor is None or respond_now is None
        else Parked(fd, conn, respond_now, watch, IDLE_TIMEOUT, json_lines)
    )
    handback: Handback | None = None
    in_body = False
    in_a_row = 0  # requests answered since this task last let the others run
    checkpoint = trio.lowlevel.checkpoint
    try:
        while True:
            pending = None
            failed: Exception | None = None
            if handback is None:
                event = conn.next_event()
            else:  # what the reactor stopped at
                if handback.error is not None:
                    if not isinstance(handback.event, RequestReceived):
                        raise handback.error
                    failed = handback.error  # raised while answering the request: answered below
                if handback.unsent:
                    await _write_rest(sock, fd, handback.unsent, 0, watch, write_timeout)
                    watch.deadline = trio.current_time() + IDLE_TIMEOUT
                    event = conn.next_event()
                else:
                    assert handback.event is not None
                    event, pending = handback.event, handback.pending
                handback = None
            if isinstance(event, RequestReceived) or (
                # An upgrade to anything but a WebSocket is answered as a plain request (then the
                # connection closes: the machine reports nothing after an upgrade request).
                isinstance(event, UpgradeRequested) and not is_websocket_upgrade(event.request)
            ):
                request = event.request
                watch.deadline = math.inf  # answering is bounded by the methods' own limits
                answer: HttpResponse | Upgrade | bytes | None = None
                if failed is None:
                    try:
                        if pending is not None:  # the reactor's call of respond_now
                            answer = await pending
                        elif respond_now is None:
                            answer = await respond(request)
                        else:
                            now = respond_now(request)
                            answer = now if isinstance(now, bytes) else await now
                    except Exception as exc:  # cancellation and KeyboardInterrupt pass
                        failed = exc
                    except trio.Cancelled:
                        if deadlines.closing:  # the graceful stop's grace ran out on this call
                            # No await here (this task is cancelled): one non-blocking write,
                            # which the kernel takes whole for an answer this small.
                            stopping = stopping_answer(request)
                            _write_nowait(fd, conn.send_response(stopping, keep_alive=False))
                        raise
                if failed is not None:
                    # This connection's failure only: the request gets -32603, then it closes.
                    data = conn.send_response(fault(request, failed), keep_alive=False)
                elif answer is None or isinstance(answer, bytes):
                    data = conn.send_json(answer or b"", json_lines)
                else:
                    assert isinstance(answer, HttpResponse), "upgrade only for upgrade requests"
                    data = conn.send_response(answer)
                # Written at once, as the kernel most often takes it whole.
                try:
                    written = os.write(fd, data)
                except BlockingIOError:
                    written = 0
                if written != len(data):
                    await _write_rest(sock, fd, data, written, watch, write_timeout)
                in_body = False
                watch.deadline = trio.current_time() + IDLE_TIMEOUT
                in_a_row += 1
                if in_a_row >= TURN:  # a pipelining client must not hold the run loop
                    in_a_row = 0
                    await checkpoint()
                continue
            if event is NEED_DATA:
                if conn.headers_complete:  # part-way through a request: its body is coming
                    pending_bytes = conn.data_to_send()  # a 100 Continue
                    if pending_bytes:
                        await _write(sock, fd, pending_bytes, watch, write_timeout)
                    if not in_body:
                        in_body = True
                        watch.deadline = trio.current_time() + body_timeout
                # Other connections first: by the time this one's turn comes again, its next
                # request has most often arrived, and reading it at once costs less than waiting
                # for it through epoll.
                in_a_row = 0
                await checkpoint()
                received: bytes | None = None
                while received is None:
                    if sock.fileno() != fd:  # closed meanwhile (its deadline passed): fd reusable
                        raise trio.ClosedResourceError
                    try:
                        received = os.read(fd, 65536)
                    except BlockingIOError:
                        if parked is not None and not conn.headers_complete:
                            # Between requests: the reactor waits for the next one, and answers
                            # it there if it can.
                            assert reactor is not None
                            handback = await reactor.park(parked)
                            break
                        if conn.headers_complete:  # a body on its way
                            await trio.lowlevel.wait_readable(sock)
                        elif deadlines.closing:  # idle, in a graceful stop: nothing to answer
                            return None
                        else:  # idle without a reactor: until a request, or the graceful stop
                            await deadlines.wait_idle(sock)
                if received is None:
                    continue
                conn.receive_data(received)
                continue
            if event is ENDED:
                return None
            if isinstance(event, Refused):
                await _write(sock, fd, conn.send_response(event.response), watch, write_timeout)
                return None
            assert isinstance(event, UpgradeRequested)
            watch.deadline = math.inf
            request = event.request
            outcome = await respond(request)
            if isinstance(outcome, HttpResponse):
                await _write(sock, fd, conn.send_response(outcome), watch, write_timeout)
                return None
            return Takeover(outcome, event.trailing)
    except (OSError, trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    finally:
        deadlines.forget(watch)
        # No cycle outlives the connection (see broker.operator.gc_keeper): the machine and its parser,
        # and the parked record, whose deadline's callback refers to it through this frame.
        conn.release()
        parked = None
        watch.expire = _expired  # its callback refers to it through this frame: a cycle
    return None
