"""The WebSocket connections of this process: each opened on an accepted upgrade (its resume
replayed first when it asked for one), pinged, drained at a graceful stop, and forgotten when it
ends, with the hooks of whoever follows them (sessions, the console, access control)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from itertools import islice
from typing import Final
from urllib.parse import unquote

import trio

from broker.events.resume import ResumeKeeper
from broker.events.resume._keeper import resumed_message
from broker.metrics import Metrics
from broker.rpc.dispatch import CallContext, Dispatcher
from broker.sessions.client_profiles import profile_named
from broker.transport import frames
from broker.transport.http import HttpRequest, HttpResponse, Upgrade
from broker.transport.limits import Limits
from broker.transport.websocket import WebSocketConnection
from broker.transport.ws_protocol import RemoteProtocolError, accept_handshake
from schemas.errors import RpcError

log = logging.getLogger(__name__)

_RELEASE_TIMEOUT: Final = 2.0
#: The heartbeat pings a share of the connections every this many seconds, each connection once
#: per ``ping_interval``: all at once, 10,000 connections' pings and then their pongs (a task
#: woken for each) took about 0.7 s of CPU in one go, the longest wait in a fan-out at 10,000
#: subscribers (docs/benchmarks, issue 32).
HEARTBEAT_TICK: Final = 0.1

ConnectionHook = Callable[[WebSocketConnection], None]


def _query_value(target: bytes, name: bytes) -> str | None:
    """The value of query parameter ``name`` in a request target (None: absent)."""
    _, _, query = target.partition(b"?")
    for pair in query.split(b"&"):
        key, _, value = pair.partition(b"=")
        if key == name:
            return unquote(value.decode("latin-1"))
    return None


class Connections:
    """The open WebSocket connections, and what happens when one opens or ends."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        limits: Limits,
        metrics: Metrics,
        *,
        resume: ResumeKeeper | None,
        on_connect: Sequence[ConnectionHook] = (),
        on_disconnect: Sequence[ConnectionHook] = (),
    ) -> None:
        """``on_connect`` hooks are called, in order, with every new connection (before its
        first message); ``on_disconnect`` hooks with every connection that ended."""
        self._dispatcher = dispatcher
        self._limits = limits
        self._metrics = metrics
        self._resume = resume
        self._open: set[WebSocketConnection] = set()
        self._connect_hooks = tuple(on_connect)
        self._disconnect_hooks = tuple(on_disconnect)
        self._handlers: trio.Nursery | None = None
        # Bound once: every connection holds these same two objects, not two of its own.
        self._on_slow_consumer: ConnectionHook = self._slow_consumer
        self._settle = resume.settle if resume is not None else None

    def __len__(self) -> int:
        return len(self._open)

    def __iter__(self) -> Iterator[WebSocketConnection]:
        """A snapshot of the open connections."""
        return iter(list(self._open))

    def run_in(self, handlers: trio.Nursery) -> None:
        """Run the connections' calls and flushers in ``handlers``, the server's nursery of
        connection handlers: a connection costs one task (its reader), not a nursery of its own."""
        self._handlers = handlers

    # -- opening ----------------------------------------------------------------------------------

    def upgrade(self, request: HttpRequest, context: CallContext) -> HttpResponse | Upgrade:
        """Accept a WebSocket upgrade (``?resume=<cursor>`` resumes, ``?client=<profile>`` picks
        the client profile), or refuse it with 400."""
        resume_from = _query_value(request.target, b"resume")
        client = _query_value(request.target, b"client")
        if client is not None:
            try:
                context.client = profile_named(client, "?client")
            except ValueError as exc:
                return HttpResponse(400, str(exc).encode())
        try:
            accept = accept_handshake(request.headers, request.target)
        except (RemoteProtocolError, RpcError) as exc:
            return HttpResponse(400, str(exc).encode())
        return self._session(accept, context, resume_from)

    def _session(self, accept: bytes, context: CallContext, resume_from: str | None) -> Upgrade:
        # A partial of a method, not a closure: the caller drops it once the connection's
        # coroutine is made, which keeps none of it (a closure and its cells lived as long as
        # the connection, with the handshake's answer).
        return partial(self._run, accept, context, resume_from)

    async def _run(
        self,
        accept: bytes,
        context: CallContext,
        resume_from: str | None,
        stream: trio.SocketStream,
        trailing: bytes,
    ) -> None:
        assert self._handlers is not None, "run_in() comes before the first connection"
        await stream.send_all(accept)
        del accept  # an idle connection's frame keeps no handshake answer
        conn = WebSocketConnection(
            stream,
            self._handlers,
            self._dispatcher,
            context,
            self._limits,
            on_slow_consumer=self._on_slow_consumer,
            settle=self._settle,
        )
        self._open.add(conn)
        self._metrics.connections.inc()
        try:
            if resume_from is not None:
                if self._resume is not None:
                    await self._resume.resume(conn, resume_from)
                else:
                    conn.send_message(resumed_message(0, False))
            # No await since the resume's last read: the hooks see every later change.
            for hook in self._connect_hooks:
                hook(conn)
            await conn.run(trailing)
        finally:
            try:
                if self._resume is not None:  # before _forget ends its subscriptions
                    # Not shielded: a cancelled broker skips it (the record written at the
                    # last subscription change stands, for longer).
                    with trio.move_on_after(_RELEASE_TIMEOUT):
                        await self._resume.release(conn)
            finally:
                self._forget(conn)

    # -- while open -------------------------------------------------------------------------------

    async def serve_heartbeat(self) -> None:
        """Ping every connection each ``ping_interval``, a share every :data:`HEARTBEAT_TICK`;
        close those that did not answer the last ping (4009 ping timeout), until cancelled."""
        interval = self._limits.ping_interval
        ticks = max(1, int(interval / HEARTBEAT_TICK))
        # The first pings one interval after start-up, as when every connection was pinged at once.
        began = trio.current_time() + interval
        while True:
            for tick in range(ticks):
                # The share of this tick: the connections at its place in the set's order now (a
                # connection opened or ended meanwhile may move one share, a ping sooner or later).
                at = began + interval * tick / ticks
                await trio.sleep_until(at)
                now = trio.current_time()
                count = len(self._open)
                share = list(islice(self._open, count * tick // ticks, count * (tick + 1) // ticks))
                for conn in share:
                    # Its pong is due by its next ping's time: that tick finds the deadline past.
                    conn.heartbeat(now, at + interval)
            began += interval

    def _slow_consumer(self, conn: WebSocketConnection) -> None:
        self._metrics.slow_consumers.inc()
        log.warning("closing %r: slow consumer (over %d bytes unsent)", conn, conn.outbox.limit)

    # -- ending -----------------------------------------------------------------------------------

    async def drain(self, conn: WebSocketConnection) -> None:
        """Let ``conn`` finish its calls, then close it with 1012 and its last cursor (where a
        client resumes on another process with no gap)."""
        await conn.finish_calls()
        cursor = await self._resume.closing_cursor(conn) if self._resume is not None else None
        conn.close(frames.CLOSE_SERVICE_RESTART, cursor or "server restarting")

    def _forget(self, conn: WebSocketConnection) -> None:
        self._open.discard(conn)
        self._metrics.connections.dec()
        for hook in self._disconnect_hooks:
            try:
                hook(conn)
            except Exception:
                log.exception("disconnect hook failed for %r", conn)
