"""A dapp's WebSocket, as a state machine with no I/O.

The machine decides; the trio shell in :mod:`broker.transport.websocket` (the socket, the outbox, the tasks)
does what it says. Bytes from the client go in (:meth:`WebSocketProtocol.receive_data`) and come
out as events: a whole message to dispatch (fragments joined, at most ``max_message`` bytes), a
frame to send back (the pong to a ping), a pong from the client, or the end of the connection with
the close code to answer with (the client's own, 1009 for a message over the limit, 1002 for a
protocol violation). The machine also counts the calls under way (past ``max_inflight`` the reader
answers the next one itself, which pushes back on the client), says when to ping and when a ping
went unanswered, and keeps the deadlines the shell waits for: the pong's, and the close grace's.

Its states, and what each allows:

========== ===================================================================================
OPEN       everything: bytes are read, calls counted in, pings sent
DRAINING   a graceful stop: bytes are read and discarded (but the peer's close frame), the
           calls under way finish
CLOSING    our close frame (or the slow-consumer one) is queued; bytes are parsed only for the
           peer's close frame (:meth:`~WebSocketProtocol.discard_data`), after which (or by
           :attr:`~WebSocketProtocol.close_deadline`) the shell closes the socket
CLOSED     the socket is gone
========== ===================================================================================

Counting a call in or draining outside OPEN (:data:`_ALLOWED`), or counting out a call that never
arrived, is a :class:`LocalProtocolError` that changes nothing; a close, an overflow or a heartbeat
on a connection already ending does nothing and says so (None, False); bytes outside OPEN are
discarded. Messages and fan-out frames are built by :mod:`broker.transport.frames` (once, for many
connections); the machine hands out only its control frames (pong, ping, close).
"""

from __future__ import annotations

import enum
from typing import Final

import wsproto
import wsproto.events as wse
from wsproto.connection import Connection, ConnectionType
from wsproto.utilities import ProtocolError as WsProtocolError

from broker.transport import frames

NO_STATUS: Final = 1005  # "no status code present": answered as a normal close
#: Seconds between our close frame and the socket's close: the backlog's last chance to leave.
CLOSE_GRACE: Final = 2.0


class State(enum.Enum):
    """Where a connection is in its life (see the module's table)."""

    OPEN = "open"
    DRAINING = "draining"
    CLOSING = "closing"
    CLOSED = "closed"


OPEN: Final = State.OPEN
DRAINING: Final = State.DRAINING
CLOSING: Final = State.CLOSING
CLOSED: Final = State.CLOSED

#: The states from which each transition is allowed (h11 keeps its transitions in tables too).
_ALLOWED: Final[dict[str, frozenset[State]]] = {
    "call_arrived": frozenset({OPEN}),
    "drain": frozenset({OPEN}),
}


class LocalProtocolError(Exception):
    """The shell asked for something its connection's state does not allow (a bug of ours)."""


class RemoteProtocolError(Exception):
    """The client broke the rules: its upgrade request is not a valid WebSocket handshake (the
    text says what is wrong; it is answered with 400)."""


class Message:
    """A whole text or binary message."""

    __slots__ = ("payload",)

    def __init__(self, payload: bytes) -> None:
        self.payload = payload


class SendFrame:
    """A frame the protocol answers with by itself (a pong, a ping)."""

    __slots__ = ("frame",)

    def __init__(self, frame: bytes) -> None:
        self.frame = frame


class PongReceived:
    """The client answered a ping."""

    __slots__ = ()


class CloseRequested:
    """The connection ends: answer with a close frame carrying ``code`` and ``reason``."""

    __slots__ = ("code", "reason")

    def __init__(self, code: int, reason: str = "") -> None:
        self.code = code
        self.reason = reason


def accept_handshake(headers: list[tuple[bytes, bytes]], target: bytes) -> bytes:
    """The ``101 Switching Protocols`` answer to an upgrade request.

    Raises:
        RemoteProtocolError: the request is not a valid WebSocket handshake.
    """
    handshake = wsproto.WSConnection(ConnectionType.SERVER)
    try:
        handshake.initiate_upgrade_connection(headers, target)
        for _event in handshake.events():
            pass
    except WsProtocolError as exc:
        raise RemoteProtocolError(str(exc)) from None
    return handshake.send(wse.AcceptConnection())


