"""The operator feed's connection on memory streams, with trio's clock jumping: no socket, and no
real time for its timers (the sign-in timeout, the close grace). The console's side speaks
through wsproto's client; the feed is the one a broker built by ``scopecast serve`` has."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing
import wsproto.events as wse
from wsproto.connection import Connection, ConnectionType

from broker.compose import ServeOptions, build_broker
from broker.config import Config
from broker.operator.admin import WRONG_TOKEN
from broker.operator.console._feed import OperatorFeed
from broker.operator.console._feed_connection import (
    CLOSE_WRONG_TOKEN,
    SIGN_IN_TIMEOUT,
    FeedConnection,
)
from broker.transport.ws_protocol import CLOSE_GRACE

TOKEN = "the-admin-token"
StreamPair = Callable[[], tuple[trio.abc.Stream, trio.abc.Stream]]


class Console:
    """The console's end: frames masked and parsed by wsproto's client side."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self._ws = Connection(ConnectionType.CLIENT)
        self._events: list[wse.Event] = []

    async def send(self, event: wse.Event) -> None:
        await self.stream.send_all(self._ws.send(event))

    async def sign_in(self, token: str = TOKEN) -> None:
        await self.send(wse.TextMessage(json.dumps({"token": token})))

    async def event(self) -> wse.Event | None:
        """The next event from the feed; None when its stream ended."""
        while not self._events:
            data = await self.stream.receive_some()
            if not data:
                return None
            self._ws.receive_data(data)
            self._events.extend(self._ws.events())
        return self._events.pop(0)

    async def message(self) -> dict[str, Any]:
        event = await self.event()
        assert isinstance(event, wse.TextMessage), event
        message: dict[str, Any] = json.loads(event.data)
        return message

    async def closed(self) -> tuple[int, str]:
        """The code and reason of the close frame that comes next."""
        event = await self.event()
        assert isinstance(event, wse.CloseConnection), event
        return event.code, event.reason


@pytest.fixture
def feed() -> OperatorFeed:
    """The operator feed of a broker as ``scopecast serve`` builds it (not served)."""
    broker = build_broker(Config(), ServeOptions())
    assert broker.console is not None
    return broker.console.feed


@asynccontextmanager
async def feed_connection(
    feed: OperatorFeed,
    *,
    signed_in: bool = False,
    pair: StreamPair = trio.testing.memory_stream_pair,
) -> AsyncIterator[tuple[Console, trio.Event, list[float]]]:
    """A console on the feed: its end, the event that stops the server, and (once the feed's side
    returned) the time it did."""
    server, client = pair()
    stopping = trio.Event()
    connection = FeedConnection(
        server,
        feed,
        lambda token: token == TOKEN,
        signed_in=signed_in,
        dev_token=False,
        stopping=stopping.wait,
    )
    ended: list[float] = []

    async def serve() -> None:
        await connection.run(b"")
        ended.append(trio.current_time())

    with trio.fail_after(60):  # virtual seconds: a hang here is the bug
        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve)
            yield Console(client), stopping, ended


async def test_a_console_that_does_not_sign_in_is_closed_at_the_timeout(
    feed: OperatorFeed, autojump_clock: trio.testing.MockClock
) -> None:
    async with feed_connection(feed) as (console, _, ended):
        started = trio.current_time()
        assert await console.closed() == (1008, f"no sign-in within {SIGN_IN_TIMEOUT:g} s")
        assert trio.current_time() - started == pytest.approx(SIGN_IN_TIMEOUT)
    assert ended
    assert feed.subscribers == 0


async def test_a_wrong_token_is_closed_with_no_data(
    feed: OperatorFeed, autojump_clock: trio.testing.MockClock
) -> None:
    async with feed_connection(feed) as (console, _, _ended):
        await console.sign_in("wrong")
        assert await console.closed() == (CLOSE_WRONG_TOKEN, WRONG_TOKEN)
    assert feed.subscribers == 0


async def test_the_right_token_gets_the_snapshot_and_a_ping_its_pong(
    feed: OperatorFeed, autojump_clock: trio.testing.MockClock
) -> None:
    async with feed_connection(feed) as (console, stopping, _ended):
        await console.sign_in()
        snapshot = await console.message()
        assert snapshot["type"] == "snapshot"
        assert (snapshot["devToken"], snapshot["approvals"], snapshot["sessions"]) == (
            False,
            [],
            [],
        )
        assert feed.subscribers == 1
        await console.send(wse.Ping(b"still there?"))
        assert await console.event() == wse.Pong(b"still there?")
        # A second message is not a sign-in again: nothing answers it.
        await console.sign_in("wrong")
        await trio.testing.wait_all_tasks_blocked()
        stopping.set()
        assert await console.closed() == (1001, "server shutting down")
    assert feed.subscribers == 0


async def test_a_header_signs_in_at_once(
    feed: OperatorFeed, autojump_clock: trio.testing.MockClock
) -> None:
    async with feed_connection(feed, signed_in=True) as (console, stopping, _ended):
        started = trio.current_time()
        assert (await console.message())["type"] == "snapshot"
        assert trio.current_time() == started
        stopping.set()
        assert await console.closed() == (1001, "server shutting down")


async def test_a_console_that_leaves_without_a_close_is_unsubscribed(
    feed: OperatorFeed, autojump_clock: trio.testing.MockClock
) -> None:
    async with feed_connection(feed, signed_in=True) as (console, _, ended):
        assert (await console.message())["type"] == "snapshot"
        assert feed.subscribers == 1
        await console.stream.aclose()
    assert ended
    assert feed.subscribers == 0


async def test_a_console_that_stops_reading_is_cut_off_after_the_close_grace(
    feed: OperatorFeed, autojump_clock: trio.testing.MockClock
) -> None:
    # In lockstep, the feed's writer waits in its first send (the snapshot) until the console
    # reads, which it never does: the close cannot be sent, and the grace ends the connection.
    async with feed_connection(feed, signed_in=True, pair=trio.testing.lockstep_stream_pair) as (
        _console,
        stopping,
        ended,
    ):
        await trio.testing.wait_all_tasks_blocked()
        assert not ended
        stopping.set()
        stopped = trio.current_time()
    assert ended[0] - stopped == pytest.approx(CLOSE_GRACE)
    assert feed.subscribers == 0
