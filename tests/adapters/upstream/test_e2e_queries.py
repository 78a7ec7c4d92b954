"""Every node method through the broker answers exactly what the upstream node answers.

The upstream is a ``scopecast serve`` process holding the execution-apis conformance chain (45
blocks of every transaction type, uncles, logs, receipts); the broker runs in this test's trio run.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio

from tests.support.processes import start_scopecast

from .e2e import (
    FIXTURES,
    GENESIS_ARGS,
    GENESIS_CHAIN,
    Client,
    http_client,
    mine,
    needs_fixtures,
    notifications,
    serve_broker,
    subscribed,
    upstream_entry,
)

pytestmark = [pytest.mark.slow, needs_fixtures]


def fixture_requests() -> list[tuple[str, list[Any]]]:
    """The requests of the conformance fixtures (``>>`` lines)."""
    calls = []
    for path in sorted(FIXTURES.glob("*/*.io")):
        for line in path.read_text().splitlines():
            if line.startswith(">> "):
                request = json.loads(line[3:])
                calls.append((request["method"], request.get("params", [])))
    return calls


async def chain_requests(upstream: Client) -> list[tuple[str, list[Any]]]:
    """A request for every block, uncle, transaction, receipt and log of the chain, and state."""
    head = int(await upstream.result("eth_blockNumber"), 16)
    calls: list[tuple[str, list[Any]]] = []
    contracts: set[str] = set()
    senders: set[str] = set()
    for number in range(head + 1):
        tag = hex(number)
        block = await upstream.result("eth_getBlockByNumber", [tag, True])
        calls += [
            ("eth_getBlockByNumber", [tag, False]),
            ("eth_getBlockByNumber", [tag, True]),
            ("eth_getBlockByHash", [block["hash"], False]),
            ("eth_getBlockByHash", [block["hash"], True]),
            ("eth_getBlockReceipts", [tag]),
            ("eth_getBlockTransactionCountByNumber", [tag]),
            ("eth_getBlockTransactionCountByHash", [block["hash"]]),
            ("eth_getLogs", [{"blockHash": block["hash"]}]),
        ]
        for index in range(len(block["uncles"]) + 1):  # one past the end: null
            calls.append(("eth_getUncleByBlockNumberAndIndex", [tag, hex(index)]))
        for tx in block["transactions"]:
            senders.add(tx["from"])
            calls += [
                ("eth_getTransactionByHash", [tx["hash"]]),
                ("eth_getTransactionReceipt", [tx["hash"]]),
                ("eth_getTransactionByBlockNumberAndIndex", [tag, tx["transactionIndex"]]),
            ]
        receipts = await upstream.result("eth_getBlockReceipts", [tag])
        contracts |= {r["contractAddress"] for r in receipts if r["contractAddress"]}
        contracts |= {log["address"] for r in receipts for log in r["logs"]}
    for tag in ("latest", "earliest", "pending", "safe", "finalized"):
        calls += [
            ("eth_getBlockByNumber", [tag, False]),
            ("eth_getBlockReceipts", [tag]),
            ("eth_getUncleByBlockNumberAndIndex", [tag, "0x0"]),
            ("eth_getTransactionByBlockNumberAndIndex", [tag, "0x0"]),
        ]
    missing = "0x" + "00" * 32
    calls += [
        ("eth_getBlockByHash", [missing, False]),
        ("eth_getTransactionByHash", [missing]),
        ("eth_getTransactionReceipt", [missing]),
        ("eth_getBlockByNumber", [hex(head + 100), False]),
        ("eth_getLogs", [{"fromBlock": "earliest", "toBlock": "latest"}]),
        ("eth_getLogs", [{"fromBlock": "0x1", "toBlock": "0x10", "address": sorted(contracts)}]),
        ("eth_getLogs", [{"fromBlock": "0x0", "toBlock": "latest", "topics": [None, None]}]),
        ("eth_chainId", []),
        ("eth_blockNumber", []),
        ("net_version", []),
        ("web3_clientVersion", []),
        ("eth_gasPrice", []),
        ("eth_maxPriorityFeePerGas", []),
        ("eth_feeHistory", ["0x5", "latest", [25, 75]]),
        ("eth_getBlockByNumber", ["0xzz", False]),  # an invalid argument: the same error
        ("eth_sendRawTransaction", ["0x00"]),  # not a transaction: the node's error
    ]
    for address in sorted(contracts):
        calls += [
            ("eth_getCode", [address, "latest"]),
            ("eth_getStorageAt", [address, "0x0", "latest"]),
            ("eth_getBalance", [address, "0x10"]),
            ("eth_call", [{"to": address, "data": "0x"}, "latest"]),
        ]
    for sender in sorted(senders):
        calls += [
            ("eth_getBalance", [sender, "latest"]),
            ("eth_getTransactionCount", [sender, "latest"]),
            ("eth_estimateGas", [{"from": sender, "to": sender, "value": "0x1"}]),
        ]
    return calls


async def test_every_node_method_through_the_broker_equals_the_upstream(
    nursery: trio.Nursery,
) -> None:
    with trio.fail_after(240):
        node = await start_scopecast(nursery, *GENESIS_ARGS)
        served = await serve_broker(nursery, GENESIS_CHAIN, [upstream_entry(node)])
        async with http_client() as http:
            upstream, broker = Client(http, node.http_url()), Client(http, served.http_url)
            calls = fixture_requests() + await chain_requests(upstream)
            compared = 0
            for start in range(0, len(calls), 200):
                batch = calls[start : start + 200]
                expected, actual = await upstream.batch(batch), await broker.batch(batch)
                for call, want, got in zip(batch, expected, actual, strict=True):
                    # The result bytes are passed through untouched; errors keep code and message.
                    assert bytes(got.result or b"") == bytes(want.result or b""), call
                    assert got.error == want.error, call
                    compared += 1
            print(f"\n{compared} requests compared, {len({c[0] for c in calls})} methods")

        # The same over WebSocket, and newHeads: the broker's header is the node's header.
        async with (
            subscribed(node.ws_url(), "newHeads") as (direct, _),
            subscribed(served.ws_url, "newHeads") as (through, _),
        ):
            for method, params in calls[:40]:
                assert await through.call(method, params) | {"id": 0} == await direct.call(
                    method, params
                ) | {"id": 0}
            await mine(node, 2)
            assert await notifications(through, 2) == await notifications(direct, 2)
        nursery.cancel_scope.cancel()


async def test_the_broker_keeps_its_own_limits_in_front_of_the_upstream(
    nursery: trio.Nursery,
) -> None:
    with trio.fail_after(120):
        node = await start_scopecast(nursery, *GENESIS_ARGS)
        served = await serve_broker(nursery, GENESIS_CHAIN, [upstream_entry(node)], max_logs=10)
        async with http_client() as http:
            broker = Client(http, served.http_url)
            both = await broker.call(
                "eth_getLogs", [{"blockhash": "0x" + "11" * 32, "fromBlock": "0x1"}]
            )
            assert both.error["code"] == -32602
            many = await broker.call(
                "eth_getLogs", [{"address": [f"0x{i:040x}" for i in range(5001)]}]
            )
            assert many.error["code"] == -32602
            over = await broker.call("eth_getLogs", [{"fromBlock": "earliest"}])
            assert over.error == {"code": -32005, "message": "query returned more than 10 results"}
            subscribe_over_http = await broker.call("eth_subscribe", ["newHeads"])
            assert subscribe_over_http.error["code"] == -32601
        nursery.cancel_scope.cancel()
