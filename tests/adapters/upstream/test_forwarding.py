"""Forwarding, failover, benching and the eth_getLogs limits, against scripted nodes over real HTTP."""

from __future__ import annotations

import json
import logging
import time
import tracemalloc
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import msgspec
import pytest
import trio
import trio.testing

from adapters.base import NetworkSpec
from adapters.upstream import MaybeSubmitted, NoUsableUpstream, State, UpstreamAdapter
from broker.compose import build_bare_broker
from broker.rpc.networks import Network, Networks
from schemas.errors import InvalidParams, LimitExceeded, RpcError, WireError

from .fake_node import Error, FakeNode, Hang, Status, Stream

CHAIN = "eip155:1"
FAST: dict[str, Any] = {
    "request_timeout": 0.5,
    "connect_timeout": 0.5,
    "probe_timeout": 0.5,
    "bench_after": 2,
    "bench_base": 0.2,
    "bench_max": 1.0,
}
ADDRESS = "0x" + "ab" * 20
BALANCE_PARAMS = b'["' + ADDRESS.encode() + b'", "latest"]'


def a_log(index: int) -> dict[str, Any]:
    return {
        "address": ADDRESS,
        "topics": ["0x" + "11" * 32, "0x" + f"{index:064x}"],
        "data": "0x" + "00" * 32,
        "blockNumber": "0x10",
        "transactionHash": "0x" + "33" * 32,
        "transactionIndex": "0x0",
        "blockHash": "0x" + "44" * 32,
        "logIndex": hex(index),
        "removed": False,
    }


async def start_nodes(nursery: trio.Nursery, count: int) -> list[FakeNode]:
    nodes = [FakeNode() for _ in range(count)]
    for node in nodes:
        await nursery.start(node.serve)
    return nodes


@asynccontextmanager
async def upstream_adapter(*nodes: FakeNode, **options: Any) -> AsyncIterator[UpstreamAdapter]:
    table = {"upstreams": [{"http": node.url} for node in nodes], **FAST, **options}
    adapter = UpstreamAdapter(NetworkSpec("main", CHAIN, "upstream", table))
    try:
        await adapter.start()
        yield adapter
    finally:
        await adapter.aclose()


async def call(adapter: UpstreamAdapter, method: str, params: bytes = b"[]") -> bytes:
    return bytes(await adapter.call(CHAIN, method, msgspec.Raw(params)))


def states(adapter: UpstreamAdapter) -> list[State]:
    return [status.state for status in adapter.statistics()]


async def test_params_and_result_bytes_pass_through_unchanged(nursery: trio.Nursery) -> None:
    (node,) = await start_nodes(nursery, 1)
    node.script["eth_call"] = b'{"jsonrpc":"2.0","id":7,"result":{ "b" : 1,"a":[ 2 ]}}'
    with trio.fail_after(10):
        async with upstream_adapter(node) as adapter:
            params = b'[{"to":"' + ADDRESS.encode() + b'"} ,  "latest"]'
            assert await call(adapter, "eth_call", params) == b'{ "b" : 1,"a":[ 2 ]}'
    method, body = node.received[-1]
    assert method == "eth_call"
    assert b'"params":' + params + b"}" in body


async def test_start_excludes_an_upstream_of_another_chain(
    nursery: trio.Nursery, caplog: pytest.LogCaptureFixture
) -> None:
    good, wrong = await start_nodes(nursery, 2)
    wrong.chain_id = 5
    good.script["eth_getBalance"] = wrong.script["eth_getBalance"] = "0x1"
    with trio.fail_after(10):
        async with upstream_adapter(wrong, good) as adapter:
            assert states(adapter) == [State.EXCLUDED, State.HEALTHY]
            assert await call(adapter, "eth_getBalance", BALANCE_PARAMS) == b'"0x1"'
            (error,) = [r for r in caplog.records if r.levelno == logging.ERROR]
            message = error.getMessage()
            assert f"upstream 1 (127.0.0.1:{wrong.port})" in message
            assert '"0x5"' in message
            assert "eip155:1" in message
    assert "eth_getBalance" not in wrong.methods()


async def test_start_fails_when_no_upstream_serves_the_chain(nursery: trio.Nursery) -> None:
    first, second = await start_nodes(nursery, 2)
    first.chain_id = second.chain_id = 5
    second.stop()
    with trio.fail_after(10), pytest.raises(NoUsableUpstream) as raised:
        async with upstream_adapter(first, second):
            pass
    text = str(raised.value)
    assert "networks.main" in text
    assert "upstream 1 (127.0.0.1" in text
    assert "wrong chain" in text
    assert "upstream 2 (127.0.0.1" in text
    assert "cannot connect" in text


