"""A dapp's WebSocket after the handshake, as a state machine with no I/O.

Bytes from the client go in (:meth:`WebSocketProtocol.receive_data`); what they amount to comes
out as events: a whole message (fragments joined, at most ``max_message`` bytes), a frame to send
back (the pong to a ping), a pong from the client, or the end of the connection with the close
code to answer with (the client's own, 1009 for a message over the limit, 1002 for a protocol
violation). Once a close is reported, everything after it is ignored. The trio shell in
:mod:`broker.websocket` owns the socket, the outbox and the calls.

Frames sent to the client are built by :mod:`broker.frames` (once, for many connections), not
here: this machine parses only the inbound side.
"""

from __future__ import annotations

from typing import Final

import wsproto
import wsproto.events as wse
from wsproto.connection import Connection as FrameParser
from wsproto.connection import ConnectionType

from broker import frames

NO_STATUS: Final = 1005  # "no status code present": answered as a normal close


class Message:
    """A whole text or binary message."""

    __slots__ = ("payload",)

    def __init__(self, payload: bytes) -> None:
        self.payload = payload


class SendFrame:
    """A frame the protocol answers with by itself (a pong)."""

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
    """The ``101 Switching Protocols`` answer to an upgrade request (raises
    ``wsproto.utilities.ProtocolError`` when it is not a valid WebSocket handshake)."""
    handshake = wsproto.WSConnection(ConnectionType.SERVER)
    handshake.initiate_upgrade_connection(headers, target)
    for _event in handshake.events():
        pass
    return handshake.send(wse.AcceptConnection())


Event = Message | SendFrame | PongReceived | CloseRequested
PONG_RECEIVED: Final = PongReceived()


class WebSocketProtocol:
    """The inbound side of one server WebSocket: frames parsed, messages assembled and bounded."""

    __slots__ = ("_fragment_size", "_fragments", "_parser", "closed", "max_message")

    def __init__(self, max_message: int) -> None:
        self._parser = FrameParser(ConnectionType.SERVER)
        # Created for the first message: most connections are idle most of the time.
        self._fragments: list[bytes] | None = None
        self._fragment_size = 0
        self.max_message = max_message
        self.closed = False

    def receive_data(self, data: bytes) -> list[Event]:
        """What ``data`` (the next bytes from the client) amounts to, in order."""
        if self.closed:
            return []
        self._parser.receive_data(data)
        out: list[Event] = []
        for event in self._parser.events():
            if isinstance(event, wse.TextMessage | wse.BytesMessage):
                assembled = self._assemble(event)
                if assembled is not None:
                    out.append(assembled)
            elif isinstance(event, wse.Ping):
                out.append(SendFrame(frames.pong_frame(bytes(event.payload))))
            elif isinstance(event, wse.Pong):
                out.append(PONG_RECEIVED)
            elif isinstance(event, wse.CloseConnection):
                self.closed = True
                code = frames.CLOSE_NORMAL if event.code == NO_STATUS else event.code
                out.append(CloseRequested(code, event.reason or ""))
            if self.closed:
                break
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
            self.closed = True
            reason = f"message larger than {self.max_message} bytes"
            return CloseRequested(frames.CLOSE_TOO_BIG, reason)
        if not event.message_finished:
            return None
        payload = fragments[0] if len(fragments) == 1 else b"".join(fragments)
        fragments.clear()
        self._fragment_size = 0
        return Message(payload)
