"""One dapp WebSocket: the trio shell of :mod:`broker.transport.ws_protocol`; frames leave through the outbox.

A connection costs one task (the reader, :meth:`WebSocketConnection.run`, run in the task that
accepted the TCP connection) and a few small objects: an idle connection is what a broker holds
most of. Calls run concurrently (each reply carries its id) as tasks of the broker's shared nursery,
up to ``max_inflight`` per connection; past that the reader waits, which pushes back on the client.
The outbox starts a flusher in the same nursery only while the socket pushes back.

The connection is its own failure and cancellation domain without a nursery of its own (which
would cost each idle connection a task-sized structure):

- each call has a cancel scope from the moment it is queued, so a connection that ends cancels
  even the calls whose task has not started yet;
- every task started on the connection's behalf (its calls, the flusher, the close) runs behind
  :meth:`WebSocketConnection.start_soon`'s boundary: an exception in a call answers that call
  with -32603 naming the network's adapter; one in the flusher or the close is logged once and
  ends that connection (its socket closed); only what must stop a task or the process
  (:data:`broker.rpc.plugin_calls.FATAL`) reaches the shared nursery;
- the reader returns only once the connection's calls have ended, so that whoever follows it
  (:mod:`broker.connections`: the hub, sessions, resume) forgets the connection after the last
  thing a call could have added for it.

Closing follows RFC 6455 section 7.1.1: after our close frame the reader keeps reading (and
dropping) what the peer still sends until its close frame or the close deadline, so that the
peer is not reset with our close frame (and its reason: a resume cursor) still unread.

What to do is decided by the connection's :class:`~broker.transport.ws_protocol.WebSocketProtocol` (messages,
limits, in-flight counts, pings, close codes and deadlines); this shell only reads, writes, spawns
and waits.
"""

from __future__ import annotations

import itertools
import logging
import os
from collections import deque
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Any, Final

import trio

from broker.rpc.dispatch import CallContext, Slots
from broker.rpc.plugin_calls import adapter_name, is_fatal
from broker.transport import after_answer, frames
from broker.transport.limits import Limits
from broker.transport.outbox import Outbox
from broker.transport.ws_protocol import (
    CLOSED,
    CLOSING,
    DRAINING,
    OPEN,
    CloseRequested,
    Message,
    SendFrame,
    WebSocketProtocol,
)
from schemas.errors import InternalError
from schemas.jsonrpc import NULL_ID, decode_call, error_bytes

if TYPE_CHECKING:
    from broker.rpc.dispatch import Dispatcher

log = logging.getLogger(__name__)

_ids = itertools.count(1)


#: Seconds an ended connection waits for its cancelled calls (a plug-in that ignores
#: cancellation keeps only its own connection's reader that long).
_CALLS_GRACE: Final = 5.0


