"""The HTTP fast path (a single call answered from the response cache without waiting) answers
exactly as the full path does: each request's own id, a new answer once the head moves, the same
counts in the cache statistics and ``/metrics``; batches and notifications take the full path."""

from __future__ import annotations

from typing import Any

import httpx
import msgspec

from broker.compose import ServeOptions
from tests.broker.test_metrics_e2e import scrape, value
from tests.support.inprocess import RunningBroker, running_broker

JSON = {"content-type": "application/json"}
BLOCK = {"jsonrpc": "2.0", "method": "eth_getBlockByNumber", "params": ["latest", False]}


async def _post(client: httpx.AsyncClient, node: RunningBroker, body: Any) -> httpx.Response:
    reply = await client.post(node.http_url(), content=msgspec.json.encode(body), headers=JSON)
    assert reply.status_code == 200
    return reply


async def test_cached_answers_carry_each_requests_own_id_and_are_counted_once() -> None:
    ids: list[Any] = [1, "a", 1, 2**60, "a", None, 1]
    async with running_broker(ServeOptions(block_time=0)) as node, httpx.AsyncClient() as client:
        store = node.broker.dispatcher.cache.store
        assert store is not None
        before = store.statistics()
        samples, _ = await scrape(node)
        ok = "scopecast_requests_total"
        calls_before = (
            value(samples, ok, method="eth_getBlockByNumber", outcome="ok")
            if (ok, frozenset({("method", "eth_getBlockByNumber"), ("outcome", "ok")})) in samples
            else 0
        )
        replies = [(await _post(client, node, {**BLOCK, "id": i})).content for i in ids]
        results = set()
        for request_id, raw in zip(ids, replies, strict=True):
            reply = msgspec.json.decode(raw)
            assert reply["id"] == request_id
            assert raw.startswith(b'{"jsonrpc":"2.0","id":' + msgspec.json.encode(request_id))
            results.add(msgspec.json.encode(reply["result"]))
        assert len(results) == 1
        after = store.statistics()
        assert after.misses - before.misses == 1
        assert after.hits - before.hits == len(ids) - 1
        samples, _ = await scrape(node)
        assert value(
            samples, ok, method="eth_getBlockByNumber", outcome="ok"
        ) == calls_before + len(ids)


async def test_a_new_head_gets_a_new_answer_for_the_same_body() -> None:
    body = {"jsonrpc": "2.0", "id": 3, "method": "eth_blockNumber", "params": []}
    async with running_broker(ServeOptions(block_time=0)) as node, httpx.AsyncClient() as client:
        first = (await _post(client, node, body)).json()["result"]
        assert (await _post(client, node, body)).json()["result"] == first
        assert "error" not in await node.rpc("evm_mine", [])
        second = (await _post(client, node, body)).json()["result"]
        assert int(second, 16) == int(first, 16) + 1
        assert (await _post(client, node, body)).json()["result"] == second


async def test_notifications_batches_and_bad_requests_take_the_full_path() -> None:
    async with running_broker(ServeOptions(block_time=0)) as node, httpx.AsyncClient() as client:
        cached = (await _post(client, node, {**BLOCK, "id": 1})).json()["result"]
        notification = {k: v for k, v in BLOCK.items()}
        assert (await _post(client, node, notification)).content == b""
        batch = (await _post(client, node, [{**BLOCK, "id": 1}, {**BLOCK, "id": 2}])).json()
        assert [(r["id"], r["result"]) for r in batch] == [(1, cached), (2, cached)]
        wrong_version = (await _post(client, node, {**BLOCK, "id": 4, "jsonrpc": "1.0"})).json()
        assert wrong_version["error"]["code"] == -32600
        text = await client.post(
            node.http_url(),
            content=msgspec.json.encode({**BLOCK, "id": 5}),
            headers={"content-type": "text/plain"},
        )
        assert text.status_code == 415
        unknown = await client.post(
            node.http_url(key="nope"), content=msgspec.json.encode({**BLOCK, "id": 6}), headers=JSON
        )
        assert unknown.status_code == 401


async def test_a_batch_of_cached_calls_is_answered_at_once_and_counted_once_each() -> None:
    number = {"jsonrpc": "2.0", "method": "eth_blockNumber", "params": []}
    async with running_broker(ServeOptions(block_time=0)) as node, httpx.AsyncClient() as client:
        store = node.broker.dispatcher.cache.store
        assert store is not None
        block = (await _post(client, node, {**BLOCK, "id": 1})).json()["result"]
        head = (await _post(client, node, {**number, "id": 1})).json()["result"]
        before = store.statistics()
        batch = [{**BLOCK, "id": "a"}, {**number, "id": 2}, {**BLOCK, "id": 3}]
        replies = (await _post(client, node, batch)).json()
        assert replies == [
            {"jsonrpc": "2.0", "id": "a", "result": block},
            {"jsonrpc": "2.0", "id": 2, "result": head},
            {"jsonrpc": "2.0", "id": 3, "result": block},
        ]
        after = store.statistics()
        assert (after.hits - before.hits, after.misses - before.misses) == (3, 0)
        # One call the cache cannot answer (a block not found is never kept): the whole batch
        # takes the full path, and the cached calls in it are counted once, not twice.
        missing = {"jsonrpc": "2.0", "id": 5, "method": "eth_getBlockByNumber"}
        mixed = [{**BLOCK, "id": 4}, {**missing, "params": ["0xffffff", False]}]
        replies = (await _post(client, node, mixed)).json()
        assert replies == [
            {"jsonrpc": "2.0", "id": 4, "result": block},
            {"jsonrpc": "2.0", "id": 5, "result": None},
        ]
        last = store.statistics()
        assert (last.hits - after.hits, last.misses - after.misses) == (1, 1)
        samples, _ = await scrape(node)
        assert (
            value(samples, "scopecast_requests_total", method="eth_blockNumber", outcome="ok") == 2
        )