Event = Message | SendFrame | PongReceived | CloseRequested
PONG_RECEIVED: Final = PongReceived()
#: What :meth:`WebSocketProtocol.heartbeat` answers, built once for every connection.
SEND_PING: Final = SendFrame(frames.PING)
PING_TIMED_OUT: Final = CloseRequested(frames.CLOSE_PING_TIMEOUT, "ping timeout")


class FrameParser(Connection):
    """wsproto's frame parser of a server connection, without the event queue it keeps for a
    connection lost without a close frame (``receive_data(None)``, which this machine never
    calls): an empty deque is 760 bytes, the largest part of an idle connection's parser."""

    def __init__(self) -> None:
        super().__init__(ConnectionType.SERVER)
        self._events = ()  # type: ignore[assignment]  # events() finds it empty; nothing appends

    def idle(self) -> bool:
        """Whether nothing is parsed part-way: no bytes buffered, no frame begun, no fragmented
        message under way (a new parser would then read what comes next the same)."""
        frames = self._proto._frame_decoder
        return (
            not frames.buffer
            and frames.header is None
            and self._proto._message_decoder.opcode is None
        )


#: Parsers with nothing parsed part-way, shared by the connections of this process (one thread):
#: a connection holds one only while a frame or a fragmented message of its own is under way, or
#: from the time its bytes come until they are parsed, all within one :meth:`receive_data`.
_idle_parsers: list[FrameParser] = []
_IDLE_PARSERS: Final = 64