@pytest.mark.parametrize(
    "failure",
    ["refused", Status(500, b"oops"), Status(429, b"slow down"), Status(503), Hang(), b"<html>"],
    ids=["refused", "http-500", "http-429", "http-503", "timeout", "not-json-rpc"],
)
async def test_reads_fail_over_to_the_next_upstream(nursery: trio.Nursery, failure: Any) -> None:
    first, second = await start_nodes(nursery, 2)
    second.script["eth_getBalance"] = "0x2a"
    with trio.fail_after(10):
        async with upstream_adapter(first, second) as adapter:
            if failure == "refused":
                first.stop()
            else:
                first.script["eth_getBalance"] = failure
            assert await call(adapter, "eth_getBalance", BALANCE_PARAMS) == b'"0x2a"'


async def test_json_rpc_errors_come_back_unchanged_and_are_not_retried(
    nursery: trio.Nursery,
) -> None:
    first, second = await start_nodes(nursery, 2)
    first.script["eth_call"] = Error(3, "execution reverted: nope", "0x08c379a0")
    with trio.fail_after(10):
        async with upstream_adapter(first, second) as adapter:
            with pytest.raises(WireError) as raised:
                await call(adapter, "eth_call", b'[{"to":"' + ADDRESS.encode() + b'"}, "latest"]')
            assert states(adapter) == [State.HEALTHY, State.HEALTHY]
    assert (raised.value.code, raised.value.message) == (3, "execution reverted: nope")
    assert isinstance(raised.value.data, msgspec.Raw)
    assert bytes(raised.value.data) == b'"0x08c379a0"'
    assert "eth_call" not in second.methods()


@pytest.mark.parametrize("failure", [Status(502), Hang()], ids=["http-502", "timeout"])
async def test_a_write_that_may_have_been_delivered_is_not_resent(
    nursery: trio.Nursery, failure: Any
) -> None:
    first, second = await start_nodes(nursery, 2)
    first.script["eth_sendRawTransaction"] = failure
    second.script["eth_sendRawTransaction"] = "0x" + "55" * 32
    with trio.fail_after(10):
        async with upstream_adapter(first, second) as adapter:
            with pytest.raises(MaybeSubmitted):
                await call(adapter, "eth_sendRawTransaction", b'["0x02f8"]')
    assert "eth_sendRawTransaction" not in second.methods()


async def test_a_write_goes_to_the_next_upstream_when_the_first_refuses_connections(
    nursery: trio.Nursery,
) -> None:
    first, second = await start_nodes(nursery, 2)
    second.script["eth_sendRawTransaction"] = "0x" + "55" * 32
    with trio.fail_after(10):
        async with upstream_adapter(first, second) as adapter:
            first.stop()
            # Let node 1 close its kept-alive connection first: a request racing that close may
            # have been read, and a write is never sent again then.
            await trio.testing.wait_all_tasks_blocked()
            result = await call(adapter, "eth_sendRawTransaction", b'["0x02f8"]')
    assert result == b'"0x' + b"55" * 32 + b'"'


