"""A scripted JSON-RPC node over real HTTP (h11 on a trio socket), for failure cases a real node
cannot be made to produce on demand: HTTP 500/429, hangs, refused connections, huge replies."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

import h11
import trio


@dataclass
class Status:
    """Answer with this HTTP status and body."""

    code: int
    body: bytes = b""


@dataclass
class Hang:
    """Never answer."""


@dataclass
class Stream:
    """Send this body piece by piece (chunked), as generated."""

    chunks: Callable[[], AsyncGenerator[bytes, None]]


@dataclass
class Error:
    """A JSON-RPC error reply."""

    code: int
    message: str
    data: Any = None


Answer = Any  # a JSON result, or Status / Hang / Stream / Error / raw bytes (the whole body)


@dataclass
class FakeNode:
    """Answers ``eth_chainId`` and ``eth_blockNumber`` by itself; ``script[method]`` the rest.

    A script entry is an answer, or a callable taking the params and returning one.
    """

    chain_id: int = 1
    block_number: int = 0x10
    script: dict[str, Any] = field(default_factory=dict)
    received: list[tuple[str, bytes]] = field(default_factory=list)
    bytes_sent: int = 0
    port: int = 0
    _scope: trio.CancelScope | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/rpc"

    def methods(self) -> list[str]:
        return [method for method, _body in self.received]

    async def serve(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        """Listen on 127.0.0.1 (the same port again after :meth:`stop`) until stopped."""
        with trio.CancelScope() as self._scope:
            listeners = await trio.open_tcp_listeners(self.port, host="127.0.0.1")
            self.port = listeners[0].socket.getsockname()[1]
            async with trio.open_nursery() as nursery:
                await nursery.start(trio.serve_listeners, self._handle, listeners)
                task_status.started(self.port)

    def stop(self) -> None:
        """Close the listener and every connection: new connections are refused."""
        if self._scope is not None:
            self._scope.cancel()

    def answer(self, method: str, params: Any) -> Answer:
        if method in self.script:
            entry = self.script[method]
            return entry(params) if callable(entry) else entry
        if method == "eth_chainId":
            return hex(self.chain_id)
        if method == "eth_blockNumber":
            return hex(self.block_number)
        return Error(-32601, f"the method {method} does not exist/is not available")

    async def _handle(self, stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        try:
            while True:
                body = await self._read_request(stream, conn)
                if body is None:
                    return
                request = json.loads(body)
                self.received.append((request["method"], body))
                reply = self.answer(request["method"], request.get("params"))
                if isinstance(reply, Hang):
                    await trio.sleep_forever()
                await self._send(stream, conn, request["id"], reply)
                if conn.our_state is h11.MUST_CLOSE:
                    return
                conn.start_next_cycle()
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.RemoteProtocolError):
            return
        finally:
            with trio.CancelScope(shield=True):
                await stream.aclose()

    @staticmethod
    async def _read_request(stream: trio.SocketStream, conn: h11.Connection) -> bytes | None:
        body = b""
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await stream.receive_some(65536)
                conn.receive_data(data)
                if not data and conn.their_state is not h11.DONE:
                    return None
                continue
            if isinstance(event, h11.Data):
                body += bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                return body
            elif isinstance(event, h11.ConnectionClosed):
                return None

    async def _send(
        self, stream: trio.SocketStream, conn: h11.Connection, request_id: Any, reply: Answer
    ) -> None:
        status = 200
        if isinstance(reply, Status):
            status, body = reply.code, reply.body
        elif isinstance(reply, Error):
            error: dict[str, Any] = {"code": reply.code, "message": reply.message}
            if reply.data is not None:
                error["data"] = reply.data
            body = json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()
        elif isinstance(reply, bytes):
            body = reply
        elif isinstance(reply, Stream):
            await self._send_stream(stream, conn, reply)
            return
        else:
            body = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": reply}).encode()
        headers = [("content-type", "application/json"), ("content-length", str(len(body)))]
        await stream.send_all(conn.send(h11.Response(status_code=status, headers=headers)) or b"")
        await stream.send_all(conn.send(h11.Data(data=body)) or b"")
        await stream.send_all(conn.send(h11.EndOfMessage()) or b"")

    async def _send_stream(
        self, stream: trio.SocketStream, conn: h11.Connection, reply: Stream
    ) -> None:
        head = h11.Response(status_code=200, headers=[("content-type", "application/json")])
        await stream.send_all(conn.send(head) or b"")
        async with aclosing(reply.chunks()) as chunks:
            async for chunk in chunks:
                await stream.send_all(conn.send(h11.Data(data=chunk)) or b"")
                self.bytes_sent += len(chunk)
        await stream.send_all(conn.send(h11.EndOfMessage()) or b"")
