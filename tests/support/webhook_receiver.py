"""A webhook receiver for the tests: a small HTTP server on 127.0.0.1 that verifies every
request's signature with the ``standardwebhooks`` package (the receiver's verifier, not ours),
keeps what it was sent, and fails on purpose as the test tells it (an answer of its choosing, a
stall, or a listener closed so that connecting is refused)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import h11
import trio
from standardwebhooks import Webhook

Behaviour = Callable[[int], int | None]
"""The status to answer the ``n``-th request with (from 1); None: stall (never answer)."""


@dataclass
class Received:
    delivery_id: str
    body: dict[str, Any]


@dataclass
class Receiver:
    port: int
    behaviour: Behaviour = lambda n: 200
    #: Per webhook id: its secret (set once the webhook exists; until then requests get 503).
    secrets: dict[str, str] = field(default_factory=dict)
    #: Every request whose signature verified and that was answered 2xx, in arrival order.
    accepted: list[Received] = field(default_factory=list)
    requests: int = 0
    bad_signatures: int = 0
    changed: trio.Event = field(default_factory=trio.Event)
    _serving: trio.CancelScope | None = None
    _closed: trio.Event = field(default_factory=trio.Event)
    _nursery: trio.Nursery | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks?x=1"

    def verify(self, headers: dict[str, str], body: bytes) -> dict[str, Any] | None:
        try:
            hook_id = json.loads(body)["webhook"]
            verified = Webhook(self.secrets[hook_id]).verify(body, headers)
        except Exception:
            return None
        assert isinstance(verified, dict)
        return verified

    async def _handle(self, stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        request: h11.Request | None = None
        body = b""
        try:
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    data = await stream.receive_some(65536)
                    if not data:
                        return
                    conn.receive_data(data)
                elif isinstance(event, h11.Request):
                    request = event
                elif isinstance(event, h11.Data):
                    body += event.data
                elif isinstance(event, h11.EndOfMessage):
                    break
                else:
                    return
            assert request is not None
            self.requests += 1
            status = self.behaviour(self.requests)
            if status is None:
                await trio.sleep_forever()  # a stall: the sender's timeout ends it
            headers = {k.decode(): v.decode() for k, v in request.headers}
            verified = self.verify(headers, body)
            if verified is None:
                self.bad_signatures += 1
                status = 401
            elif 200 <= status < 300:
                self.accepted.append(Received(headers["webhook-id"], verified))
            reply = [(b"content-length", b"0")]
            if status == 429:
                reply.append((b"retry-after", b"0"))
            await stream.send_all(
                conn.send(h11.Response(status_code=status, headers=reply))
                + conn.send(h11.EndOfMessage())
            )
            self.changed.set()
            self.changed = trio.Event()
        except (trio.BrokenResourceError, h11.ProtocolError):
            return
        finally:
            await trio.aclose_forcefully(stream)

    async def open(self) -> None:
        """Listen (again) on :attr:`port`."""
        assert self._nursery is not None
        (listener,) = await trio.open_tcp_listeners(self.port, host="127.0.0.1")
        self.port = listener.socket.getsockname()[1]
        self._serving = trio.CancelScope()
        self._closed = trio.Event()
        self._nursery.start_soon(self._accept, listener, self._serving)

    async def _accept(self, listener: trio.SocketListener, scope: trio.CancelScope) -> None:
        assert self._nursery is not None
        with scope:
            async with listener:
                while True:
                    self._nursery.start_soon(self._handle, await listener.accept())
        self._closed.set()

    async def close(self) -> None:
        """Stop listening: connecting is refused until :meth:`open`."""
        assert self._serving is not None
        self._serving.cancel()
        await self._closed.wait()

    async def until(self, what: Callable[[], bool]) -> None:
        while not what():
            await self.changed.wait()


@asynccontextmanager
async def webhook_receiver(behaviour: Behaviour = lambda n: 200) -> AsyncIterator[Receiver]:
    async with trio.open_nursery() as nursery:
        receiver = Receiver(0, behaviour)
        receiver._nursery = nursery
        await receiver.open()
        try:
            yield receiver
        finally:
            nursery.cancel_scope.cancel()
