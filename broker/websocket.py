"""One dapp WebSocket: the trio shell of :mod:`broker.ws_protocol`; frames leave through the outbox.

A connection costs one task (the reader, :meth:`WebSocketConnection.run`, run in the task that
accepted the TCP connection) and a few small objects: an idle connection is what a broker holds
most of. Calls run concurrently (each reply carries its id) as tasks of the broker's shared nursery,
each under its own cancel scope, up to ``max_inflight`` per connection; past that the reader waits,
which pushes back on the client. The outbox starts a flusher in the same nursery only while the
socket pushes back. Closing cancels the reader and the connection's calls.

What to do is decided by the connection's :class:`~broker.ws_protocol.WebSocketProtocol` (messages,
limits, in-flight counts, pings, close codes and deadlines); this shell only reads, writes, spawns
and waits.
"""

from __future__ import annotations

import itertools
import logging
import os
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import trio

from broker import frames
from broker.dispatch import CallContext
from broker.limits import Limits
from broker.outbox import Outbox
from broker.ws_protocol import DRAINING, OPEN, CloseRequested, Message, SendFrame, WebSocketProtocol

if TYPE_CHECKING:
    from broker.dispatch import Dispatcher

log = logging.getLogger(__name__)

_ids = itertools.count(1)


class WebSocketConnection:
    """A dapp connection: send messages without awaiting, close with a code."""

    __slots__ = (
        "_calls",
        "_dispatcher",
        "_idle",
        "_nursery",
        "_on_slow_consumer",
        "_queued",
        "_settle",
        "_state",
        "_stream",
        "context",
        "id",
        "outbox",
        "protocol",
    )

    def __init__(
        self,
        stream: trio.SocketStream,
        nursery: trio.Nursery,
        dispatcher: Dispatcher,
        context: CallContext,
        limits: Limits,
        *,
        on_slow_consumer: Callable[[WebSocketConnection], None] | None = None,
        settle: Callable[[WebSocketConnection], Awaitable[None]] | None = None,
    ) -> None:
        self.id = next(_ids)
        self._stream = stream
        self._nursery = nursery
        self._dispatcher = dispatcher
        self.protocol = WebSocketProtocol(limits.ws_message, max_inflight=limits.max_inflight)
        self._queued: deque[bytes] | None = None
        self._calls: set[trio.CancelScope] | None = None
        self._idle: trio.Event | None = None
        self._state: dict[str, object] | None = None
        self._on_slow_consumer = on_slow_consumer
        self._settle = settle
        self.context = context
        context.peer = self
        self.outbox = Outbox(
            stream.socket,
            nursery,
            limit=limits.outbox,
            overflow_frame=frames.SLOW_CONSUMER_CLOSE,
            on_overflow=self._overflowed,
        )

    def __repr__(self) -> str:
        return f"<WebSocketConnection #{self.id} {self.context.api_key[:4]}… {self.context.origin}>"

    @property
    def state(self) -> dict[str, object]:
        """Per-feature state (subscriptions, ...), created on first use."""
        if self._state is None:
            self._state = {}
        return self._state

    @property
    def open(self) -> bool:
        """Whether messages sent now may still arrive (not closing, not ended)."""
        state = self.protocol.state
        return state is OPEN or state is DRAINING

    @property
    def close_code(self) -> int | None:
        """The code of the close frame this side sent (None: none yet)."""
        return self.protocol.close_code

    def send_message(self, payload: bytes) -> bool:
        """Send one text message (JSON bytes). Never awaits; False once the connection is closing."""
        return self.outbox.send(frames.text_frame(payload))

    def send_frame(self, frame: bytes) -> bool:
        """Send an already-built frame (fan-out builds one frame for many connections)."""
        return self.outbox.send(frame)

    def frame_sender(self) -> Callable[[bytes], bool]:
        """:meth:`send_frame` without the call between: the outbox's own."""
        return self.outbox.send

    def heartbeat(self, now: float, pong_due: float) -> None:
        """Ping (the pong due by ``pong_due``), or close a peer whose last ping went unanswered
        by its deadline (4009)."""
        event = self.protocol.heartbeat(now, pong_due)
        if type(event) is SendFrame:
            self.outbox.send(event.frame)
        elif type(event) is CloseRequested:
            self.close(event.code, event.reason)

    def close(self, code: int = frames.CLOSE_NORMAL, reason: str = "") -> None:
        """Send a close frame and end the connection after a short grace period."""
        frame = self.protocol.close(code, reason, trio.current_time())
        if frame is None:
            return
        self.outbox.send_last(frame)
        self._nursery.start_soon(self._finish_close)

    def _overflowed(self) -> None:
        began = self.protocol.overflowed(trio.current_time())
        if self._on_slow_consumer is not None:
            self._on_slow_consumer(self)
        if began:
            self._nursery.start_soon(self._finish_close)

    async def _finish_close(self) -> None:
        deadline = self.protocol.close_deadline
        assert deadline is not None  # set by the close that started this task
        with trio.move_on_at(deadline):
            await self.outbox.drain()
        # Closing the socket wakes the reader (a cancel scope per connection would cost more).
        self.outbox.stop()
        self._stream.socket.close()

    async def run(self, first_bytes: bytes) -> None:
        """Read frames until the peer leaves or the connection closes; then stop its calls."""
        try:
            if first_bytes:
                await self._handle(first_bytes)
            sock = self._stream.socket
            fd = sock.fileno()
            while True:
                if sock.fileno() < 0:
                    break  # _finish_close closed it while a call held the reader
                # wait_readable + os.read keeps an idle connection's suspended call chain to two
                # frames (a socket's recv() holds several more, for every idle dapp).
                try:
                    await trio.lowlevel.wait_readable(sock)
                    if sock.fileno() != fd:
                        # Closed after the wake-up and before this task ran: the fd number may
                        # already be another connection's, whose bytes are not this one's to read.
                        break
                    data = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                except (OSError, trio.ClosedResourceError):
                    break  # the peer is gone, or _finish_close closed the socket
                if not data:
                    break
                if self.protocol.state is not OPEN:
                    continue  # after our close frame (or while draining), what arrives is discarded
                await self._handle(data)
        finally:
            self.protocol.ended()
            self.outbox.stop()
            # The context names this connection: no cycle is left once it ended (see
            # broker.gc_keeper), and a call still under way is told it has no connection.
            self.context.peer = None
            if self._calls:
                for scope in self._calls:
                    scope.cancel()

    async def _handle(self, data: bytes) -> None:
        protocol = self.protocol
        for event in protocol.receive_data(data):
            if type(event) is Message:
                await self._dispatch(event.payload)
            elif type(event) is SendFrame:
                self.outbox.send(event.frame)
            elif type(event) is CloseRequested:
                self.close(event.code, event.reason)
                return
            # PongReceived: the machine has cleared its pong deadline
            if protocol.state is not OPEN:
                return  # closing or draining since: the rest of this read is discarded

    async def _dispatch(self, payload: bytes) -> None:
        # Calls start in the order they came: trio runs the tasks spawned together in either
        # order, so each takes the oldest waiting request when it starts, whichever task it is
        # (fast calls are then answered in order too, as clients such as viem's watchBlocks
        # expect).
        queued = self._queued
        if queued is None:
            queued = self._queued = deque()
        queued.append(payload)
        if self.protocol.call_arrived():
            self._nursery.start_soon(self._answer_next)
        else:
            await self._answer_next()

    async def _answer_next(self) -> None:
        queued = self._queued
        assert queued
        payload = queued.popleft()
        if not queued:
            self._queued = None  # an idle connection keeps no queue
        await self._answer(payload)

    async def _answer(self, payload: bytes) -> None:
        scope = trio.CancelScope()
        if self._calls is None:
            self._calls = set()
        self._calls.add(scope)
        reply = None
        try:
            with scope:
                reply = await self._dispatcher.handle(payload, self.context)
            if self._settle is not None:
                await self._settle(self)  # what the call changed is kept before it is answered
        finally:
            self._calls.discard(scope)
            idle = self.protocol.call_answered()
        if reply is not None:
            self.send_message(reply)
        if idle and self._idle is not None:
            self._idle.set()

    async def finish_calls(self) -> None:
        """Stop reading requests and return once the calls under way have answered."""
        if self.protocol.state is not OPEN:
            return  # draining or ending already
        if self.protocol.drain():
            self._idle = trio.Event()
            await self._idle.wait()