async def test_a_failing_upstream_is_benched_then_probed_and_used_first_again(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    # On trio's virtual clock: the bench (bench_max) passes without a second of real time.
    first, second = await start_nodes(nursery, 2)
    first.script["eth_getBalance"] = "0x1"
    second.script["eth_getBalance"] = "0x2"
    with trio.fail_after(20):
        async with upstream_adapter(first, second) as adapter:
            assert await call(adapter, "eth_getBalance", BALANCE_PARAMS) == b'"0x1"'
            first.stop()
            started = time.perf_counter()
            assert await call(adapter, "eth_getBalance", BALANCE_PARAMS) == b'"0x2"'
            failover = time.perf_counter() - started
            assert await call(adapter, "eth_getBalance", BALANCE_PARAMS) == b'"0x2"'
            assert states(adapter) == [State.BENCHED, State.HEALTHY]
            tries = adapter.statistics()[0].requests
            assert await call(adapter, "eth_getBalance", BALANCE_PARAMS) == b'"0x2"'
            assert adapter.statistics()[0].requests == tries  # benched: not even tried

            await nursery.start(first.serve)  # back on the same port
            probes_before = first.methods().count("eth_blockNumber")
            await trio.sleep(FAST["bench_max"])
            # The first call after the bench probes in passing; the next one is served by node 1.
            await call(adapter, "eth_getBalance", BALANCE_PARAMS)
            assert first.methods().count("eth_blockNumber") == probes_before + 1
            assert states(adapter) == [State.HEALTHY, State.HEALTHY]
            assert await call(adapter, "eth_getBalance", BALANCE_PARAMS) == b'"0x1"'
    print(f"\nfailover on a refused connection: {failover * 1e3:.1f} ms")


async def test_get_logs_is_checked_before_any_upstream_call(nursery: trio.Nursery) -> None:
    (node,) = await start_nodes(nursery, 1)
    both = {"blockhash": "0x" + "44" * 32, "fromBlock": "0x1"}
    too_many = {"address": [f"0x{i:040x}" for i in range(5001)]}
    with trio.fail_after(10):
        async with upstream_adapter(node) as adapter:
            for criteria in (both, too_many):
                with pytest.raises(InvalidParams):
                    await call(adapter, "eth_getLogs", json.dumps([criteria]).encode())
            with pytest.raises(InvalidParams, match="missing value for required argument 0"):
                await call(adapter, "eth_getLogs", b"[]")
    assert "eth_getLogs" not in node.methods()


async def test_get_logs_returns_exactly_the_limit(nursery: trio.Nursery) -> None:
    (node,) = await start_nodes(nursery, 1)
    node.script["eth_getLogs"] = [a_log(i) for i in range(10_000)]
    with trio.fail_after(20):
        async with upstream_adapter(node) as adapter:
            result = await call(adapter, "eth_getLogs", b'[{"fromBlock":"0x0"}]')
    assert len(msgspec.json.decode(result)) == 10_000


async def test_get_logs_over_the_limit_stops_reading_the_reply(nursery: trio.Nursery) -> None:
    """An upstream streams 200,000 logs (~120 MB): the broker stops after the 10,001st."""
    (node,) = await start_nodes(nursery, 1)
    total_logs = 200_000
    batch = b"," + b",".join(msgspec.json.encode(a_log(i)) for i in range(1000))
    total_bytes = 0

    async def chunks() -> AsyncGenerator[bytes, None]:
        nonlocal total_bytes
        yield b'{"jsonrpc":"2.0","id":1,"result":[' + msgspec.json.encode(a_log(0))
        total_bytes = len(batch) * (total_logs // 1000)
        for _ in range(total_logs // 1000):
            yield batch
        yield b"]}"

    node.script["eth_getLogs"] = Stream(chunks)
    with trio.fail_after(30):
        async with upstream_adapter(node) as adapter:
            tracemalloc.start()
            started = time.perf_counter()
            with pytest.raises(LimitExceeded, match="query returned more than 10000 results"):
                await call(adapter, "eth_getLogs", b'[{"fromBlock":"0x0"}]')
            elapsed = time.perf_counter() - started
            _current, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            assert states(adapter) == [State.HEALTHY]
    print(
        f"\nreply of {total_bytes / 1e6:.0f} MB: node wrote {node.bytes_sent / 1e6:.1f} MB "
        f"before the broker hung up; peak memory {peak / 1e6:.1f} MB; {elapsed:.2f} s"
    )
    assert node.bytes_sent < total_bytes / 4
    assert peak < 40e6


async def test_a_client_of_the_broker_gets_minus_32005_for_a_huge_reply(
    nursery: trio.Nursery,
) -> None:
    """Through the broker's HTTP endpoint: 50,000 logs upstream, -32005 to the client."""
    (node,) = await start_nodes(nursery, 1)
    node.script["eth_getLogs"] = [a_log(i) for i in range(50_000)]
    table = {"upstreams": [{"http": node.url}], **FAST}
    adapter = UpstreamAdapter(NetworkSpec("main", CHAIN, "upstream", table))
    broker = build_bare_broker(Networks([Network("main", CHAIN, adapter)]), ingest=False)
    with trio.fail_after(30):
        port = await nursery.start(broker.serve, "127.0.0.1", 0)
        async with httpx.AsyncClient(trust_env=False) as client:
            reply = await client.post(
                f"http://127.0.0.1:{port}/v3/dev",
                json={"jsonrpc": "2.0", "id": 1, "method": "eth_getLogs", "params": [{}]},
            )
    assert reply.json() == {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {"code": -32005, "message": "query returned more than 10000 results"},
    }
    nursery.cancel_scope.cancel()


async def test_get_logs_slower_than_the_budget_is_a_query_timeout(nursery: trio.Nursery) -> None:
    first, second = await start_nodes(nursery, 2)
    first.script["eth_getLogs"] = Hang()
    with trio.fail_after(10):
        async with upstream_adapter(first, second, logs_timeout=0.3) as adapter:
            with pytest.raises(LimitExceeded, match="query timeout exceeded"):
                await call(adapter, "eth_getLogs", b'[{"fromBlock":"0x0"}]')
            # A heavy query says nothing about the upstream's health.
            assert adapter.statistics()[0].failures == 0
    assert "eth_getLogs" not in second.methods()


async def test_methods_not_served_are_refused(nursery: trio.Nursery) -> None:
    (node,) = await start_nodes(nursery, 1)
    with trio.fail_after(10):
        async with upstream_adapter(node, read_methods=["eth_blockNumber"]) as adapter:
            assert adapter.methods(CHAIN) == {"eth_blockNumber", "eth_sendRawTransaction"}
            with pytest.raises(RpcError, match="does not exist"):
                await call(adapter, "eth_getBalance", BALANCE_PARAMS)
            assert await call(adapter, "eth_blockNumber") == b'"0x10"'
