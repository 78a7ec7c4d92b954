"""Prometheus metrics of one broker (its own registry, so several brokers can share a process)."""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

if TYPE_CHECKING:
    from adapters.base import ChainAdapter
    from broker.rpc.response_cache import ResponseStore
    from schemas.errors import RpcError

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class _ResponseCacheCollector:
    """Exports the response cache's own counts (:meth:`ResponseStore.statistics`) at scrape."""

    def __init__(self) -> None:
        self.store: ResponseStore | None = None

    def describe(self) -> Iterator[Metric]:
        return iter(())

    def collect(self) -> Iterator[Metric]:
        if self.store is None:
            return
        stats = self.store.statistics()
        yield CounterMetricFamily(
            "scopecast_response_cache_hits", "Chain calls answered from the cache", stats.hits
        )
        yield CounterMetricFamily(
            "scopecast_response_cache_misses",
            "Cacheable chain calls the cache could not answer",
            stats.misses,
        )
        yield CounterMetricFamily(
            "scopecast_response_cache_evictions",
            "Answers dropped to stay within response_cache_bytes",
            stats.evictions,
        )
        yield GaugeMetricFamily(
            "scopecast_response_cache_bytes", "Bytes the cached answers take", stats.bytes
        )
        yield GaugeMetricFamily(
            "scopecast_response_cache_entries", "Answers in the cache", stats.entries
        )


_LATENCY_BUCKETS: Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 2.5, 10)


class _RequestCollector:
    """``scopecast_requests_total`` and ``scopecast_request_seconds``, counted in plain lists.

    The request path only adds to a list; the Prometheus families are built at scrape. (Through
    ``prometheus_client``'s own counters every call took two locks and a bucket loop.)
    """

    def __init__(self) -> None:
        #: per method: calls answered ok, with an error, their seconds in all, then a count per
        #: latency bucket (not cumulative) and +Inf: one lookup per call
        self.methods: dict[str, list[float]] = {}

    def counts(self, method: str) -> list[float]:
        counts = self.methods.get(method)
        if counts is None:
            counts = self.methods[method] = [0, 0, 0.0] + [0] * (len(_LATENCY_BUCKETS) + 1)
        return counts

    def describe(self) -> Iterator[Metric]:
        return iter(())

    def collect(self) -> Iterator[Metric]:
        requests = CounterMetricFamily(
            "scopecast_requests", "JSON-RPC calls answered", labels=["method", "outcome"]
        )
        for method, counts in self.methods.items():
            for outcome, count in (("ok", counts[0]), ("error", counts[1])):
                if count:
                    requests.add_metric([method, outcome], count)
        yield requests
        latency = HistogramMetricFamily(
            "scopecast_request_seconds", "JSON-RPC call latency", labels=["method"]
        )
        for method, counts in self.methods.items():
            cumulative: float = 0
            buckets = []
            for bound, count in zip((*_LATENCY_BUCKETS, math.inf), counts[3:], strict=True):
                cumulative += count
                buckets.append(("+Inf" if bound == math.inf else repr(float(bound)), cumulative))
            latency.add_metric([method], buckets, counts[2])
        yield latency


class _IngestionCollector:
    """Exports what the chain adapters count themselves (:meth:`ChainAdapter.ingestion_statistics`),
    read at every scrape: the adapters keep the counts, this registry only reports them."""

    def __init__(self) -> None:
        self.adapters: dict[str, ChainAdapter] = {}

    def describe(self) -> Iterator[CounterMetricFamily]:
        yield self._blocks_without_logs()

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = self._blocks_without_logs()
        for chain, adapter in self.adapters.items():
            statistics = adapter.ingestion_statistics(chain)
            if statistics is not None:
                family.add_metric([chain], statistics.blocks_without_logs)
        yield family

    @staticmethod
    def _blocks_without_logs() -> CounterMetricFamily:
        return CounterMetricFamily(
            "scopecast_blocks_without_logs",
            "Blocks delivered to subscribers without their logs (more than max_block_logs)",
            labels=["chain"],
        )


class Metrics:
    """The counters and gauges scopecast exports at ``GET /metrics``."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.connections = Gauge("scopecast_connections", "Open WebSocket connections", registry=r)
        self.sessions = Gauge(
            "scopecast_sessions", "Sessions of the dapps connected to this process", registry=r
        )
        self.subscriptions = Gauge(
            "scopecast_subscriptions", "Active subscriptions", ["kind"], registry=r
        )
        self.notifications = Counter(
            "scopecast_notifications", "Notifications delivered to connections", registry=r
        )
        self.slow_consumers = Counter(
            "scopecast_slow_consumer_disconnects",
            "Connections closed because they could not keep up",
            registry=r,
        )
        self.reorgs = Counter(
            "scopecast_reorgs", "Chain reorganisations seen", ["chain"], registry=r
        )
        self.reorg_depth = Histogram(
            "scopecast_reorg_depth",
            "Blocks orphaned per reorganisation",
            ["chain"],
            buckets=(1, 2, 3, 5, 8, 13, 21, 34, 64, 128),
            registry=r,
        )
        self.skipped_heights = Counter(
            "scopecast_skipped_heights",
            "Block heights never delivered (a gap too long to fill, or blocks the node lacks)",
            ["chain"],
            registry=r,
        )
        self._ingestion = _IngestionCollector()
        r.register(self._ingestion)
        self._response_cache = _ResponseCacheCollector()
        r.register(self._response_cache)
        self._requests = _RequestCollector()
        r.register(self._requests)
        self._known_methods: set[str] = set()

    def watch_ingestion(self, chain: str, adapter: ChainAdapter) -> None:
        """Export the counts ``adapter`` keeps for ``chain`` (``scopecast_blocks_without_logs``)."""
        self._ingestion.adapters[chain] = adapter

    def watch_response_cache(self, store: ResponseStore) -> None:
        """Export ``store``'s hits, misses, evictions and size."""
        self._response_cache.store = store

    def observe_request(self, method: str, seconds: float, error: RpcError | None) -> None:
        counts = self._requests.methods.get(method)
        if counts is None:
            # Unknown method names come from clients: fold them so they cannot grow the label set.
            if method not in self._known_methods:
                if error is not None and error.code == -32601:
                    method = "unknown"
                elif len(self._known_methods) < 512:
                    self._known_methods.add(method)
                else:
                    method = "other"
            counts = self._requests.counts(method)
        counts[0 if error is None else 1] += 1
        counts[2] += seconds
        counts[3 + bisect.bisect_left(_LATENCY_BUCKETS, seconds)] += 1

    def render(self) -> bytes:
        """The Prometheus text exposition."""
        return generate_latest(self.registry)
