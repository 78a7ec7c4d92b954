"""URL routing (sans-io)."""

import pytest

from broker.routing import Endpoint, Route, route


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
