"""Server-side WebSocket frames built as bytes (RFC 6455 §5.2; a server never masks).

Inbound frames are parsed by wsproto; outbound ones are built here, once per payload, so that a
notification for 10,000 subscribers costs one header computation each and no library round trip.
"""

from __future__ import annotations

import struct
from typing import Final

OP_TEXT: Final = 0x1
OP_CLOSE: Final = 0x8
OP_PING: Final = 0x9
OP_PONG: Final = 0xA

#: Close codes this server sends (README "Close codes").
CLOSE_NORMAL: Final = 1000
CLOSE_GOING_AWAY: Final = 1001
CLOSE_PROTOCOL_ERROR: Final = 1002
CLOSE_POLICY: Final = 1008
CLOSE_TOO_BIG: Final = 1009
CLOSE_INTERNAL: Final = 1011
CLOSE_SERVICE_RESTART: Final = 1012
CLOSE_SLOW_CONSUMER: Final = 4008
CLOSE_PING_TIMEOUT: Final = 4009


def frame_header(opcode: int, length: int) -> bytes:
    """The header of a final, unmasked frame of ``length`` payload bytes."""
    first = 0x80 | opcode
    if length < 126:
        return bytes((first, length))
    if length < 65536:
        return struct.pack("!BBH", first, 126, length)
    return struct.pack("!BBQ", first, 127, length)


def text_frame(payload: bytes) -> bytes:
    """A complete text frame carrying ``payload`` (already UTF-8 JSON)."""
    return frame_header(OP_TEXT, len(payload)) + payload


def close_frame(code: int, reason: str = "") -> bytes:
    """A close frame; the reason is cut to fit the 125-byte control-frame limit."""
    payload = struct.pack("!H", code) + reason.encode()[:123]
    return frame_header(OP_CLOSE, len(payload)) + payload


def ping_frame(payload: bytes = b"") -> bytes:
    return frame_header(OP_PING, len(payload)) + payload


def pong_frame(payload: bytes = b"") -> bytes:
    return frame_header(OP_PONG, len(payload)) + payload


PING: Final = ping_frame()
SLOW_CONSUMER_CLOSE: Final = close_frame(CLOSE_SLOW_CONSUMER, "slow consumer")
