"""A minimal WebSocket client on a raw trio socket, for tests that need many cheap connections or a
peer that stops reading (trio-websocket always reads). Client frames are masked as RFC 6455 says."""

from __future__ import annotations

import base64
import json
import os
import socket
import struct
from typing import Any

import trio


class RawWebSocket:
    def __init__(self, sock: trio.socket.SocketType) -> None:
        self.sock = sock
        self._buffer = bytearray()
        self._read = 0  # bytes of the buffer already returned
        self.close_code: int | None = None

    @classmethod
    async def connect(
        cls, port: int, path: str, *, rcvbuf: int | None = None, origin: str | None = None
    ) -> RawWebSocket:
        sock = trio.socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        try:
            return await cls._handshake(sock, port, path, origin)
        except BaseException:
            sock.close()
            raise

    @classmethod
    async def _handshake(
        cls, sock: trio.socket.SocketType, port: int, path: str, origin: str | None
    ) -> RawWebSocket:
        await sock.connect(("127.0.0.1", port))
        key = base64.b64encode(os.urandom(16)).decode()
        origin_line = f"Origin: {origin}\r\n" if origin else ""
        request = (
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"{origin_line}\r\n"
        )
        await sock.send(request.encode())
        conn = cls(sock)
        while b"\r\n\r\n" not in conn._buffer:
            data = await sock.recv(65536)
            if not data:
                raise ConnectionError("closed during handshake")
            conn._buffer += data
        head, _, rest = bytes(conn._buffer).partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 101"):
            raise ConnectionError(head.decode(errors="replace"))
        conn._buffer = bytearray(rest)
        return conn

    @staticmethod
    def masked(payload: bytes, opcode: int = 0x1) -> bytes:
        """A client frame (masked, as clients must) carrying ``payload``."""
        mask = os.urandom(4)
        length = len(payload)
        if length < 126:
            header = bytes((0x80 | opcode, 0x80 | length))
        elif length < 65536:
            header = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, length)
        else:
            header = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, length)
        return header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))

    async def _send_all(self, data: bytes) -> None:
        while data:
            sent = await self.sock.send(data)
            data = data[sent:]

    async def send_text(self, text: str | bytes, *, opcode: int = 0x1) -> None:
        payload = text.encode() if isinstance(text, str) else text
        await self._send_all(self.masked(payload, opcode))

    async def send_many(self, texts: list[str]) -> None:
        """Several text frames in one write (so that the server reads them together)."""
        await self._send_all(b"".join(self.masked(text.encode()) for text in texts))

    async def call(self, message: dict[str, Any]) -> None:
        await self.send_text(json.dumps(message))

    async def _fill(self, need: int) -> bool:
        """Buffer at least ``need`` unread bytes (False: the stream ended first)."""
        while len(self._buffer) - self._read < need:
            if self._read > 65536:  # drop what was read, now and then (not at every frame)
                del self._buffer[: self._read]
                self._read = 0
            data = await self.sock.recv(65536)
            if not data:
                return False
            self._buffer += data
        return True

    async def frame(self) -> tuple[int, bytes] | None:
        """The next frame (opcode, payload); None at end of stream."""
        if not await self._fill(2):
            return None
        at = self._read
        opcode, length = self._buffer[at] & 0x0F, self._buffer[at + 1] & 0x7F
        offset = 2
        if length == 126:
            if not await self._fill(4):
                return None
            (length,) = struct.unpack_from("!H", self._buffer, self._read + 2)
            offset = 4
        elif length == 127:
            if not await self._fill(10):
                return None
            (length,) = struct.unpack_from("!Q", self._buffer, self._read + 2)
            offset = 10
        if not await self._fill(offset + length):
            return None
        start = self._read + offset
        payload = bytes(self._buffer[start : start + length])
        self._read = start + length
        if opcode == 0x8:
            self.close_code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 1005
        return opcode, payload

    async def message(self) -> Any:
        """The next text message decoded; None when the server closed."""
        while True:
            frame = await self.frame()
            if frame is None or frame[0] == 0x8:
                return None
            if frame[0] == 0x1:
                return json.loads(frame[1])

    def close(self) -> None:
        self.sock.close()
