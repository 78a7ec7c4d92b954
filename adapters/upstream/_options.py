"""The upstream adapter's options: a ``[networks.<name>]`` table of the config, typed and checked.

Everything but ``upstreams`` has a default, so the smallest table is::

    [networks.mainnet]
    chain = "eip155:1"
    upstreams = [{ http = "https://node-a.example/rpc", ws = "wss://node-a.example/ws" }]
"""

from __future__ import annotations

from typing import ClassVar, Final
from urllib.parse import urlsplit

import msgspec

from adapters.base import NetworkSpec
from schemas.errors import ConfigError

#: Node methods answered by forwarding; safe to send again to another upstream after a failure.
READ_METHODS: Final = (
    "eth_blockNumber",
    "eth_call",
    "eth_chainId",
    "eth_estimateGas",
    "eth_feeHistory",
    "eth_gasPrice",
    "eth_getBalance",
    "eth_getBlockByHash",
    "eth_getBlockByNumber",
    "eth_getBlockReceipts",
    "eth_getBlockTransactionCountByHash",
    "eth_getBlockTransactionCountByNumber",
    "eth_getCode",
    "eth_getLogs",
    "eth_getStorageAt",
    "eth_getTransactionByBlockNumberAndIndex",
    "eth_getTransactionByHash",
    "eth_getTransactionCount",
    "eth_getTransactionReceipt",
    "eth_getUncleByBlockNumberAndIndex",
    "eth_maxPriorityFeePerGas",
    "net_version",
    "web3_clientVersion",
)

#: Methods with an effect: sent to another upstream only when the first never received them.
WRITE_METHODS: Final = ("eth_sendRawTransaction",)

#: Served by the broker itself on top of chain events and ``eth_getLogs``; never forwarded.
BROKER_METHODS: Final = frozenset(
    {
        "eth_subscribe",
        "eth_unsubscribe",
        "eth_newFilter",
        "eth_newBlockFilter",
        "eth_newPendingTransactionFilter",
        "eth_getFilterChanges",
        "eth_getFilterLogs",
        "eth_uninstallFilter",
    }
)


