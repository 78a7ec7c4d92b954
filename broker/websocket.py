"""One dapp WebSocket: wsproto parses what arrives, frames leave through the outbox.

A connection is one reader task (this module's :meth:`WebSocketConnection.serve`) plus, only while
the socket pushes back, one flusher task. Calls on one connection run concurrently (each reply carries
its id) up to ``max_inflight``; past that the reader waits, which pushes back on the client.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

import trio
import wsproto.events as wse
from wsproto.connection import Connection as FrameParser
from wsproto.connection import ConnectionType

from broker import frames
from broker.dispatch import CallContext
from broker.outbox import Outbox

if TYPE_CHECKING:
    from broker.dispatch import Dispatcher

log = logging.getLogger(__name__)

CLOSE_GRACE: Final = 2.0
_ids = itertools.count(1)


class WebSocketConnection:
    """A dapp connection: send messages without awaiting, close with a code."""

    __slots__ = (
        "_closing",
        "_dispatcher",
        "_fragment_size",
        "_fragments",
        "_inflight",
        "_max_inflight",
        "_max_message",
        "_nursery",
        "_on_close",
        "_parser",
        "_stream",
        "awaiting_pong",
        "close_code",
        "context",
        "id",
        "outbox",
        "state",
    )

    def __init__(
        self,
        stream: trio.SocketStream,
        nursery: trio.Nursery,
        dispatcher: Dispatcher,
        context: CallContext,
        *,
        max_message: int,
        max_inflight: int,
        outbox_limit: int,
        on_slow_consumer: Callable[[WebSocketConnection], None] | None = None,
    ) -> None:
        self.id = next(_ids)
        self._stream = stream
        self._nursery = nursery
        self._dispatcher = dispatcher
        self._parser = FrameParser(ConnectionType.SERVER)
        self._max_message = max_message
        self._max_inflight = max_inflight
        self._inflight = 0
        self._fragments: list[bytes] = []
        self._fragment_size = 0
        self._closing = False
        self._on_close: list[Callable[[WebSocketConnection], None]] = []
        self.context = context
        context.peer = self
        self.awaiting_pong = False
        self.close_code: int | None = None
        #: Per-feature state (sessions, subscriptions) keyed by feature name; kept small.
        self.state: dict[str, object] = {}

        def overflowed() -> None:
            self.close_code = frames.CLOSE_SLOW_CONSUMER
            if on_slow_consumer is not None:
                on_slow_consumer(self)
            self._begin_close()

        self.outbox = Outbox(
            stream.socket,
            nursery,
            limit=outbox_limit,
            overflow_frame=frames.close_frame(frames.CLOSE_SLOW_CONSUMER, "slow consumer"),
            on_overflow=overflowed,
        )

    def __repr__(self) -> str:
        return f"<WebSocketConnection #{self.id} {self.context.api_key[:4]}… {self.context.origin}>"

    @property
    def open(self) -> bool:
        return not self._closing

    def send_message(self, payload: bytes) -> bool:
        """Send one text message (JSON bytes). Never awaits; False once the connection is closing."""
        return self.outbox.send(frames.text_frame(payload))

    def send_frame(self, frame: bytes) -> bool:
        """Send an already-built frame (fan-out builds one frame for many connections)."""
        return self.outbox.send(frame)

    def ping(self) -> None:
        self.awaiting_pong = True
        self.outbox.send(frames.ping_frame())

    def on_close(self, callback: Callable[[WebSocketConnection], None]) -> None:
        """Call ``callback`` once when the connection ends."""
        self._on_close.append(callback)

    def close(self, code: int = frames.CLOSE_NORMAL, reason: str = "") -> None:
        """Send a close frame and end the connection after a short grace period."""
        if self._closing:
            return
        self.close_code = code
        self.outbox.send_last(frames.close_frame(code, reason))
        self._begin_close()

    def _begin_close(self) -> None:
        if self._closing:
            return
        self._closing = True
        self._nursery.start_soon(self._finish_close)

    async def _finish_close(self) -> None:
        with trio.move_on_after(CLOSE_GRACE):
            await self.outbox.drain()
        self._nursery.cancel_scope.cancel()

    async def serve(self, first_bytes: bytes) -> None:
        """Read frames until the peer leaves or the connection closes; then clean up."""
        try:
            if first_bytes:
                self._parser.receive_data(first_bytes)
                await self._handle_events()
            while not self._closing:
                try:
                    data = await self._stream.receive_some(65536)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    data = b""
                if not data:
                    break
                self._parser.receive_data(data)
                await self._handle_events()
            if self._closing:
                await trio.sleep_forever()  # _finish_close cancels us
        finally:
            self._closing = True
            self.outbox.stop()
            for callback in self._on_close:
                try:
                    callback(self)
                except Exception:
                    log.exception("on_close callback failed for %r", self)
            self._nursery.cancel_scope.cancel()

    async def _handle_events(self) -> None:
        for event in self._parser.events():
            if isinstance(event, wse.TextMessage | wse.BytesMessage):
                chunk = (
                    event.data.encode() if isinstance(event, wse.TextMessage) else bytes(event.data)
                )
                fragments = self._fragments
                fragments.append(chunk)
                self._fragment_size += len(chunk)
                if self._fragment_size > self._max_message:
                    fragments.clear()
                    self.close(
                        frames.CLOSE_TOO_BIG, f"message larger than {self._max_message} bytes"
                    )
                    return
                if event.message_finished:
                    payload = fragments[0] if len(fragments) == 1 else b"".join(fragments)
                    fragments.clear()
                    self._fragment_size = 0
                    await self._dispatch(payload)
            elif isinstance(event, wse.Ping):
                self.outbox.send(frames.pong_frame(bytes(event.payload)))
            elif isinstance(event, wse.Pong):
                self.awaiting_pong = False
            elif isinstance(event, wse.CloseConnection):
                self.close(event.code if event.code != 1005 else frames.CLOSE_NORMAL, "")
                return
            if self._closing:
                return

    async def _dispatch(self, payload: bytes) -> None:
        if self._inflight < self._max_inflight:
            self._inflight += 1
            self._nursery.start_soon(self._answer, payload)
        else:
            self._inflight += 1
            await self._answer(payload)

    async def _answer(self, payload: bytes) -> None:
        try:
            reply = await self._dispatcher.handle(payload, self.context)
        finally:
            self._inflight -= 1
        if reply is not None:
            self.send_message(reply)
