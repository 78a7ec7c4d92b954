"""The solana-upstream options: typed and checked, errors naming the network."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.base import Lifetime, NetworkSpec
from adapters.solana.upstream import SolanaUpstreamAdapter
from schemas.errors import ConfigError

from .nodes import CHAIN

UPSTREAMS = [{"http": "https://sol.example/rpc/SECRET", "ws": "wss://sol.example/ws/SECRET"}]


def adapter(chain: str = CHAIN, **options: Any) -> SolanaUpstreamAdapter:
    spec = NetworkSpec("sol", chain, "solana-upstream", {"upstreams": UPSTREAMS, **options})
    return SolanaUpstreamAdapter(spec)


@pytest.mark.parametrize(
    ("options", "text"),
    [
        ({"request_timout": 1}, "request_timout"),
        ({"request_timeout": 0}, "request_timeout"),
        ({"block_wait": -1}, "block_wait"),
        ({"watch_linger": -1}, "watch_linger"),
        ({"bench_base": 9, "bench_max": 1}, "bench_base"),
        ({"max_logs": 5}, "unknown field `max_logs`"),
        ({"upstreams": []}, "upstreams"),
        ({"upstreams": [{"http": "ftp://x"}]}, "http"),
        ({"read_methods": ["slotSubscribe"]}, "served by the broker"),
        ({"write_methods": ["getBalance"]}, "both read and write"),
    ],
)
def test_bad_options_are_refused_naming_the_network(options: dict[str, Any], text: str) -> None:
    with pytest.raises(ConfigError, match=text) as raised:
        adapter(**options)
    assert "networks.sol" in str(raised.value)


def test_only_a_solana_chain() -> None:
    with pytest.raises(ConfigError, match="solana:<genesis hash prefix>"):
        adapter("eip155:1")


def test_what_the_response_cache_may_keep() -> None:
    served = adapter()
    head = 100

    def lifetime(method: str, params: bytes) -> Lifetime:
        return served.answer_lifetime(CHAIN, method, params, head)

    assert lifetime("getGenesisHash", b"[]") is Lifetime.FOREVER
    assert lifetime("getBlock", b"[99]") is Lifetime.FOREVER
    assert lifetime("getBlock", b'[99, {"commitment": "finalized"}]') is Lifetime.FOREVER
    assert lifetime("getBlock", b'[99, {"commitment": "confirmed"}]') is Lifetime.NEVER
    assert lifetime("getBlock", b"[100]") is Lifetime.NEVER  # the open slot, on a dev node
    assert lifetime("getTransaction", b'["sig"]') is Lifetime.FOREVER
    for method in ("getSlot", "getBalance", "getLatestBlockhash", "sendTransaction"):
        assert lifetime(method, b"[]") is Lifetime.NEVER
    assert served.answer_kept(CHAIN, Lifetime.FOREVER, b"null") is Lifetime.NEVER
    assert served.answer_kept(CHAIN, Lifetime.FOREVER, b"{}") is Lifetime.FOREVER
