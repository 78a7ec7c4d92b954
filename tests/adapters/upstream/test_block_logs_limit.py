"""A block with more logs than ``max_block_logs`` is delivered without them: counted and logged."""

from __future__ import annotations

import json
import logging

import pytest
import trio

from broker.metrics import Metrics

from .test_blocks import GETH_HEADER, HASH, as_block
from .test_forwarding import a_log, start_nodes, upstream_adapter

CHAIN = "eip155:1"


def without_logs(metrics: Metrics) -> float:
    value = metrics.registry.get_sample_value(
        "scopecast_blocks_without_logs_total", {"network": "main"}
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
            metrics = Metrics()  # a broker's registry, as /metrics renders it
            before = without_logs(metrics)

            node.script["eth_getLogs"] = logs_of_the_block(3)
            block = await adapter.fetch_block(CHAIN, number=0x1B4)
            assert block is not None
            assert len(block.logs) == 3
            assert without_logs(metrics) == before

            node.script["eth_getLogs"] = logs_of_the_block(4)
            with caplog.at_level(logging.ERROR):
                block = await adapter.fetch_block(CHAIN, number=0x1B4)
            assert block is not None
            assert (block.number, block.hash, block.logs) == (0x1B4, HASH, ())
            assert without_logs(metrics) == before + 1
            assert b'scopecast_blocks_without_logs_total{network="main"}' in metrics.render()
    assert any(
        "block 436" in r.getMessage() and "more than 3 logs" in r.getMessage()
        for r in caplog.records
        if r.levelno == logging.ERROR
    )
