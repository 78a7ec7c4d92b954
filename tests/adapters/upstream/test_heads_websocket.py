"""The upstream adapter's WebSocket side on memory streams, with trio's clock jumping: a stalled
``newHeads`` connection is given up when its ping goes unanswered, heads come by HTTP polling
meanwhile, and refused connections are tried again after growing delays, at the default
settings (tens of seconds) in no real time. The upstream's WebSocket end is wsproto's server on
the other end of the stream; its HTTP side is a :class:`FakeNode` on a loopback socket (which
keeps all its I/O in this trio run, so the clock may jump)."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing
import wsproto.events as wse
from wsproto import ConnectionType, WSConnection

from adapters.base import NetworkSpec
from adapters.evm.blocks import ChainBlock
from adapters.upstream import UpstreamAdapter
from adapters.upstream._heads import HeadFollower

from .fake_node import FakeNode

CHAIN = "eip155:1"
WS_URL = "ws://upstream.example/ws"
SUBSCRIPTION = "0x5ab"


def block_hash(number: int) -> str:
    return f"0x{number:064x}"


def header(number: int) -> dict[str, Any]:
    """A head as a node shows it (the fields the adapter reads)."""
    return {"number": hex(number), "hash": block_hash(number), "parentHash": block_hash(number - 1)}


class WebSocketUpstream:
    """An upstream's WebSocket side on memory streams: it accepts the handshake and
    ``eth_subscribe``, sends the heads the test gives it, answers pings while
    :attr:`answering_pings`, and refuses connections while :attr:`refusing`."""

    def __init__(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery
        #: When the follower opened each connection (trio's clock).
        self.attempts: list[float] = []
        self.refusing = False
        self.answering_pings = True
        self._outgoing: trio.MemorySendChannel[bytes] | None = None
        self._ws: WSConnection | None = None
        self._changed = trio.Event()

    async def open(self, url: str) -> trio.abc.Stream:
        """The follower's way to connect (``open_ws_stream``)."""
        assert url == WS_URL
        self.attempts.append(trio.current_time())
        self._changed_now()
        if self.refusing:
            raise ConnectionRefusedError(111, "Connection refused")
        ours, theirs = trio.testing.memory_stream_pair()
        self._nursery.start_soon(self._serve, theirs)
        return ours

    async def wait_for_attempts(self, count: int) -> None:
        while len(self.attempts) < count:
            await self._changed.wait()

    async def wait_subscribed(self) -> None:
        while self._outgoing is None:
            await self._changed.wait()

    async def send_head(self, number: int) -> None:
        assert self._outgoing is not None, "no subscription"
        assert self._ws is not None
        params = {"subscription": SUBSCRIPTION, "result": header(number)}
        message = {"jsonrpc": "2.0", "method": "eth_subscription", "params": params}
        await self._outgoing.send(self._ws.send(wse.TextMessage(json.dumps(message))))

    def _changed_now(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def _serve(self, stream: trio.abc.Stream) -> None:
        ws = WSConnection(ConnectionType.SERVER)
        send, receive = trio.open_memory_channel[bytes](16)
        async with stream, trio.open_nursery() as nursery:
            nursery.start_soon(self._write, stream, receive)
            while data := await stream.receive_some():
                ws.receive_data(data)
                for event in ws.events():
                    if isinstance(event, wse.Request):
                        await send.send(ws.send(wse.AcceptConnection()))
                    elif isinstance(event, wse.Message):  # the adapter sends its call as bytes
                        request = json.loads(event.data)
                        assert request["method"] == "eth_subscribe", request
                        reply = {"jsonrpc": "2.0", "id": request["id"], "result": SUBSCRIPTION}
                        await send.send(ws.send(wse.TextMessage(json.dumps(reply))))
                        self._ws, self._outgoing = ws, send
                        self._changed_now()
                    elif isinstance(event, wse.Ping) and self.answering_pings:
                        await send.send(ws.send(event.response()))
            if self._outgoing is send:  # the follower left this connection
                self._ws, self._outgoing = None, None
            nursery.cancel_scope.cancel()

    @staticmethod
    async def _write(stream: trio.abc.Stream, frames: trio.MemoryReceiveChannel[bytes]) -> None:
        async for frame in frames:
            await stream.send_all(frame)


class Reported:
    """The blocks the follower reported, with when (trio's clock)."""

    def __init__(self) -> None:
        self.blocks: list[tuple[int, float]] = []
        self._grew = trio.Event()

    async def __call__(self, block: ChainBlock) -> None:
        self.blocks.append((block.number, trio.current_time()))
        self._grew.set()
        self._grew = trio.Event()

    async def when(self, number: int) -> float:
        """When block ``number`` was first reported (waits for it)."""
        while True:
            for reported, at in self.blocks:
                if reported == number:
                    return at
            await self._grew.wait()

    def numbers(self) -> list[int]:
        """The heights reported, in order, a repeat of the last one (a new source's first
        report of the head already reported) left out."""
        return [number for number, _ in itertools.groupby(n for n, _at in self.blocks)]


@asynccontextmanager
async def following(
    *, refusing: bool = False
) -> AsyncIterator[tuple[FakeNode, WebSocketUpstream, Reported]]:
    """A head follower of one upstream (HTTP: a fake node at height 0x10; WebSocket: on memory
    streams, refusing connections from the start if asked), at the adapter's default timings."""
    node = FakeNode(block_number=0x10)
    node.script["eth_getBlockByNumber"] = lambda params: header(
        node.block_number if params[0] == "latest" else int(params[0], 16)
    )
    node.script["eth_getLogs"] = []
    reported = Reported()
    with trio.fail_after(600):  # virtual seconds: a hang here is the bug
        async with trio.open_nursery() as nursery:
            await nursery.start(node.serve)
            upstream = WebSocketUpstream(nursery)
            upstream.refusing = refusing
            table = {"upstreams": [{"http": node.url, "ws": WS_URL}]}
            adapter = UpstreamAdapter(NetworkSpec("main", CHAIN, "upstream", table))
            await adapter.start()
            follower = HeadFollower(
                "main",
                adapter.forwarder,
                adapter.fetcher,
                adapter.options,
                open_ws_stream=upstream.open,
            )
            await nursery.start(follower.serve, reported)
            yield node, upstream, reported
            nursery.cancel_scope.cancel()
        await adapter.aclose()


async def test_a_stalled_websocket_is_left_for_polling_and_tried_again_after_its_backoff(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    async with following() as (node, upstream, reported):
        await upstream.wait_subscribed()
        await reported.when(0x10)  # the source's head, read at once over HTTP
        node.block_number = 0x11
        await upstream.send_head(0x11)
        last_message = trio.current_time()
        await reported.when(0x11)
        upstream.answering_pings = False
        node.block_number = 0x12  # mined while the WebSocket stalls: polled for
        await upstream.wait_for_attempts(2)
        polled = await reported.when(0x12)
        # 20 s quiet (ws_ping_interval, looked at every 1 s), then 10 s without a pong
        # (request_timeout): given up, polled at once, tried again after 0.5 s (reconnect_base).
        assert 30 <= polled - last_message <= 31
        assert upstream.attempts[1] - polled == pytest.approx(0.5)
        assert "no pong within 10 s: stalled" in caplog.text
        upstream.answering_pings = True
        await upstream.wait_subscribed()
        node.block_number = 0x13
        await upstream.send_head(0x13)
        await reported.when(0x13)
    assert reported.numbers() == [0x10, 0x11, 0x12, 0x13]


async def test_refused_websocket_connections_are_tried_again_ever_later_while_heads_are_polled(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with following(refusing=True) as (node, upstream, reported):
        await upstream.wait_for_attempts(9)
        gaps = [later - earlier for earlier, later in itertools.pairwise(upstream.attempts)]
        # reconnect_base 0.5 s, doubled after each failure up to reconnect_max (30 s)
        assert gaps == pytest.approx([0.5, 1, 2, 4, 8, 16, 30, 30])
        node.block_number = 0x11
        mined = trio.current_time()
        # polled every 2 s (poll_interval) meanwhile
        assert await reported.when(0x11) - mined <= 2
        upstream.refusing = False
        await upstream.wait_subscribed()
        node.block_number = 0x12
        await upstream.send_head(0x12)
        await reported.when(0x12)
    assert reported.numbers() == [0x10, 0x11, 0x12]
