"""One console's WebSocket on ``/admin/ws``: sign-in, then the feed (the trio shell).

A browser cannot put an ``Authorization`` header on a WebSocket, and a token in the URL ends up in
logs and history: the console's first message is ``{"token": "<admin token>"}``. A wrong token
closes the connection with :data:`CLOSE_WRONG_TOKEN`; no sign-in within :data:`SIGN_IN_TIMEOUT`
closes it with 1008. A client that can send the header (and sent the right one) is signed in at
once. Nothing else the console sends is read: answers go through ``POST /admin``.

The connection's own task reads (frames in, through :class:`~broker.transport.ws_protocol.WebSocketProtocol`);
one writer sends (frames out, from the connection's bounded queue, then the close frame); two small
tasks end the connection when the console has not signed in in time, or when the server shuts down.
A console that falls behind is ended by its queue (:class:`~broker.operator.console._feed.FeedSubscriber`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import Final

import msgspec
import trio

from broker.operator.admin import WRONG_TOKEN
from broker.operator.console._feed import (
    CLOSE_FELL_BEHIND,
    FEED_QUEUE,
    FeedSubscriber,
    OperatorFeed,
)
from broker.transport import frames
from broker.transport.ws_protocol import CloseRequested, Message, SendFrame, WebSocketProtocol

SIGN_IN_TIMEOUT: Final = 10.0
#: The console sends one small message (its token); anything larger is refused with 1009.
MAX_MESSAGE: Final = 4096
CLOSE_WRONG_TOKEN: Final = 4401


class _SignIn(msgspec.Struct):
    token: str


_decode_sign_in = msgspec.json.Decoder(_SignIn).decode


class FeedConnection:
    """A console connected to the operator feed."""

    def __init__(
        self,
        stream: trio.abc.Stream,
        feed: OperatorFeed,
        accepts: Callable[[str], bool],
        *,
        signed_in: bool,
        dev_token: bool,
        stopping: Callable[[], Awaitable[object]],
    ) -> None:
        """``signed_in``: the upgrade request carried the right token already. ``stream`` is the
        console's socket (any trio stream: the tests use memory streams)."""
        self._stream = stream
        self._feed = feed
        self._accepts = accepts
        self._dev_token = dev_token
        self._stopping = stopping
        self._protocol = WebSocketProtocol(MAX_MESSAGE)
        self._queue, self._outgoing = trio.open_memory_channel[bytes](FEED_QUEUE)
        self._subscriber: FeedSubscriber | None = None
        self._signed_in = trio.Event()
        self._header_signed_in = signed_in
        self._close_frame: bytes | None = None
        self._scope = trio.CancelScope()

    async def run(self, trailing: bytes) -> None:
        """Serve the console until it leaves, is closed, or the server stops."""
        try:
            async with trio.open_nursery() as nursery:
                self._scope = nursery.cancel_scope
                nursery.start_soon(self._write)
                nursery.start_soon(self._end_unless_signed_in)
                nursery.start_soon(self._end_when_stopping)
                if self._header_signed_in:
                    await self._sign_in()
                await self._read(trailing)
                if self._close_frame is None:  # the console left without a close frame
                    nursery.cancel_scope.cancel()
        finally:
            if self._subscriber is not None:
                self._feed.unsubscribe(self._subscriber)

    def _end(self, code: int, reason: str) -> None:
        """Send what is queued, then a close frame, by the protocol's close deadline."""
        frame = self._protocol.close(code, reason, trio.current_time())
        if frame is None:
            return  # closing already
        self._close_frame = frame
        self._queue.close()  # the writer sends what is left, then the close frame
        deadline = self._protocol.close_deadline
        assert deadline is not None
        self._scope.deadline = min(self._scope.deadline, deadline)

    async def _sign_in(self) -> None:
        self._signed_in.set()
        self._subscriber = await self._feed.subscribe(
            self._queue, on_overflow=self._fell_behind, dev_token=self._dev_token
        )

    def _fell_behind(self) -> None:
        self._end(CLOSE_FELL_BEHIND, "fell behind: reconnect for a fresh snapshot")

    async def _read(self, data: bytes) -> None:
        while True:
            for event in self._protocol.receive_data(data):
                if type(event) is Message:
                    await self._receive(event.payload)
                elif type(event) is SendFrame:  # a pong
                    with contextlib.suppress(trio.WouldBlock, trio.ClosedResourceError):
                        self._queue.send_nowait(event.frame)
                elif type(event) is CloseRequested:
                    self._end(event.code, event.reason)
                    return
            try:
                data = bytes(await self._stream.receive_some(65536))  # a socket's: as is
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return
            if not data:
                return

    async def _receive(self, payload: bytes) -> None:
        if self._signed_in.is_set() or self._close_frame is not None:
            return  # the console's answers go through POST /admin
        try:
            token = _decode_sign_in(payload).token
        except msgspec.DecodeError:
            token = ""
        if self._accepts(token):
            await self._sign_in()
        else:
            self._end(CLOSE_WRONG_TOKEN, WRONG_TOKEN)

    async def _write(self) -> None:
        try:
            async for frame in self._outgoing:
                await self._stream.send_all(frame)
            if self._close_frame is not None:
                await self._stream.send_all(self._close_frame)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            self._scope.cancel()  # the reader too: the connection is over

    async def _end_unless_signed_in(self) -> None:
        with trio.move_on_after(SIGN_IN_TIMEOUT):
            await self._signed_in.wait()
            return
        self._end(frames.CLOSE_POLICY, f"no sign-in within {SIGN_IN_TIMEOUT:g} s")

    async def _end_when_stopping(self) -> None:
        await self._stopping()
        self._end(frames.CLOSE_GOING_AWAY, "server shutting down")
