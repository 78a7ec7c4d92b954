"""HTTP/1.1 connections: JSON-RPC over POST, health, metrics, admin, and the WebSocket upgrade.

The protocol is :mod:`broker.http_protocol` (no I/O); this is its trio shell. It reads and writes
the socket directly (``wait_readable`` then ``os.read``; non-blocking ``os.write``, awaiting only
when the kernel buffer is full), which keeps the per-request path short.

Keep-alive is supported; a connection that sends no request head within ``IDLE_TIMEOUT`` is closed.
A request body over the limit gets 413 before it is read; a body not received in full within its
deadline gets 408; either closes the connection. ``Content-Type`` checks are the responder's.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

import trio

from broker.http_protocol import (
    CORS_HEADERS as CORS_HEADERS,
)
from broker.http_protocol import (
    ENDED,
    NEED_DATA,
    HttpServerConnection,
    Refused,
    RequestReceived,
    UpgradeRequested,
)
from broker.http_protocol import (
    HttpRequest as HttpRequest,
)
from broker.http_protocol import (
    HttpResponse as HttpResponse,
)
from broker.http_reactor import Handback, HttpReactor, Parked
from schemas.errors import InvalidRequest, RpcError
from schemas.jsonrpc import NULL_ID, error_bytes

IDLE_TIMEOUT: Final = 75.0
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


def json_error(status: int, error: RpcError) -> HttpResponse:
    """A status with a JSON-RPC error body (401 for a missing key, 413, ...)."""
    return HttpResponse(status, error_bytes(NULL_ID, error), JSON_HEADERS)


def is_websocket_upgrade(request: HttpRequest) -> bool:
    upgrade = request.header(b"upgrade")
    connection = request.header(b"connection") or b""
    return (
        upgrade is not None and upgrade.lower() == b"websocket" and b"upgrade" in connection.lower()
    )


async def _write_rest(sock: trio.socket.SocketType, fd: int, data: bytes, written: int) -> None:
    """Write ``data[written:]``, waiting whenever the kernel's buffer is full."""
    view = memoryview(data)[written:]
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            await trio.lowlevel.wait_writable(sock)
            if sock.fileno() != fd:  # closed meanwhile (its deadline passed): the fd may be reused
                raise trio.ClosedResourceError from None
            continue
        view = view[written:]


async def _write(sock: trio.socket.SocketType, fd: int, data: bytes) -> None:
    try:
        written = os.write(fd, data)  # most often all of it, at once
    except BlockingIOError:
        written = 0
    if written != len(data):
        await _write_rest(sock, fd, data, written)


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

    def watch(self, deadline: float, expire: Callable[[], None]) -> _Watch:
        """Call ``expire`` once ``watch.deadline`` (``deadline`` to start with) has passed."""
        watch = _Watch(deadline, expire)
        self._watches.add(watch)
        return watch

    def forget(self, watch: _Watch) -> None:
        self._watches.discard(watch)

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """End connections past their deadlines, until cancelled."""
        task_status.started()
        while True:
            await trio.sleep(self.resolution)
            now = trio.current_time()
            for watch in [w for w in self._watches if w.deadline <= now]:
                self._watches.discard(watch)
                watch.expire()


class _Watch:
    __slots__ = ("deadline", "expire")

    def __init__(self, deadline: float, expire: Callable[[], None]) -> None:
        self.deadline = deadline
        self.expire = expire


async def handle_http(
    stream: trio.SocketStream,
    respond: Responder,
    deadlines: ConnectionDeadlines,
    *,
    body_limit: int,
    body_timeout: float,
    respond_now: FastResponder | None = None,
    reactor: HttpReactor | None = None,
) -> Takeover | None:
    """Answer requests on one TCP connection until it closes, is idle too long, or upgrades to a
    WebSocket (then the accepted upgrade is returned, to be run by the caller).

    A connection waiting for a request head longer than ``IDLE_TIMEOUT`` is closed; one whose
    request body has not arrived in full ``body_timeout`` after its head gets 408 and is closed
    (a client trickling its body must not hold the connection). ``deadlines`` enforces both.
    ``respond_now``, when given, answers plain requests instead of ``respond``; with a
    ``reactor`` too, the connection is parked there whenever its next request has not arrived
    (:mod:`broker.http_reactor`), and answered there while the answers come at once.
    """
    conn = HttpServerConnection(body_limit=body_limit)
    sock = stream.socket
    fd = sock.fileno()

    def expire() -> None:
        if parked is not None and reactor is not None and reactor.parked(parked):
            reactor.hand_back(parked, Handback(error=trio.ClosedResourceError()))
        if conn.headers_complete:
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
        else Parked(fd, conn, respond_now, watch, IDLE_TIMEOUT)
    )
    handback: Handback | None = None
    in_body = False
    checkpoint = trio.lowlevel.checkpoint
    try:
        while True:
            pending = None
            if handback is None:
                event = conn.next_event()
            else:  # what the reactor stopped at
                if handback.error is not None:
                    raise handback.error
                if handback.unsent:
                    await _write_rest(sock, fd, handback.unsent, 0)
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
                if pending is not None:  # the reactor's call of respond_now
                    answer: HttpResponse | Upgrade | bytes | None = await pending
                elif respond_now is None:
                    answer = await respond(request)
                else:
                    now = respond_now(request)
                    answer = now if isinstance(now, bytes) else await now
                if answer is None:
                    answer = b""
                if isinstance(answer, bytes):
                    data = conn.send_json(answer)
                else:
                    assert isinstance(answer, HttpResponse), "upgrade only for upgrade requests"
                    data = conn.send_response(answer)
                # Written at once, as the kernel most often takes it whole.
                try:
                    written = os.write(fd, data)
                except BlockingIOError:
                    written = 0
                if written != len(data):
                    await _write_rest(sock, fd, data, written)
                in_body = False
                watch.deadline = trio.current_time() + IDLE_TIMEOUT
                continue
            if event is NEED_DATA:
                if conn.headers_complete:  # part-way through a request: its body is coming
                    pending_bytes = conn.data_to_send()  # a 100 Continue
                    if pending_bytes:
                        await _write(sock, fd, pending_bytes)
                    if not in_body:
                        in_body = True
                        watch.deadline = trio.current_time() + body_timeout
                # Other connections first: by the time this one's turn comes again, its next
                # request has most often arrived, and reading it at once costs less than waiting
                # for it through epoll.
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
                        await trio.lowlevel.wait_readable(sock)
                if received is None:
                    continue
                conn.receive_data(received)
                continue
            if event is ENDED:
                return None
            if isinstance(event, Refused):
                await _write(sock, fd, conn.send_response(event.response))
                return None
            assert isinstance(event, UpgradeRequested)
            watch.deadline = math.inf
            request = event.request
            outcome = await respond(request)
            if isinstance(outcome, HttpResponse):
                await _write(sock, fd, conn.send_response(outcome))
                return None
            return Takeover(outcome, event.trailing)
    except (OSError, trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    finally:
        deadlines.forget(watch)
        # No cycle outlives the connection (see broker.gc_keeper): the machine and its parser,
        # and the parked record, whose deadline's callback refers to it through this frame.
        conn.release()
        parked = None
    return None
