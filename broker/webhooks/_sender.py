"""The HTTP POST of one delivery (h11 over a trio stream): to the addresses the target's host
resolves to and nowhere else, one request per connection, redirects never followed. The caller
owns the timeout (``trio.fail_after`` around :func:`post`)."""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Final

import h11
import trio

from broker.webhooks._target import RefusedTarget, Target, resolve

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


async def post(
    target: Target, headers: list[tuple[bytes, bytes]], body: bytes, *, allow_private: bool
) -> Outcome:
    """POST ``body`` to ``target`` with ``headers`` (and the usual ones); never raises for what
    the network or the receiver does."""
    try:
        addresses = await resolve(target, allow_private=allow_private)
    except RefusedTarget as exc:
        return Outcome(None, ok=False, retryable=False, error=str(exc))
    try:
        stream: trio.abc.Stream = await trio.open_tcp_stream(addresses[0], target.port)
    except OSError as exc:
        return Outcome(
            None, ok=False, retryable=True, error=f"cannot connect: {exc.strerror or exc}"
        )
    try:
        if target.scheme == "https":
            tls = trio.SSLStream(stream, _tls(), server_hostname=target.host)
            await tls.do_handshake()
            stream = tls
        return await _exchange(stream, target, headers, body)
    except (OSError, trio.BrokenResourceError, h11.ProtocolError) as exc:
        return Outcome(None, ok=False, retryable=True, error=f"connection failed: {exc}")
    finally:
        await trio.aclose_forcefully(stream)


async def _exchange(
    stream: trio.abc.Stream, target: Target, headers: list[tuple[bytes, bytes]], body: bytes
) -> Outcome:
    conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_RESPONSE)
    request = h11.Request(
        method="POST",
        target=target.path.encode(),
        headers=[
            (b"host", target.host_header.encode()),
            (b"user-agent", USER_AGENT),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
            *headers,
        ],
    )
    await stream.send_all(
        conn.send(request) + conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage())
    )
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            data = await stream.receive_some(16384)
            if not data:
                return Outcome(
                    None, ok=False, retryable=True, error="the receiver closed without answering"
                )
            conn.receive_data(bytes(data))
            continue
        if isinstance(event, h11.Response):
            retry_after = dict(event.headers).get(b"retry-after")
            return judge(event.status_code, retry_after)
        if isinstance(event, h11.ConnectionClosed):
            return Outcome(
                None, ok=False, retryable=True, error="the receiver closed without answering"
            )
