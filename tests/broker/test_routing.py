"""URL routing (sans-io)."""

import pytest
import trio

from broker.compose import build_bare_broker
from broker.rpc.networks import Network, Networks
from broker.transport.routing import Endpoint, Route, route
from schemas.errors import ConfigError
from tests.support.fake_chain import CHAIN, FakeChain


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (b"/v3/k1", Route(Endpoint.RPC, None, "k1")),
        (b"/ws/v3/k1", Route(Endpoint.WEBSOCKET, None, "k1")),
        (b"/mainnet/v3/k1", Route(Endpoint.RPC, "mainnet", "k1")),
        (b"/mainnet/ws/v3/k1?x=1", Route(Endpoint.WEBSOCKET, "mainnet", "k1")),
        (b"/v3", Route(Endpoint.RPC, None, None)),
        (b"/ws/v3/", Route(Endpoint.WEBSOCKET, None, None)),
        (b"/healthz", Route(Endpoint.HEALTH)),
        (b"/metrics", Route(Endpoint.METRICS)),
        (b"/admin", Route(Endpoint.ADMIN)),
        (b"/admin/ws", Route(Endpoint.OPERATOR_FEED)),
        (b"/console", Route(Endpoint.CONSOLE)),
        (b"/console/console.js", Route(Endpoint.CONSOLE, file="console.js")),
        (b"/v3/a%20b", Route(Endpoint.RPC, None, "a b")),
    ],
)
def test_known_paths(target: bytes, expected: Route) -> None:
    assert route(target) == expected


@pytest.mark.parametrize(
    "target", [b"/", b"/v2/k", b"/a/b/c/d", b"/ws", b"/net/ws/v2/k", b"/v3/k/extra"]
)
def test_unknown_paths(target: bytes) -> None:
    assert route(target) is None


class _CountingChain(FakeChain):
    """A fake chain that counts how often it is started and closed."""

    def __init__(self) -> None:
        super().__init__()
        self.starts = 0
        self.closes = 0

    async def start(self) -> None:
        self.starts += 1

    async def aclose(self) -> None:
        self.closes += 1


async def test_an_adapter_shared_by_networks_starts_and_closes_once() -> None:
    shared = _CountingChain()
    broker = build_bare_broker(
        Networks([Network("a", CHAIN, shared), Network("b", "eip155:2", shared)], default="a")
    )
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            await nursery.start(broker.serve, "127.0.0.1", 0)
            broker.shutdown()
    assert (shared.starts, shared.closes) == (1, 1)


async def test_a_port_taken_closes_the_adapters_started_and_says_so_in_one_line() -> None:
    shared = _CountingChain()
    broker = build_bare_broker(Networks([Network("a", CHAIN, shared)]))
    with trio.fail_after(30), trio.socket.socket() as taken:
        await taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.RaisesGroup(
            pytest.RaisesExc(ConfigError, match=f"^cannot listen on 127.0.0.1:{port}: the address")
        ):
            async with trio.open_nursery() as nursery:
                await nursery.start(broker.serve, "127.0.0.1", port)
    assert (shared.starts, shared.closes) == (1, 1)
