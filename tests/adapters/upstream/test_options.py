"""The upstream network table: typed, checked, errors that name the network."""

from typing import Any

import pytest

from adapters._options import decode_options
from adapters.base import NetworkSpec
from adapters.upstream import READ_METHODS, UpstreamAdapter, UpstreamOptions
from adapters.upstream._options import endpoint_label
from broker.config import Config, ConfigError, network_specs


def spec(**options: Any) -> NetworkSpec:
    return NetworkSpec("mainnet", "eip155:1", "upstream", options)


def test_defaults() -> None:
    options = decode_options(
        spec(upstreams=[{"http": "https://a.example/rpc"}]), UpstreamOptions, "upstream"
    )
    assert isinstance(options, UpstreamOptions)
    assert options.upstreams[0].ws is None
    assert (options.max_logs, options.logs_timeout) == (10_000, 10.0)
    assert "eth_getLogs" in options.methods
    assert "eth_sendRawTransaction" in options.methods
    assert set(READ_METHODS) <= options.methods


def test_a_config_file_table_builds_the_adapter() -> None:
    config = Config(
        networks={
            "mainnet": {
                "chain": "eip155:1",
                "upstreams": [{"http": "https://a.example/v3/KEY", "ws": "wss://a.example/ws"}],
                "request_timeout": 5,
                "read_methods": [*READ_METHODS, "debug_traceTransaction"],
            }
        }
    )
    (network,), _default = network_specs(config)
    assert network.adapter == "upstream"
    adapter = UpstreamAdapter(network)
    assert adapter.options.request_timeout == 5.0
    assert "debug_traceTransaction" in adapter.methods("eip155:1")
    assert "eth_subscribe" not in adapter.methods("eip155:1")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "missing required field `upstreams`"),
        ({"upstreams": []}, "at least one"),
        ({"upstreams": [{"http": "https://a", "wss": "x"}]}, "unknown field `wss`"),
        ({"upstreams": [{"http": "https://a"}], "timeout": 3}, "unknown field `timeout`"),
        ({"upstreams": [{"http": "ftp://a"}]}, "http:// or https://"),
        ({"upstreams": [{"http": "https://a", "ws": "https://a"}]}, "ws:// or wss://"),
        ({"upstreams": [{"http": "https://a"}], "request_timeout": 0}, "request_timeout"),
        ({"upstreams": [{"http": "https://a"}], "bench_base": 9, "bench_max": 1}, "bench_base"),
        (
            {"upstreams": [{"http": "https://a"}], "write_methods": ["eth_call"]},
            "both read and write: eth_call",
        ),
        (
            {"upstreams": [{"http": "https://a"}], "read_methods": ["eth_subscribe"]},
            "served by the broker",
        ),
    ],
)
def test_bad_tables_are_refused_naming_the_network(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=r"^networks\.mainnet \(upstream adapter\): ") as raised:
        UpstreamAdapter(spec(**options))
    assert message in str(raised.value)


def test_only_eip155_chains() -> None:
    bad = NetworkSpec("x", "solana:mainnet", "upstream", {"upstreams": [{"http": "https://a"}]})
    with pytest.raises(ConfigError, match="eip155"):
        UpstreamAdapter(bad)


def test_labels_never_show_paths_or_credentials() -> None:
    label = endpoint_label(1, "https://user:secret@node.example:8443/v3/APIKEY")
    assert label == "upstream 2 (node.example:8443)"
