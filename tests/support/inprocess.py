"""A real broker in the test's own trio run: built exactly as ``scopecast serve`` builds it, served
on 127.0.0.1 port 0, with real clients (httpx, trio-websocket) talking to it over sockets."""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx
import trio
import trio.testing
import trio_websocket

from broker.app import Broker
from broker.compose import ServeOptions, open_broker
from broker.config import Config
from broker.rpc.networks import Network
from broker.sessions.wall_clock import SYSTEM_CLOCK, WallClock
from tests.support.waiting import eventually
from tests.support.wall_clock import TrioWallClock


@dataclass
class RunningBroker:
    broker: Broker
    port: int
    #: The wall clock the broker's sessions and tokens go by.
    wall_clock: WallClock = SYSTEM_CLOCK

    def now(self) -> datetime:
        """The broker's wall-clock time now (session expiries are stated in it)."""
        return self.wall_clock.now()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def http_url(self, key: str = "dev", network: str | None = None) -> str:
        prefix = f"/{network}" if network else ""
        return f"{self.base}{prefix}/v3/{key}"

    def ws_url(self, key: str = "dev", network: str | None = None) -> str:
        prefix = f"/{network}" if network else ""
        return f"ws://127.0.0.1:{self.port}{prefix}/ws/v3/{key}"

    async def rpc(
        self, method: str, params: Any = (), *, key: str = "dev", network: str | None = None
    ) -> Any:
        """One call over HTTP; returns the whole decoded response."""
        async with httpx.AsyncClient() as client:
            reply = await client.post(
                self.http_url(key, network),
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": method,
                    "params": list(params) if isinstance(params, tuple) else params,
                },
            )
        return reply.json()

    async def admin(self, method: str, params: Any, *, token: str = "dev") -> Any:
        async with httpx.AsyncClient() as client:
            reply = await client.post(
                f"{self.base}/admin",
                json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
                headers={"authorization": f"Bearer {token}"},
            )
        return reply.json()


@asynccontextmanager
async def running_broker(
    options: ServeOptions | None = None,
    *,
    config: Config | None = None,
    expiry_check: float | None = None,
    clock: trio.testing.MockClock | None = None,
    autojump: bool = True,
    built: Sequence[Network] | None = None,
) -> AsyncIterator[RunningBroker]:
    """Serve a broker as ``scopecast serve`` does (:func:`broker.compose.open_broker`, from
    ``options`` and ``config``; ``built``: networks whose adapters exist already) on 127.0.0.1
    port 0; stop it on exit as a deploy does.

    ``expiry_check`` sets the period of the session expiry checks once the broker serves (the
    first check waits that long from the start).

    ``clock`` (the test's ``mock_clock``) runs at real speed while the adapters start (in worker
    threads, which a jumping clock would outrun), then jumps as ``autojump_clock`` does: from the
    first request on, pings, deadlines and timeouts take no real time. Only for tests whose
    broker then uses no worker thread (no mining, no ``eth_call`` on the dev chain), nor a
    process of its own (Redis): a jumping clock would outrun those too. With ``autojump=False``
    the clock keeps real speed, and only the test moves it on (``clock.jump``).

    With ``clock``, the broker's wall clock follows it too (:class:`TrioWallClock`, read with
    :meth:`RunningBroker.now`): sessions and tokens expire as the test moves trio's clock on.
    """
    wall_clock: WallClock = SYSTEM_CLOCK if clock is None else TrioWallClock()
    if clock is not None:
        clock.autojump_threshold = math.inf
        clock.rate = 1.0
    given = options or ServeOptions()
    async with open_broker(
        config or Config(), given, host="127.0.0.1", port=0, clock=wall_clock, built=built
    ) as (broker):
        assert broker.port is not None
        if expiry_check is not None:
            assert broker.sessions is not None
            broker.sessions.expiry_check = expiry_check
        if clock is not None and autojump:
            clock.rate = 0.0
            clock.autojump_threshold = 0.0
        yield RunningBroker(broker, broker.port, wall_clock)


async def waiting_approval(node: RunningBroker) -> dict[str, Any]:
    """The first request waiting for the operator (polls ``admin_listApprovals`` until one is)."""

    async def pending() -> list[dict[str, Any]]:
        listed: list[dict[str, Any]] = (await node.admin("admin_listApprovals", {}))["result"]
        return listed

    return (await eventually(pending, "a request waiting for the operator"))[0]


class Dapp:
    """A dapp's WebSocket connection: calls by id, notifications kept in order."""

    def __init__(self, ws: trio_websocket.WebSocketConnection) -> None:
        self.ws = ws
        self._next_id = 0
        self.notifications: list[dict[str, Any]] = []
        self._replies: dict[int, dict[str, Any]] = {}
        self.last_cursor: str | None = None

    async def call(self, method: str, params: Any = None) -> dict[str, Any]:
        """Send one request and wait for its reply (notifications met meanwhile are kept)."""
        self._next_id += 1
        request_id = self._next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.ws.send_message(json.dumps(message))
        while request_id not in self._replies:
            await self._receive_one()
        return self._replies.pop(request_id)

    async def result(self, method: str, params: Any = None) -> Any:
        reply = await self.call(method, params)
        assert "error" not in reply, reply
        return reply["result"]

    async def notification(self) -> dict[str, Any]:
        """The next notification (waits for one), its resume ``cursor`` taken out of its params
        (every notification carries one) into :attr:`last_cursor`."""
        while not self.notifications:
            await self._receive_one()
        message = self.notifications.pop(0)
        params = message.get("params")
        if isinstance(params, dict) and message.get("method") != "scopecast_resumed":
            cursor = params.pop("cursor", None)
            assert isinstance(cursor, str), f"a notification without a cursor: {message}"
            self.last_cursor = cursor
        return message

    async def _receive_one(self) -> None:
        data = json.loads(await self.ws.get_message())
        if "id" in data and "method" not in data:
            self._replies[data["id"]] = data
        else:
            self.notifications.append(data)


@asynccontextmanager
async def dapp(url: str, *, origin: str | None = None) -> AsyncIterator[Dapp]:
    headers = [(b"Origin", origin.encode())] if origin else []
    async with trio_websocket.open_websocket_url(url, extra_headers=headers) as ws:
        yield Dapp(ws)
