"""The server side of HTTP/1.1 as a state machine with no I/O.

Bytes go in with :meth:`HttpServerConnection.receive_data`; :meth:`~HttpServerConnection.next_event`
says what they amount to (a whole request, a WebSocket upgrade, a request to refuse, or that more
bytes are needed); :meth:`~HttpServerConnection.send_response` returns the bytes of a response and
:meth:`~HttpServerConnection.data_to_send` anything the machine wants written on its own (a
``100 Continue``). The trio shell in :mod:`broker.transport.http` owns the socket and the deadlines.

Parsing is llhttp's (through ``httptools``, as uvicorn uses it), in its strict mode: a malformed
request line or header, a request with both ``Content-Length`` and ``Transfer-Encoding``, or bare
line feeds are refused with 400. Only what a JSON-RPC server needs is built here: bodies are read in
full (``Content-Length`` or chunked) up to ``body_limit``, a head over ``header_limit`` bytes gets
431, requests are answered in order, and a connection is kept alive unless the client (or a refusal)
says otherwise.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from http import HTTPStatus
from typing import Final

import httptools

from schemas.errors import InvalidRequest
from schemas.jsonrpc import NULL_ID, error_bytes

HEADER_LIMIT: Final = 32 * 1024
_CONTINUE: Final = b"HTTP/1.1 100 Continue\r\n\r\n"


class HeadNotes:
    """What a responder worked out from a request's head (method, target, headers) alone, kept for
    the requests that repeat the head byte for byte on the same connection (see
    :meth:`HttpServerConnection.receive_data`): ``value`` is None until the responder sets it."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value: object = None


@dataclass(slots=True)
class HttpRequest:
    """A request head with its body (read in full, within the limit). Header names are lowercase.

    ``notes`` is shared by the requests of a connection whose heads are the same bytes (None for a
    head that may not repeat: chunked, ``Expect``, closing): a responder may keep in it what it
    derives from the head, and find it there the next time.
    """

    method: bytes
    target: bytes
    headers: list[tuple[bytes, bytes]]
    body: bytes = b""
    notes: HeadNotes | None = None

    def header(self, name: bytes) -> bytes | None:
        return find_header(self.headers, name)


def find_header(headers: list[tuple[bytes, bytes]], name: bytes) -> bytes | None:
    """The first value of the (lowercase) header ``name``, or None."""
    for key, value in headers:
        if key == name:
            return value
    return None


@dataclass(slots=True)
class HttpResponse:
    status: int
    body: bytes = b""
    headers: list[tuple[bytes, bytes]] | None = None


@dataclass(slots=True)  # not frozen: a frozen dataclass is slower to build, once per request
class RequestReceived:
    """A whole request, body included: answer it with :meth:`HttpServerConnection.send_response`."""

    request: HttpRequest


@dataclass(frozen=True, slots=True)
class UpgradeRequested:
    """A request asking to switch protocols. ``trailing`` holds the bytes that followed its head:
    they belong to the new protocol. Answer with a response (a refusal) or take the stream over."""

    request: HttpRequest
    trailing: bytes


@dataclass(frozen=True, slots=True)
class Refused:
    """The client broke the protocol or a limit: send this response, then close."""

    response: HttpResponse


class NeedData(enum.Enum):
    NEED_DATA = "need data"


class ConnectionEnded(enum.Enum):
    ENDED = "ended"


NEED_DATA: Final = NeedData.NEED_DATA
ENDED: Final = ConnectionEnded.ENDED
"""The client closed its side (between requests, or part-way through one), or the connection must
close after the response just sent."""

Event = RequestReceived | UpgradeRequested | Refused | NeedData | ConnectionEnded


class _Stop(Exception):
    """Raised from a parser callback to stop parsing (a limit was hit)."""


def _reason(status: int) -> bytes:
    try:
        return HTTPStatus(status).phrase.encode()
    except ValueError:
        return b""


_STATUS_LINES: Final = {
    status.value: b"HTTP/1.1 %d %s\r\n" % (status.value, status.phrase.encode())
    for status in HTTPStatus
}


_JSON_200: Final = _STATUS_LINES[200] + b"content-type: application/json\r\n"


def refusal(status: int, message: str) -> Refused:
    return Refused(HttpResponse(status, message.encode(), [(b"content-type", b"text/plain")]))


