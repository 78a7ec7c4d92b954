"""The HTTP POSTs of one webhook (h11 over a trio stream): to the addresses the target's host
resolves to and nowhere else, one at a time over a kept-alive connection, redirects never
followed. The caller owns the timeout (``trio.move_on_after`` around :meth:`Sender.post`)."""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Final

import h11
import trio

from broker.events.webhooks._target import RefusedTarget, Target, resolve

USER_AGENT: Final = b"scopecast-webhooks"
#: Response bytes read at most (the status line and headers are all that matter).
MAX_RESPONSE: Final = 64 * 1024


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one attempt came to: ``status`` (None: no response), whether it counts as
    delivered, whether trying again may help, the wait a 429 or 503 asked for, and the error
    the console shows."""

    status: int | None
    ok: bool
    retryable: bool
    retry_after: float | None = None
    error: str | None = None


def judge(status: int, retry_after: bytes | None) -> Outcome:
    """The outcome of a response with ``status`` (sans-io): 2xx is delivered; 429 and 5xx are
    retried (honouring ``Retry-After`` in seconds); anything else (a redirect, a 4xx) will not
    change by retrying, and parks the webhook."""
    if 200 <= status < 300:
        return Outcome(status, ok=True, retryable=False)
    wait = _seconds(retry_after) if status in (429, 503) else None
    if status == 429 or status == 408 or status >= 500:
        return Outcome(status, ok=False, retryable=True, retry_after=wait, error=f"HTTP {status}")
    if 300 <= status < 400:
        return Outcome(
            status, ok=False, retryable=False, error=f"HTTP {status}: redirects are not followed"
        )
    return Outcome(status, ok=False, retryable=False, error=f"HTTP {status}")


def _seconds(value: bytes | None) -> float | None:
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None  # an HTTP date: the backoff decides
    return seconds if 0 <= seconds <= 24 * 3600 else None


_TLS: ssl.SSLContext | None = None


def _tls() -> ssl.SSLContext:
    global _TLS
    if _TLS is None:
        _TLS = ssl.create_default_context()
    return _TLS


class Sender:
    """POSTs one webhook's deliveries, one at a time, over a kept-alive connection to the
    target's checked addresses (re-resolved and checked whenever it connects again)."""

    def __init__(self, target: Target, *, allow_private: bool) -> None:
        self.target = target
        self.allow_private = allow_private
        self._stream: trio.abc.Stream | None = None
        self._conn: h11.Connection | None = None

    async def post(self, headers: list[tuple[bytes, bytes]], body: bytes) -> Outcome:
        """POST ``body`` with ``headers`` (and the usual ones); never raises for what the
        network or the receiver does. Cancelled (the caller's timeout), it leaves no connection
        half used."""
        reused = self._stream is not None
        try:
            outcome = await self._post(headers, body)
            if outcome.status is None and reused and outcome.retryable:
                # The receiver closed the idle connection meanwhile: once more on a new one.
                outcome = await self._post(headers, body)
            return outcome
        except BaseException:
            await self.aclose()
            raise

    async def _post(self, headers: list[tuple[bytes, bytes]], body: bytes) -> Outcome:
        if self._stream is None:
            refused = await self._connect()
            if refused is not None:
                return refused
        assert self._stream is not None
        assert self._conn is not None
        try:
            outcome = await _exchange(self._stream, self._conn, self.target, headers, body)
        except (OSError, trio.BrokenResourceError, h11.ProtocolError) as exc:
            outcome = Outcome(None, ok=False, retryable=True, error=f"connection failed: {exc}")
        conn = self._conn
        if conn.our_state is h11.DONE and conn.their_state is h11.DONE:
            conn.start_next_cycle()  # kept alive for the next delivery
        else:
            await self.aclose()
        return outcome

    async def _connect(self) -> Outcome | None:
        try:
            addresses = await resolve(self.target, allow_private=self.allow_private)
        except RefusedTarget as exc:
            return Outcome(None, ok=False, retryable=False, error=str(exc))
        try:
            stream: trio.abc.Stream = await trio.open_tcp_stream(addresses[0], self.target.port)
        except OSError as exc:
            return Outcome(
                None, ok=False, retryable=True, error=f"cannot connect: {exc.strerror or exc}"
            )
        if self.target.scheme == "https":
            tls = trio.SSLStream(stream, _tls(), server_hostname=self.target.host)
            try:
                await tls.do_handshake()
            except (OSError, trio.BrokenResourceError) as exc:
                await trio.aclose_forcefully(stream)
                return Outcome(None, ok=False, retryable=True, error=f"TLS failed: {exc}")
            stream = tls
        self._stream = stream
        self._conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_RESPONSE)
        return None

    async def aclose(self) -> None:
        stream, self._stream, self._conn = self._stream, None, None
        if stream is not None:
            await trio.aclose_forcefully(stream)


async def _exchange(
    stream: trio.abc.Stream,
    conn: h11.Connection,
    target: Target,
    headers: list[tuple[bytes, bytes]],
    body: bytes,
) -> Outcome:
    request = h11.Request(
        method="POST",
        target=target.path.encode(),
        headers=[
            (b"host", target.host_header.encode()),
            (b"user-agent", USER_AGENT),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            *headers,
        ],
    )
    await stream.send_all(
        conn.send(request) + conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage())
    )
    outcome: Outcome | None = None
    read = 0
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            data = await stream.receive_some(16384)
            read += len(data)
            if read > MAX_RESPONSE and outcome is not None:
                return outcome  # a long body: not read on (the connection is not kept)
            conn.receive_data(bytes(data))
            continue
        if isinstance(event, h11.Response):
            outcome = judge(event.status_code, dict(event.headers).get(b"retry-after"))
        elif isinstance(event, h11.EndOfMessage) and outcome is not None:
            return outcome
        elif isinstance(event, h11.ConnectionClosed):
            return outcome or Outcome(
                None, ok=False, retryable=True, error="the receiver closed without answering"
            )
