"""Helpers for the end-to-end tests: a broker in this trio run on upstream ``scopecast serve``
processes (the dev chain), and clients talking to it over real sockets."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Final

import httpx
import msgspec
import trio
from msgspec import UNSET, UnsetType

from adapters.base import NetworkSpec
from adapters.upstream import UpstreamAdapter
from broker.app import Broker
from broker.compose import build_bare_broker
from broker.rpc.networks import Network, Networks
from broker.transport.limits import Limits
from tests.support.conformance import CONFORMANCE_DIR, needs_conformance
from tests.support.inprocess import Dapp, dapp
from tests.support.processes import ScopecastProcess

#: The execution-apis conformance chain (tests/support/conformance.py says where it is read).
FIXTURES: Final = CONFORMANCE_DIR
needs_fixtures: Final = needs_conformance
GENESIS_ARGS: Final = (
    "--genesis",
    str(FIXTURES / "genesis.json"),
    "--chain-file",
    str(FIXTURES / "chain.rlp"),
    "--forkchoice",
    str(FIXTURES / "headfcu.json"),
)
GENESIS_CHAIN: Final = "eip155:3503995874084926"  # genesis.json's config.chainId
DEV_CHAIN: Final = "eip155:1337"
#: Quick failure handling, so that a test sees benching, probing and reconnects in seconds.
FAST: Final[dict[str, Any]] = {
    "request_timeout": 2.0,
    "connect_timeout": 1.0,
    "probe_timeout": 1.0,
    "bench_after": 1,
    "bench_base": 0.2,
    "bench_max": 0.5,
    "reconnect_base": 0.1,
    "reconnect_max": 0.5,
    "poll_interval": 0.5,
}


class Reply(msgspec.Struct):
    id: Any = None
    result: msgspec.Raw | UnsetType = UNSET
    error: Any = UNSET


_replies: Final = msgspec.json.Decoder(list[Reply])
_reply: Final = msgspec.json.Decoder(Reply)


def upstream_entry(node: ScopecastProcess, *, ws: str | None = "same") -> dict[str, str]:
    entry = {"http": node.http_url()}
    if ws == "same":
        entry["ws"] = node.ws_url()
    elif ws is not None:
        entry["ws"] = ws
    return entry


@dataclass
class ServedBroker:
    broker: Broker
    adapter: UpstreamAdapter
    port: int

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v3/dev"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws/v3/dev"


async def serve_broker(
    nursery: trio.Nursery,
    chain: str,
    upstreams: list[dict[str, str]],
    *,
    response_cache: int = 0,
    **options: Any,
) -> ServedBroker:
    """A broker with one upstream network ``main``, served on 127.0.0.1 by ``nursery``.

    The response cache is off unless asked for: these tests are about what reaches the upstreams.
    """
    spec = NetworkSpec("main", chain, "upstream", {"upstreams": upstreams, **FAST, **options})
    adapter = UpstreamAdapter(spec)
    broker = build_bare_broker(
        Networks([Network("main", chain, adapter)]), limits=Limits(response_cache=response_cache)
    )
    port = await nursery.start(broker.serve, "127.0.0.1", 0)
    return ServedBroker(broker, adapter, port)


class Client:
    """JSON-RPC over HTTP, answers kept as raw bytes for exact comparison."""

    def __init__(self, http: httpx.AsyncClient, url: str) -> None:
        self.http = http
        self.url = url

    async def batch(self, calls: list[tuple[str, list[Any]]]) -> list[Reply]:
        body = [
            {"jsonrpc": "2.0", "id": i, "method": method, "params": params}
            for i, (method, params) in enumerate(calls)
        ]
        response = await self.http.post(self.url, json=body)
        replies = sorted(_replies.decode(response.content), key=lambda r: int(r.id))
        assert len(replies) == len(calls)
        return replies

    async def call(self, method: str, params: list[Any] | None = None) -> Reply:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or []}
        return _reply.decode((await self.http.post(self.url, json=body)).content)

    async def result(self, method: str, params: list[Any] | None = None) -> Any:
        reply = await self.call(method, params)
        assert reply.error is UNSET, f"{method}: {reply.error}"
        assert not isinstance(reply.result, UnsetType)
        return msgspec.json.decode(reply.result)


@asynccontextmanager
async def http_client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(trust_env=False, timeout=30) as client:
        yield client


@asynccontextmanager
async def subscribed(url: str, *params: Any) -> AsyncIterator[tuple[Dapp, str]]:
    """A WebSocket with one ``eth_subscribe`` made; yields the connection and the id."""
    async with dapp(url) as conn:
        subscription = await conn.result("eth_subscribe", list(params))
        yield conn, subscription


async def notifications(conn: Dapp, count: int) -> list[dict[str, Any]]:
    """The ``result`` of the next ``count`` subscription notifications."""
    found = []
    for _ in range(count):
        message = await conn.notification()
        found.append(message["params"]["result"])
    return found


async def mine(node: ScopecastProcess, count: int = 1) -> None:
    for _ in range(count):
        await node.result("evm_mine")