class HttpServerConnection:
    """One HTTP/1.1 connection, server side, fed bytes and asked for events.

    Requests are reported one at a time, in the order they arrived; the caller answers each with
    :meth:`send_response` before it asks for the next event.
    """

    __slots__ = (
        "_body",
        "_body_limit",
        "_chunked",
        "_closing",
        "_ended",
        "_expect",
        "_head_bytes",
        "_header_limit",
        "_headers",
        "_in_message",
        "_incomplete_head",
        "_length",
        "_memo",
        "_outgoing",
        "_parser",
        "_ready",
        "_refused",
        "_upgraded",
        "_url",
        "headers_complete",
    )

    def __init__(self, *, body_limit: int, header_limit: int = HEADER_LIMIT) -> None:
        self._body_limit = body_limit
        self._header_limit = header_limit
        self._parser = httptools.HttpRequestParser(self)
        #: Requests complete and not answered yet, each with whether the connection may stay open.
        self._ready: list[tuple[RequestReceived | UpgradeRequested, bool]] = []
        self._url = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._body: bytes | bytearray = b""
        self._length: bytes | None = None
        self._expect: bytes | None = None
        self._chunked = False
        self._head_bytes = 0
        self._incomplete_head = 0
        #: The last request head the parser read whole, when a request with the very same head can
        #: be taken without it (see :meth:`receive_data`).
        self._memo: _Memo | None = None
        self._in_message = False
        self._outgoing = b""
        self._refused: Refused | None = None
        self._upgraded = False
        self._ended = False
        self._closing = False
        self.headers_complete = False
        """True from the end of a request's head to the end of its body (the body deadline runs)."""

    # -- parser callbacks (httptools calls these by name) -----------------------------------------

    def on_message_begin(self) -> None:
        self._in_message = True
        self._incomplete_head = 0
        self._url = b""
        self._headers = []
        self._body = b""
        self._length = None
        self._expect = None
        self._chunked = False
        self._head_bytes = 0

    def on_url(self, url: bytes) -> None:
        self._url += url
        self._head_bytes += len(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_bytes += len(name) + len(value) + 4
        if self._head_bytes > self._header_limit:
            self._refused = refusal(431, "request header fields too large")
            raise _Stop
        key = name.lower()
        self._headers.append((key, value))
        if key == b"content-length":  # the first one counts, as find_header would say
            self._length = value if self._length is None else self._length
        elif key == b"expect":
            self._expect = value if self._expect is None else self._expect
        elif key == b"transfer-encoding":
            self._chunked = True  # whatever its value: such a head is never memoised

    def on_headers_complete(self) -> None:
        self.headers_complete = True
        self._incomplete_head = 0
        length = self._length
        if length is not None and length.isdigit() and int(length) > self._body_limit:
            self._refused = _too_large(self._body_limit)
            raise _Stop
        expect = self._expect
        if expect is not None and expect.lower() == b"100-continue":
            self._outgoing += _CONTINUE

    def on_body(self, body: bytes) -> None:
        if not self._body:
            self._body = body  # the usual whole body in one piece: kept, not copied
        else:
            if isinstance(self._body, bytes):
                self._body = bytearray(self._body)
            self._body += body
        if len(self._body) > self._body_limit:
            self._refused = _too_large(self._body_limit)
            raise _Stop

    def on_message_complete(self) -> None:
        self._in_message = False
        self.headers_complete = False
        self._outgoing = b""  # a 100 Continue not sent yet is moot once the whole body is here
        request = HttpRequest(
            self._parser.get_method(), self._url, self._headers, bytes(self._body)
        )
        keep_alive = self._parser.should_keep_alive() and self._parser.get_http_version() == "1.1"
        self._ready.append((RequestReceived(request), keep_alive))

    # -- the interface ----------------------------------------------------------------------------

    def release(self) -> None:
        """The connection is done with: forget the parser, which refers back to this machine, so
        that the pair is freed by reference counting (:mod:`broker.operator.gc_keeper` freezes what lives
        long, and a cycle among frozen objects would stay). Nothing is received after this."""
        self._ended = True
        del self._parser

    def receive_data(self, data: bytes) -> None:
        """Feed bytes from the client; ``b""`` means the client closed its side.

        A keep-alive client most often sends the same head again and again (the same target and
        headers, a body of the same length: polling, or a call whose id has as many digits as the
        last one's). When ``data`` is exactly such a request, the head the parser read last and a
        body of its length, the request is taken as it is: the same bytes at a message boundary
        parse the same, so only the body is new. Anything else goes through the parser.
        """
        if self._ended or self._refused is not None or self._upgraded:
            return
        if not data:
            self._ended = True
            return
        memo = self._memo
        if (
            memo is not None
            and len(data) == memo.size
            and not self._in_message
            and data.startswith(memo.head)
        ):
            body = data[memo.body_offset :]
            request = HttpRequest(memo.method, memo.target, memo.headers, body, memo.notes)
            self._ready.append((RequestReceived(request), True))
            return
        at_boundary = not self._in_message and not self._ready
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade as upgrade:
            self._upgraded = True
            offset = upgrade.args[0] if upgrade.args else len(data)
            self._upgrade(data[offset:])
        except httptools.HttpParserCallbackError as exc:
            if self._refused is None:  # not one of ours: a bug in a callback
                raise RuntimeError("HTTP parser callback failed") from exc
        except httptools.HttpParserError as exc:
            self._refused = refusal(400, _parser_message(exc))
        else:
            if self._in_message:
                if not self.headers_complete:
                    # A head still incomplete after this chunk: llhttp buffers it, so bound it.
                    self._incomplete_head += len(data)
                    if self._incomplete_head > self._header_limit:
                        self._refused = refusal(431, "request header fields too large")
            elif at_boundary and len(self._ready) == 1:
                self._memoise(data)

    def _memoise(self, data: bytes) -> None:
        """Keep the head of the one request ``data`` held whole, if it may be taken again as is:
        kept alive, framed by ``Content-Length`` alone, no ``Expect``."""
        event, keep_alive = self._ready[0]
        if not keep_alive or self._chunked or self._expect is not None or self._length is None:
            return
        request = event.request
        body_offset = len(data) - len(request.body)
        head = data[:body_offset]
        if head.endswith(b"\r\n\r\n") and head.startswith(request.method + b" "):
            request.notes = HeadNotes()
            self._memo = _Memo(head, len(data), request)

    def _upgrade(self, trailing: bytes) -> None:
        # The request whose head asked to upgrade is the last one completed (llhttp reports the
        # message before pausing). Report it as an upgrade instead of a plain request.
        if not self._ready:  # a head that asked to upgrade, whose message llhttp did not complete
            self._refused = refusal(400, "malformed upgrade request")
            return
        last, _ = self._ready[-1]
        self._ready[-1] = (UpgradeRequested(last.request, trailing), False)

    def next_event(self) -> Event:
        """The next thing that happened on the connection, in order."""
        if self._closing:
            return ENDED
        if self._ready:
            return self._ready[0][0]
        if self._refused is not None:
            self._closing = True
            return self._refused
        if self._upgraded:
            return ENDED  # the upgrade was answered with a refusal: nothing more to read
        if self._ended:
            self._closing = True
            return ENDED
        return NEED_DATA

    def send_response(self, response: HttpResponse, *, keep_alive: bool = True) -> bytes:
        """The bytes of the answer to the request :meth:`next_event` last reported; with
        ``keep_alive`` False, the connection closes after it (the next event is the end)."""
        if self._ready:
            _, kept = self._ready.pop(0)
            keep_alive = keep_alive and kept
        else:
            keep_alive = False
        if not keep_alive:
            self._closing = True
        return serialize(response, keep_alive=keep_alive)

    def send_json(self, body: bytes, lines: bytes = b"") -> bytes:
        """The bytes of a 200 answer carrying the JSON ``body``, and the header ``lines`` (each
        ending with CRLF) the responder adds: :meth:`send_response` for the most common answer,
        from bytes built once."""
        keep_alive = False
        if self._ready:
            _, keep_alive = self._ready.pop(0)
        length = b"content-length: %d\r\n" % len(body)
        if not keep_alive:
            self._closing = True
            return b"".join((_JSON_200, lines, length, b"connection: close\r\n\r\n", body))
        return b"".join((_JSON_200, lines, length, b"\r\n", body))

    def data_to_send(self) -> bytes:
        """Bytes the machine wants written without a response (``100 Continue``)."""
        data, self._outgoing = self._outgoing, b""
        return data

    @property
    def closing(self) -> bool:
        """The connection must close once what was sent is written."""
        return self._closing


class _Memo:
    """A request head read whole by the parser: its bytes, the size of a request with it (head and
    body), and what it parsed to (shared by the requests that repeat it: never mutated)."""

    __slots__ = ("body_offset", "head", "headers", "method", "notes", "size", "target")

    def __init__(self, head: bytes, size: int, request: HttpRequest) -> None:
        self.head = head
        self.body_offset = len(head)
        self.size = size
        self.method = request.method
        self.target = request.target
        self.headers = request.headers
        self.notes = request.notes


def _too_large(limit: int) -> Refused:
    body = error_bytes(NULL_ID, InvalidRequest(f"request body larger than {limit} bytes"))
    return Refused(HttpResponse(413, body, [(b"content-type", b"application/json")]))


def _parser_message(exc: httptools.HttpParserError) -> str:
    text = str(exc).strip() or "malformed request"
    return f"bad request: {text}"


def serialize(response: HttpResponse, *, keep_alive: bool) -> bytes:
    """A response's bytes: status line, its headers, framing, body."""
    status = response.status
    line = _STATUS_LINES.get(status) or b"HTTP/1.1 %d %s\r\n" % (status, _reason(status))
    parts = [line]
    if response.headers:
        parts.extend(name + b": " + value + b"\r\n" for name, value in response.headers)
    parts.append(b"content-length: %d\r\n" % len(response.body))
    if not keep_alive:
        parts.append(b"connection: close\r\n")
    parts.append(b"\r\n")
    parts.append(response.body)
    return b"".join(parts)