class Endpoint(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One upstream node: its JSON-RPC URL over HTTP(S) and, optionally, over WebSocket."""

    http: str
    ws: str | None = None

    def __post_init__(self) -> None:
        if urlsplit(self.http).scheme not in ("http", "https") or not urlsplit(self.http).hostname:
            raise ValueError(f"upstream http must be an http:// or https:// URL, got {self.http!r}")
        if self.ws is not None and (
            urlsplit(self.ws).scheme not in ("ws", "wss") or not urlsplit(self.ws).hostname
        ):
            raise ValueError(f"upstream ws must be a ws:// or wss:// URL, got {self.ws!r}")
        for url in (self.http, self.ws):
            _check_port(url)


def _check_port(url: str | None) -> None:
    """A port outside 0..65535 in an upstream URL, refused at start (named by host only: provider
    URLs often carry an API key)."""
    if url is None:
        return
    parts = urlsplit(url)
    try:
        parts.port  # noqa: B018 - urllib checks the port when it is read
    except ValueError:
        raise ValueError(
            f"the port in {parts.scheme}://{parts.hostname}:... is outside the range 0..65535"
        ) from None


class BaseUpstreamOptions(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The settings every upstream adapter shares, whichever family its nodes speak (durations in
    seconds): the upstreams, forwarding with failover, benching, health probes, the WebSocket
    source and its polling fallback. Each family's options extend it with their own fields and
    method lists (:class:`UpstreamOptions`; ``SolanaUpstreamOptions``)."""

    #: The family's PubSub and filter methods, served by the broker itself and never forwarded.
    broker_methods: ClassVar[frozenset[str]] = frozenset()

    upstreams: tuple[Endpoint, ...]
    request_timeout: float = 10.0
    connect_timeout: float = 3.0
    max_connections: int = 32
    bench_after: int = 3
    bench_base: float = 1.0
    bench_max: float = 60.0
    probe_timeout: float = 3.0
    poll_interval: float = 2.0
    reconnect_base: float = 0.5
    reconnect_max: float = 30.0
    ws_ping_interval: float = 20.0
    max_response_bytes: int = 64 * 1024 * 1024
    read_methods: tuple[str, ...] = ()
    write_methods: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.upstreams:
            raise ValueError("`upstreams` needs at least one { http = ... } entry")
        for name, value in self._durations().items():
            if not value > 0:
                raise ValueError(f"`{name}` must be a positive number of seconds")
        for name, count in self._counts().items():
            if count < 1:
                raise ValueError(f"`{name}` must be at least 1")
        if self.bench_base > self.bench_max:
            raise ValueError("`bench_base` must not exceed `bench_max`")
        if self.reconnect_base > self.reconnect_max:
            raise ValueError("`reconnect_base` must not exceed `reconnect_max`")
        both = set(self.read_methods) & set(self.write_methods)
        if both:
            raise ValueError(f"methods listed as both read and write: {', '.join(sorted(both))}")
        served_by_broker = self.methods & self.broker_methods
        if served_by_broker:
            raise ValueError(
                f"{', '.join(sorted(served_by_broker))} are served by the broker itself; "
                "remove them from read_methods/write_methods"
            )

    def _durations(self) -> dict[str, float]:
        """The settings that must be a positive number of seconds (a family adds its own)."""
        return {
            "request_timeout": self.request_timeout,
            "connect_timeout": self.connect_timeout,
            "bench_base": self.bench_base,
            "bench_max": self.bench_max,
            "probe_timeout": self.probe_timeout,
            "poll_interval": self.poll_interval,
            "reconnect_base": self.reconnect_base,
            "reconnect_max": self.reconnect_max,
            "ws_ping_interval": self.ws_ping_interval,
        }

    def _counts(self) -> dict[str, int]:
        """The settings that must be at least 1 (a family adds its own)."""
        return {
            "max_connections": self.max_connections,
            "bench_after": self.bench_after,
            "max_response_bytes": self.max_response_bytes,
        }

    @property
    def methods(self) -> frozenset[str]:
        """Every method forwarded to the upstreams."""
        return frozenset(self.read_methods) | frozenset(self.write_methods)

    def attempt_timeout(self, method: str) -> float:
        """How long one upstream has to answer ``method`` before the next one is asked."""
        return self.request_timeout


class UpstreamOptions(BaseUpstreamOptions, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The settings of one upstream network (durations in seconds): README "Upstream nodes (the
    ``upstream`` adapter)"."""

    broker_methods: ClassVar[frozenset[str]] = BROKER_METHODS

    max_logs: int = 10_000
    logs_timeout: float = 10.0
    max_block_logs: int = 20_000
    read_methods: tuple[str, ...] = READ_METHODS
    write_methods: tuple[str, ...] = WRITE_METHODS

    def _durations(self) -> dict[str, float]:
        return {**super()._durations(), "logs_timeout": self.logs_timeout}

    def _counts(self) -> dict[str, int]:
        return {
            **super()._counts(),
            "max_logs": self.max_logs,
            "max_block_logs": self.max_block_logs,
        }

    def attempt_timeout(self, method: str) -> float:
        # A log query may scan far more than any other call: it has a budget of its own.
        return self.logs_timeout if method == "eth_getLogs" else self.request_timeout


def endpoint_label(index: int, url: str) -> str:
    """How logs and errors name an upstream: its position and host, never its path or
    credentials (provider URLs often carry an API key)."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    port = f":{parts.port}" if parts.port else ""
    return f"upstream {index + 1} ({host}{port})"


def expected_chain_id(spec: NetworkSpec) -> int:
    """The numeric EIP-155 chain id of ``spec.chain`` (``eip155:<decimal>``)."""
    namespace, _, reference = spec.chain.partition(":")
    if namespace != "eip155" or not reference.isdecimal():
        raise ConfigError(
            f"networks.{spec.name}: the upstream adapter serves eip155:<decimal> chains, "
            f"not {spec.chain!r}"
        )
    return int(reference)