class WebSocketProtocol:
    """One server WebSocket's protocol: frames parsed, messages assembled and bounded, calls
    counted, pings and closes timed by the ``now`` the shell passes in."""

    __slots__ = (
        "_fragment_size",
        "_fragments",
        "_parser",
        "_peer_closed",
        "close_code",
        "close_deadline",
        "close_grace",
        "inflight",
        "max_inflight",
        "max_message",
        "pong_deadline",
        "state",
    )

    def __init__(
        self, max_message: int, *, max_inflight: int = 64, close_grace: float = CLOSE_GRACE
    ) -> None:
        """``max_inflight``: calls answered side by side (past it the reader answers the next
        one itself); ``close_grace``: seconds from our close frame to the socket's close."""
        # Taken when bytes come, given back once they are parsed whole (see _idle_parsers): a
        # parser is about 1 KiB, and most connections are idle most of the time.
        self._parser: FrameParser | None = None
        # Created for the first message: most connections are idle most of the time.
        self._fragments: list[bytes] | None = None
        self._fragment_size = 0
        self._peer_closed = False
        self.max_message = max_message
        self.max_inflight = max_inflight
        self.close_grace = close_grace
        self.state: State = OPEN
        self.inflight = 0
        #: The code of the close frame this side sent (None: none yet).
        self.close_code: int | None = None
        #: When the socket is closed whatever is still unsent (set once closing).
        self.close_deadline: float | None = None
        #: When the pong to the last ping is due (None: no ping waits for its pong).
        self.pong_deadline: float | None = None

    @property
    def closed(self) -> bool:
        """Whether nothing more is read: the client closed, broke the rules, or we are ending."""
        return self._peer_closed or self.state is not OPEN

    # -- bytes in -----------------------------------------------------------------------------

    def receive_data(self, data: bytes) -> list[Event]:
        """What ``data`` (the next bytes from the client) amounts to, in order (nothing once
        :attr:`closed`: what arrives while draining or after a close is discarded)."""
        if self._peer_closed or self.state is not OPEN:
            return []
        parser = self._parser
        if parser is None:
            parser = self._parser = _idle_parsers.pop() if _idle_parsers else FrameParser()
        parser.receive_data(data)
        out: list[Event] = []
        for event in parser.events():
            if isinstance(event, wse.TextMessage | wse.BytesMessage):
                assembled = self._assemble(event)
                if assembled is not None:
                    out.append(assembled)
            elif isinstance(event, wse.Ping):
                out.append(SendFrame(frames.pong_frame(bytes(event.payload))))
            elif isinstance(event, wse.Pong):
                self.pong_deadline = None
                out.append(PONG_RECEIVED)
            elif isinstance(event, wse.CloseConnection):
                self._peer_closed = True
                code = frames.CLOSE_NORMAL if event.code == NO_STATUS else event.code
                out.append(CloseRequested(code, event.reason or ""))
            if self._peer_closed:
                break
        if not self._peer_closed and parser.idle():
            # Parsed whole (nothing begun): the next bytes may be parsed by any idle parser.
            self._parser = None
            if len(_idle_parsers) < _IDLE_PARSERS:
                _idle_parsers.append(parser)
        return out

    def _assemble(
        self, event: wse.TextMessage | wse.BytesMessage
    ) -> Message | CloseRequested | None:
        chunk = event.data.encode() if isinstance(event, wse.TextMessage) else bytes(event.data)
        fragments = self._fragments
        if fragments is None:
            fragments = self._fragments = []
        fragments.append(chunk)
        self._fragment_size += len(chunk)
        if self._fragment_size > self.max_message:
            fragments.clear()
            self._peer_closed = True
            reason = f"message larger than {self.max_message} bytes"
            return CloseRequested(frames.CLOSE_TOO_BIG, reason)
        if not event.message_finished:
            return None
        payload = fragments[0] if len(fragments) == 1 else b"".join(fragments)
        fragments.clear()
        self._fragment_size = 0
        return Message(payload)

    @property
    def peer_closed(self) -> bool:
        """Whether the peer's close frame has come (or the peer broke the rules)."""
        return self._peer_closed

    def discard_data(self, data: bytes) -> bool:
        """Outside OPEN (draining, or after our close frame): parse what the peer still sends
        only to find its close frame (RFC 6455 7.1.1), dropping the rest. True once it has come
        (or the peer broke the rules: nothing more is worth reading)."""
        if self._peer_closed:
            return True
        parser = self._parser
        if parser is None:
            parser = self._parser = FrameParser()
        parser.receive_data(data)
        for event in parser.events():
            if isinstance(event, wse.CloseConnection):
                self._peer_closed = True
                break
        return self._peer_closed

    # -- calls --------------------------------------------------------------------------------

    def call_arrived(self) -> bool:
        """Count in a call from a :class:`Message`: True when it may run beside the others, False
        when ``max_inflight`` are under way (the reader answers it itself, reading nothing
        meanwhile). Only while OPEN."""
        self._check("call_arrived")
        self.inflight += 1
        return self.inflight <= self.max_inflight

    def call_answered(self) -> bool:
        """Count out a call that ended (answered or cancelled): True when none is left."""
        if self.inflight <= 0:
            raise LocalProtocolError("no call is under way")
        self.inflight -= 1
        return not self.inflight

    def drain(self) -> bool:
        """Stop reading requests (a graceful stop): True when calls are still under way. Only
        while OPEN."""
        self._check("drain")
        self.state = DRAINING
        return self.inflight > 0

    # -- pings --------------------------------------------------------------------------------

    def heartbeat(self, now: float, pong_due: float) -> SendFrame | CloseRequested | None:
        """The heartbeat's tick at ``now``: a ping to send (its pong due by ``pong_due``, the
        next tick), the close for a ping unanswered by its deadline, or nothing (the connection
        is ending)."""
        if self.state is CLOSING or self.state is CLOSED:
            return None
        deadline = self.pong_deadline
        if deadline is not None and now >= deadline:
            return PING_TIMED_OUT
        if deadline is None:
            self.pong_deadline = pong_due
        return SEND_PING

    # -- ending -------------------------------------------------------------------------------

    def close(self, code: int, reason: str, now: float) -> bytes | None:
        """Begin closing with ``code``: the close frame, to be sent last (None: closing
        already). The socket is closed by :attr:`close_deadline`."""
        if self.state is CLOSING or self.state is CLOSED:
            return None
        self._closing(code, now)
        return frames.close_frame(code, reason)

    def overflowed(self, now: float) -> bool:
        """The outbox cut off a slow consumer (it sends :data:`frames.SLOW_CONSUMER_CLOSE`):
        the close code is 4008 from now on. True when this began the close."""
        began = self.state is OPEN or self.state is DRAINING
        if began:
            self._closing(frames.CLOSE_SLOW_CONSUMER, now)
        elif self.state is CLOSING:
            self.close_code = frames.CLOSE_SLOW_CONSUMER  # the overflow frame replaced ours
        return began

    def ended(self) -> None:
        """The socket is gone (the peer left, or the shell closed it)."""
        self.state = CLOSED

    def _closing(self, code: int, now: float) -> None:
        self.state = CLOSING
        self.close_code = code
        self.close_deadline = now + self.close_grace
        self.pong_deadline = None

    def _check(self, transition: str) -> None:
        if self.state not in _ALLOWED[transition]:
            raise LocalProtocolError(f"{transition} while {self.state}")
