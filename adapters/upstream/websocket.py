"""A client WebSocket to an upstream node, for whichever family's PubSub follows it (chain-neutral).

:func:`connect` opens the stream and does the handshake, each within ``connect_timeout``; the
caller owns what it returns and closes the stream itself (trio-websocket leaves the socket open after
an abnormal closure). The errors that end one session are gathered in :data:`WS_ERRORS`.
"""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable
from typing import Any, Final, cast
from urllib.parse import urlsplit

import msgspec
import trio
import trio_websocket


class WebSocketFailed(Exception):
    """The upstream's WebSocket did not do its part (the message says what)."""


#: What ends one WebSocket session (the follower then polls and retries later).
WS_ERRORS: Final = (
    OSError,
    trio.BrokenResourceError,
    trio_websocket.HandshakeError,
    trio_websocket.ConnectionClosed,
    WebSocketFailed,
    msgspec.DecodeError,
)

#: Opens the byte stream a WebSocket URL's handshake goes over (a TCP or TLS connection).
StreamOpener = Callable[[str], Awaitable[trio.abc.Stream]]


def leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    """The exceptions of a group, nested groups flattened (for one log line)."""
    found: list[BaseException] = []
    for exc in group.exceptions:
        found.extend(leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return found


async def open_stream(url: str) -> trio.SocketStream | trio.SSLStream[trio.SocketStream]:
    parts = urlsplit(url)
    secure = parts.scheme == "wss"
    host = parts.hostname or ""
    port = parts.port or (443 if secure else 80)
    if not secure:
        return await trio.open_tcp_stream(host, port)
    context = ssl.create_default_context()
    return await trio.open_ssl_over_tcp_stream(
        host, port, ssl_context=context, https_compatible=True
    )


def _host_header(url: str) -> str:
    parts = urlsplit(url)
    default = 443 if parts.scheme == "wss" else 80
    host = parts.hostname or ""
    return host if parts.port in (None, default) else f"{host}:{parts.port}"


def _resource(url: str) -> str:
    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


async def connect(
    nursery: trio.Nursery, url: str, *, connect_timeout: float, opener: StreamOpener
) -> tuple[trio_websocket.WebSocketConnection, trio.abc.Stream]:
    """A WebSocket to ``url`` whose reader task runs in ``nursery``, and the stream under it
    (the caller closes that stream, shielded, when the session ends)."""
    stream: trio.abc.Stream | None = None
    with trio.move_on_after(connect_timeout):
        stream = await opener(url)
    if stream is None:
        raise WebSocketFailed(f"cannot connect within {connect_timeout:g} s")
    ws: trio_websocket.WebSocketConnection | None = None
    try:
        with trio.move_on_after(connect_timeout):
            # Any trio stream will do (trio-websocket's documentation; its annotation names only
            # sockets and TLS).
            socket_like = cast(trio.SocketStream, stream)
            ws = await trio_websocket.wrap_client_stream(
                nursery, socket_like, _host_header(url), _resource(url)
            )
    finally:
        if ws is None:
            with trio.CancelScope(shield=True):
                await stream.aclose()
    if ws is None:
        raise WebSocketFailed(f"no WebSocket handshake within {connect_timeout:g} s")
    return ws, stream


class _Params(msgspec.Struct):
    subscription: Any
    result: msgspec.Raw


class _Message(msgspec.Struct):
    id: Any = None
    result: Any = None
    error: Any = None
    method: str | None = None
    params: _Params | None = None


_decoder: Final = msgspec.json.Decoder(_Message)
#: A reply or a notification of a JSON-RPC WebSocket (also the pending-transaction follower's).
message_decoder: Final = _decoder


async def subscribe(
    ws: trio_websocket.WebSocketConnection,
    request: bytes,
    request_id: int,
    *,
    name: str,
    reply_within: float,
) -> str | int:
    """Send a subscribe ``request`` (with id ``request_id``); the subscription id it answers
    (geth's are strings, Solana's integers). ``name`` says what was asked, for errors."""
    await ws.send_message(request)
    with trio.move_on_after(reply_within):
        while True:
            reply = _decoder.decode(await ws.get_message())
            if reply.id != request_id:
                continue
            result = reply.result
            if reply.error is not None or not isinstance(result, str | int) or result is True:
                raise WebSocketFailed(f"{name} refused: {reply.error!r}")
            return result
    raise WebSocketFailed(f"no reply to {name} within {reply_within:g} s")


async def read_notifications(
    ws: trio_websocket.WebSocketConnection,
    method: str,
    subscription: str | int,
    on_result: Callable[[msgspec.Raw], None],
    *,
    tick: float,
    ping_interval: float,
    request_timeout: float,
    leave: Callable[[], bool],
) -> None:
    """Hand each ``method`` notification's ``result`` of ``subscription`` to ``on_result`` until
    the connection fails (raises) or, checked every ``tick`` seconds, ``leave()`` says so. A
    connection quiet for ``ping_interval`` is pinged; no pong within ``request_timeout``: stalled."""
    quiet_since = next_check = trio.current_time()
    while True:
        message: str | bytes | None = None
        with trio.move_on_after(tick):
            message = await ws.get_message()
        now = trio.current_time()
        if now >= next_check:
            next_check = now + tick
            if leave():
                return
        if message is None:
            if now - quiet_since >= ping_interval:
                with trio.move_on_after(request_timeout) as pinging:
                    await ws.ping()
                if pinging.cancelled_caught:
                    raise WebSocketFailed(f"no pong within {request_timeout:g} s: stalled")
                quiet_since = trio.current_time()
            continue
        quiet_since = now
        notification = _decoder.decode(message)
        params = notification.params
        if notification.method != method or params is None:
            continue
        if params.subscription != subscription:
            continue
        on_result(params.result)
