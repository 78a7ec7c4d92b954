"""A block with more logs than ``max_block_logs`` is delivered without them: counted and logged."""

from __future__ import annotations

import json
import logging

import pytest
import trio

from adapters.upstream import UpstreamAdapter
from broker.events.bus import MemoryBus
from broker.events.ingest import ChainIngestion
from broker.metrics import Metrics

from .test_blocks import GETH_HEADER, HASH, as_block
from .test_forwarding import a_log, start_nodes, upstream_adapter

CHAIN = "eip155:1"


def broker_metrics(adapter: UpstreamAdapter) -> Metrics:
    """A broker's registry, as /metrics renders it, with the chain's ingestion wired to it."""
    metrics = Metrics()
    ChainIngestion(adapter, CHAIN, MemoryBus(), metrics)
    return metrics


def without_logs(metrics: Metrics) -> float:
    value = metrics.registry.get_sample_value(
        "scopecast_blocks_without_logs_total", {"chain": CHAIN}
    )
    assert value is not None, "exported from the start, at 0"
    return value


def logs_of_the_block(count: int) -> list[dict[str, object]]:
    return [{**a_log(i), "blockHash": HASH, "blockNumber": "0x1b4"} for i in range(count)]


async def test_a_block_over_max_block_logs_is_counted_in_the_metrics(
    nursery: trio.Nursery, caplog: pytest.LogCaptureFixture
) -> None:
    (node,) = await start_nodes(nursery, 1)
    node.script["eth_getBlockByNumber"] = json.loads(as_block(GETH_HEADER))
    with trio.fail_after(10):
        async with upstream_adapter(node, max_block_logs=3) as adapter:
            metrics = broker_metrics(adapter)
            assert without_logs(metrics) == 0

            node.script["eth_getLogs"] = logs_of_the_block(3)
            block = await adapter.fetch_block(CHAIN, number=0x1B4)
            assert block is not None
            assert len(block.logs) == 3
            assert without_logs(metrics) == 0

            node.script["eth_getLogs"] = logs_of_the_block(4)
            with caplog.at_level(logging.ERROR):
                block = await adapter.fetch_block(CHAIN, number=0x1B4)
            assert block is not None
            assert (block.number, block.hash, block.logs) == (0x1B4, HASH, ())
            assert without_logs(metrics) == 1
            assert adapter.ingestion_statistics(CHAIN) is not None
            assert b'scopecast_blocks_without_logs_total{chain="eip155:1"} 1.0' in metrics.render()
    assert any(
        "block 436" in r.getMessage() and "more than 3 logs" in r.getMessage()
        for r in caplog.records
        if r.levelno == logging.ERROR
    )


async def test_two_brokers_in_one_process_count_their_own_blocks(nursery: trio.Nursery) -> None:
    first_node, second_node = await start_nodes(nursery, 2)
    for node in (first_node, second_node):
        node.script["eth_getBlockByNumber"] = json.loads(as_block(GETH_HEADER))
        node.script["eth_getLogs"] = logs_of_the_block(4)
    with trio.fail_after(10):
        async with (
            upstream_adapter(first_node, max_block_logs=3) as first,
            upstream_adapter(second_node, max_block_logs=3) as second,
        ):
            first_metrics, second_metrics = broker_metrics(first), broker_metrics(second)
            assert await first.fetch_block(CHAIN, number=0x1B4) is not None
            assert await first.fetch_block(CHAIN, number=0x1B4) is not None
            assert await second.fetch_block(CHAIN, number=0x1B4) is not None
            assert (without_logs(first_metrics), without_logs(second_metrics)) == (2, 1)