class WebSocketConnection:
    """A dapp connection: send messages without awaiting, close with a code."""

    __slots__ = (
        "_calls",
        "_dispatcher",
        "_nursery",
        "_on_slow_consumer",
        "_queued",
        "_settle",
        "_slots",
        "_stream",
        "_wake",
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
        self._queued: deque[tuple[bytes, trio.CancelScope]] | None = None
        self._calls: set[trio.CancelScope] | None = None
        # What a task of this connection waits on (its calls to end, its reader to end), made
        # when one waits: one slot for every wait, as each waiter checks again what it awaits.
        self._wake: trio.Event | None = None
        self._slots: Slots | None = None
        self._on_slow_consumer = on_slow_consumer
        self._settle = settle
        self.context = context
        context.peer = self
        self.outbox = Outbox(
            stream.socket,
            self,  # its flusher runs behind this connection's boundary
            limit=limits.outbox,
            overflow_frame=frames.SLOW_CONSUMER_CLOSE,
            on_overflow=self._overflowed,
        )

    def __repr__(self) -> str:
        # No part of the key: a repr ends up in log lines (the slow consumer's, for one).
        return f"<WebSocketConnection #{self.id} {self.context.origin}>"

    def _name(self) -> str:
        """The connection in a log line: its number, network and adapter (no part of its key)."""
        network = self.context.network
        return f"connection #{self.id} (network {network.name}, adapter {adapter_name(network.adapter)})"

    # -- the connection's tasks -----------------------------------------------------------------

    def start_soon(self, async_fn: Callable[[], Awaitable[Any]]) -> None:
        """Run ``async_fn`` on this connection's behalf, in the shared nursery, behind the
        connection's boundary: what it raises ends this connection, nobody else's."""
        self._nursery.start_soon(self._guarded, async_fn)

    async def _guarded(self, async_fn: Callable[[], Awaitable[Any]]) -> None:
        try:
            await async_fn()
        except BaseException as exc:
            if is_fatal(exc):
                raise
            log.exception("%s: %s failed", self._name(), getattr(async_fn, "__name__", "a task"))
            self._abort()

    def _abort(self) -> None:
        """End the connection now, after a fault of ours in one of its tasks: the socket is
        closed (which wakes the reader) with no close frame, since what was half-written is not
        known."""
        self.outbox.stop()
        self._stream.socket.close()

    @property
    def slots(self) -> Slots:
        """Per-feature state (subscriptions, resume), created on first use."""
        if self._slots is None:
            self._slots = Slots()
        return self._slots

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

    def frame_sender(self, *, held: bool = False) -> Callable[[bytes], bool]:
        """:meth:`send_frame` without the call between: the outbox's own (``held``: the one that
        holds frames until a delivery step ends, so they leave in one write)."""
        return self.outbox.send_held if held else self.outbox.send

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
        self.start_soon(self._finish_close)

    def _overflowed(self) -> None:
        began = self.protocol.overflowed(trio.current_time())
        if self._on_slow_consumer is not None:
            self._on_slow_consumer(self)
        if began:
            self.start_soon(self._finish_close)

    async def _finish_close(self) -> None:
        protocol = self.protocol
        deadline = protocol.close_deadline
        assert deadline is not None  # set by the close that started this task
        with trio.move_on_at(deadline):
            await self.outbox.drain()
            # RFC 6455 7.1.1: the peer gets until the deadline to answer with its close frame
            # (the reader drops what it sends meanwhile). Closing with its bytes unread would
            # reset the connection, and a reset can destroy our close frame in the peer's
            # buffers before the peer reads it (with its reason: the resume cursor).
            while not protocol.peer_closed and protocol.state is not CLOSED:
                await self._woken()
        # Closing the socket wakes the reader (a cancel scope per connection would cost more).
        self.outbox.stop()
        self._stream.socket.close()

    async def run(self, first_bytes: bytes) -> None:
        """Read frames until the peer leaves or the connection closes; then stop its calls and
        return once they have ended."""
        protocol = self.protocol
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
                if protocol.state is OPEN:
                    await self._handle(data)
                elif protocol.discard_data(data) and protocol.state is CLOSING:
                    # The close handshake is complete once our close frame is out.
                    deadline = protocol.close_deadline
                    assert deadline is not None
                    with trio.move_on_at(deadline):
                        await self.outbox.drain()
                    break
        finally:
            protocol.ended()
            self.outbox.stop()
            # The context names this connection: no cycle is left once it ended (see
            # broker.operator.gc_keeper), and a call still under way is told it has no connection.
            self.context.peer = None
            self._wake_up()
            await self._end_calls()

    async def _end_calls(self) -> None:
        """Cancel the connection's calls (queued ones too) and wait until they have ended."""
        if not self._calls:
            return
        for scope in self._calls:
            scope.cancel()
        # Shielded: the calls end before whoever follows the connection forgets it, also when
        # the broker stops (what a call still adds, such as a subscription, is then dropped with
        # the connection instead of outliving it).
        with trio.CancelScope(shield=True), trio.move_on_after(_CALLS_GRACE):
            while self.protocol.inflight:
                await self._woken()
        if self.protocol.inflight:
            log.warning("%s: a call ignored its cancellation for %g s", self._name(), _CALLS_GRACE)

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
        # The call's cancel scope exists from now: a connection that ends before the call's task
        # starts cancels it too (it then never reaches the dispatcher).
        scope = trio.CancelScope()
        calls = self._calls
        if calls is None:
            calls = self._calls = set()
        calls.add(scope)
        # Calls start in the order they came: trio runs the tasks spawned together in either
        # order, so each takes the oldest waiting request when it starts, whichever task it is
        # (fast calls are then answered in order too, as clients such as viem's watchBlocks
        # expect).
        queued = self._queued
        if queued is None:
            queued = self._queued = deque()
        queued.append((payload, scope))
        if self.protocol.call_arrived():
            self._nursery.start_soon(self._answer_next)
        else:
            await self._answer_next()

    async def _answer_next(self) -> None:
        queued = self._queued
        assert queued
        # The oldest request waiting, not necessarily the one this task was spawned for (see
        # _dispatch). No await from here to the dispatcher's call in _answer: requests then
        # start in the order they are taken, which is the order they came.
        payload, scope = queued.popleft()
        if not queued:
            self._queued = None  # an idle connection keeps no queue
        await self._answer(payload, scope)

    async def _answer(self, payload: bytes, scope: trio.CancelScope) -> None:
        reply = None
        following: after_answer.Following = []
        try:
            with after_answer.collecting() as following, scope:
                if not scope.cancel_called:
                    reply = await self._dispatcher.handle(payload, self.context)
            if self._settle is not None and not scope.cancel_called:
                await self._settle(self)  # what the call changed is kept before it is answered
        except BaseException as exc:
            # The boundary of the call: the dispatcher answers every fault it knows of, so this
            # is one of ours (or a plug-in's that got past it): this call's error, no one else's.
            if is_fatal(exc):
                raise
            log.exception("%s: a call failed", self._name())
            reply = self._internal_error(payload)
        finally:
            calls = self._calls
            assert calls is not None
            calls.discard(scope)
            if not calls:
                self._calls = None  # an idle connection keeps no set (216 bytes)
            idle = self.protocol.call_answered()
        if reply is not None:
            self.send_message(reply)
        for (
            delay,
            send,
            frame,
        ) in following:  # frames due after the answer (broker.transport.after_answer)
            if delay > 0:
                self.start_soon(partial(_send_later, delay, send, frame))
            else:
                send(frame)
        if idle:
            self._wake_up()

    def _internal_error(self, payload: bytes) -> bytes | None:
        """The -32603 answer to the call in ``payload`` (None for a notification), naming the
        network's adapter."""
        call = decode_call(payload)
        if call is not None and call.id is None:
            return None
        raw_id = NULL_ID if call is None or call.id is None else call.id
        network = self.context.network
        error = InternalError(f"internal error (adapter {adapter_name(network.adapter)!r})")
        return error_bytes(raw_id, error)

    async def finish_calls(self) -> None:
        """Stop reading requests and return once the calls under way have answered."""
        if self.protocol.state is not OPEN:
            return  # draining or ending already
        if self.protocol.drain():
            while self.protocol.inflight:
                await self._woken()

    async def _woken(self) -> None:
        """Wait until a call ends with none left, or the reader ends."""
        if self._wake is None or self._wake.is_set():
            self._wake = trio.Event()  # whoever waited on the one set has been woken already
        await self._wake.wait()

    def _wake_up(self) -> None:
        if self._wake is not None:
            self._wake.set()


async def _send_later(delay: float, send: Callable[[bytes], bool], frame: bytes) -> None:
    """A frame that follows a call's answer after a pause (cancelled with the connection)."""
    await trio.sleep(delay)
    send(frame)
