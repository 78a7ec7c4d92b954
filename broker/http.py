"""HTTP/1.1 connections (h11): JSON-RPC over POST, health, metrics, admin, and the WebSocket upgrade.

Keep-alive is supported; an idle connection is closed after ``IDLE_TIMEOUT``. A request body over the
limit gets 413 before it is read; a body not received in full within its deadline gets 408; a
``Content-Type`` other than JSON gets 415, as geth answers. Either of the first two closes the
connection.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

import h11
import trio

from broker.errors import InvalidRequest, RpcError
from schemas.jsonrpc import NULL_ID, error_bytes

log = logging.getLogger(__name__)

IDLE_TIMEOUT: Final = 75.0
HEADER_LIMIT: Final = 32 * 1024
JSON_HEADERS: Final = [(b"content-type", b"application/json")]
CORS_HEADERS: Final = [
    (b"access-control-allow-origin", b"*"),
    (b"access-control-allow-methods", b"POST, GET, OPTIONS"),
    (b"access-control-allow-headers", b"content-type, authorization"),
    (b"access-control-max-age", b"86400"),
]


@dataclass(slots=True)
class HttpRequest:
    """A request head with its body (read in full, within the limit)."""

    method: bytes
    target: bytes
    headers: list[tuple[bytes, bytes]]
    body: bytes = b""

    def header(self, name: bytes) -> bytes | None:
        for key, value in self.headers:
            if key == name:
                return value
        return None


@dataclass(slots=True)
class HttpResponse:
    status: int
    body: bytes = b""
    headers: list[tuple[bytes, bytes]] | None = None


Upgrade = Callable[[trio.SocketStream, bytes], Awaitable[None]]
"""Takes over the stream for a WebSocket, given the bytes that came after the request head."""


@dataclass(frozen=True, slots=True)
class Takeover:
    """An accepted upgrade, returned by :func:`serve_http` so that its caller runs it once the HTTP
    state (parser, headers) is gone: a WebSocket lives long, and must not keep them alive."""

    upgrade: Upgrade
    trailing: bytes


Responder = Callable[[HttpRequest], Awaitable[HttpResponse | Upgrade]]


def json_error(status: int, error: RpcError) -> HttpResponse:
    """A status with a JSON-RPC error body (401 for a missing key, 413, ...)."""
    return HttpResponse(status, error_bytes(NULL_ID, error), JSON_HEADERS)


def is_websocket_upgrade(request: HttpRequest) -> bool:
    upgrade = request.header(b"upgrade")
    connection = request.header(b"connection") or b""
    return (
        upgrade is not None and upgrade.lower() == b"websocket" and b"upgrade" in connection.lower()
    )


async def _next_event(
    stream: trio.SocketStream, conn: h11.Connection
) -> h11.Event | type[h11.PAUSED]:
    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event  # type: ignore[return-value]
        data = await stream.receive_some(65536)
        conn.receive_data(data)


async def _send(stream: trio.SocketStream, conn: h11.Connection, response: HttpResponse) -> None:
    headers = list(response.headers or [])
    headers.extend(CORS_HEADERS)
    headers.append((b"content-length", str(len(response.body)).encode()))
    if conn.their_state is not h11.DONE:  # body not read (413, early error): don't keep alive
        headers.append((b"connection", b"close"))
    data = conn.send(h11.Response(status_code=response.status, headers=headers))
    data = (
        (data or b"") + (conn.send(h11.Data(data=response.body)) or b"") if response.body else data
    )
    data = (data or b"") + (conn.send(h11.EndOfMessage()) or b"")
    await stream.send_all(data)


async def _read_body(
    stream: trio.SocketStream, conn: h11.Connection, body_limit: int
) -> bytes | HttpResponse | None:
    """The request body; or the error to answer (413); or None when the client went away."""
    body = bytearray()
    while True:
        part = await _next_event(stream, conn)
        if isinstance(part, h11.Data):
            body += part.data
            if len(body) > body_limit:
                return json_error(
                    413, InvalidRequest(f"request body larger than {body_limit} bytes")
                )
        elif isinstance(part, h11.EndOfMessage):
            return bytes(body)
        else:
            return None


async def serve_http(
    stream: trio.SocketStream, respond: Responder, *, body_limit: int, body_timeout: float
) -> Takeover | None:
    """Serve one TCP connection until it closes, is idle too long, or upgrades to a WebSocket
    (then the accepted upgrade is returned, to be run by the caller).

    ``body_timeout`` bounds the time from a request's head to the end of its body: the idle timeout
    covers only the wait for a head, and a client trickling its body must not hold the connection.
    """
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=HEADER_LIMIT)
    try:
        while True:
            with trio.move_on_after(IDLE_TIMEOUT):
                event = await _next_event(stream, conn)
            if not isinstance(event, h11.Request):
                return None  # idle timeout, ConnectionClosed, or a stray event
            request = HttpRequest(event.method, event.target, list(event.headers))
            if is_websocket_upgrade(request):
                outcome = await respond(request)
                if isinstance(outcome, HttpResponse):
                    await _send(stream, conn, outcome)
                    return None
                trailing, _closed = conn.trailing_data
                return Takeover(outcome, bytes(trailing))
            length = request.header(b"content-length")
            if length is not None and length.isdigit() and int(length) > body_limit:
                await _send(
                    stream,
                    conn,
                    json_error(413, InvalidRequest(f"request body larger than {body_limit} bytes")),
                )
                return None
            body: bytes | HttpResponse | None = None
            with trio.move_on_after(body_timeout) as deadline:
                body = await _read_body(stream, conn, body_limit)
            if deadline.cancelled_caught:
                body = json_error(
                    408, InvalidRequest(f"request body not received within {body_timeout:g} s")
                )
            if isinstance(body, HttpResponse):
                await _send(stream, conn, body)
                return None
            if body is None:
                return None
            request.body = body
            outcome = await respond(request)
            assert isinstance(outcome, HttpResponse), "upgrade only for upgrade requests"
            await _send(stream, conn, outcome)
            if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
                return None
            conn.start_next_cycle()
    except h11.RemoteProtocolError as exc:
        if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            with contextlib.suppress(
                h11.LocalProtocolError, trio.BrokenResourceError, trio.ClosedResourceError
            ):
                await _send(
                    stream,
                    conn,
                    HttpResponse(exc.error_status_hint, exc.args[0].encode() if exc.args else b""),
                )
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    return None
