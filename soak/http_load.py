"""HTTP JSON-RPC at a fixed rate over keep-alive connections (raw trio streams, no client library):
the soak's node queries and the fuzzer's bodies go through :func:`post`."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

import trio

from bench.replay import mix


class HttpConnection:
    """One keep-alive connection to a web process."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.stream: trio.SocketStream | None = None
        self._buffer = b""

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        """The status and body of one POST (reconnects once if the connection was closed)."""
        for attempt in range(2):
            if self.stream is None:
                self.stream = await trio.open_tcp_stream("127.0.0.1", self.port)
                self._buffer = b""
            try:
                await self.stream.send_all(
                    b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\n\r\n%s" % (path.encode(), len(body), body)
                )
                return await self._response()
            except (OSError, trio.BrokenResourceError, ConnectionError):
                await self.aclose()
                if attempt:
                    raise
        raise AssertionError("unreachable")

    async def _fill(self, need: int) -> None:
        assert self.stream is not None
        while len(self._buffer) < need:
            chunk = await self.stream.receive_some(65536)
            if not chunk:
                raise ConnectionError("closed by the server")
            self._buffer += chunk

    async def _response(self) -> tuple[int, bytes]:
        assert self.stream is not None
        while b"\r\n\r\n" not in self._buffer:
            await self._fill(len(self._buffer) + 1)
        head, _, self._buffer = self._buffer.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = int(lines[0].split()[1])
        length = 0
        close = False
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
            elif name.strip().lower() == b"connection" and value.strip().lower() == b"close":
                close = True
        await self._fill(length)
        body, self._buffer = self._buffer[:length], self._buffer[length:]
        if close:
            await self.aclose()
        return status, body

    async def aclose(self) -> None:
        if self.stream is not None:
            stream, self.stream = self.stream, None
            await stream.aclose()


@dataclass
class QueryLoad:
    """``rate`` mixed node queries a second (:func:`bench.replay.mix`) spread over web processes."""

    ports: list[int]
    rate: int
    head: int
    hashes: list[str]
    receipts: list[str]
    sent: int = 0
    answered: int = 0
    errors: list[str] = field(default_factory=list)

    async def run(self, connections: int = 8) -> None:
        async with trio.open_nursery() as nursery:
            for index in range(connections):
                nursery.start_soon(self._one, index, connections)

    async def _one(self, index: int, connections: int) -> None:
        rng = random.Random(index)
        conn = HttpConnection(self.ports[index % len(self.ports)])
        interval = connections / self.rate
        deadline = trio.current_time()
        try:
            while True:
                deadline += interval
                method, params = mix(rng, self.head, self.hashes, self.receipts, 1)[0]
                body = json.dumps(
                    {"jsonrpc": "2.0", "id": self.sent, "method": method, "params": params}
                ).encode()
                self.sent += 1
                try:
                    status, reply = await conn.post("/v3/dev", body)
                    answer: Any = json.loads(reply)
                    if status == 200 and ("result" in answer or "error" in answer):
                        self.answered += 1
                    if "error" in answer or status != 200:
                        self.errors.append(f"{method}: {status} {reply[:120]!r}")
                except (OSError, ConnectionError, ValueError) as exc:
                    self.errors.append(f"{method}: {exc!r}")
                await trio.sleep_until(max(deadline, trio.current_time()))
        finally:
            with trio.CancelScope(shield=True):
                await conn.aclose()
