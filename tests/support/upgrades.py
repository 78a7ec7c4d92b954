"""A WebSocket handshake on a raw socket that reads the server's answer whatever it is, for tests of
refused upgrades (trio-websocket leaves the socket of a refused handshake to the garbage collector)."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import trio


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


async def try_upgrade(port: int, path: str, headers: Mapping[str, str] | None = None) -> Answer:
    """Ask for a WebSocket at ``path``; the status, headers and body of the answer (the socket is
    closed at once, also after a 101)."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        extra = "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"{extra}\r\n"
        )
        await stream.send_all(request.encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = await stream.receive_some(65536)
            if not chunk:
                raise ConnectionError(f"closed during the handshake: {data!r}")
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        fields = dict(line.split(":", 1) for line in lines[1:])
        answer_headers = {name.strip().lower(): value.strip() for name, value in fields.items()}
        status = int(lines[0].split()[1])
        length = int(answer_headers.get("content-length", "0")) if status != 101 else 0
        while len(body) < length:
            chunk = await stream.receive_some(65536)
            if not chunk:
                break
            body += chunk
        return Answer(status, answer_headers, body)
