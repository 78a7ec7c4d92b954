"""The response cache in front of an upstream node (a real ``scopecast serve``): identical
concurrent calls reach the upstream once, and a replayed mix of dapp calls reaches it far less
often, every answer byte-identical to the uncached one."""

from __future__ import annotations

import json
import random
from typing import Any

import httpx
import trio

from bench.replay import DEV_ACCOUNTS, MIX_METHODS, mix
from tests.adapters.upstream.e2e import DEV_CHAIN, Client, mine, serve_broker, upstream_entry
from tests.support.processes import ScopecastProcess, start_scopecast
from tests.support.waiting import eventually


async def upstream_calls(http: httpx.AsyncClient, node: ScopecastProcess, method: str) -> int:
    text = (await http.get(f"http://127.0.0.1:{node.port}/metrics")).text
    prefix = f'scopecast_requests_total{{method="{method}",'
    found = [line.rsplit(" ", 1)[1] for line in text.splitlines() if line.startswith(prefix)]
    return int(sum(float(n) for n in found))


async def wait_for_head(served: Any) -> None:
    """Until the broker has seen the upstream's head (nothing is cached before)."""
    await eventually(
        lambda: served.broker.dispatcher.cache.epochs.epoch(DEV_CHAIN) is not None,
        "a head from the upstream",
    )


async def test_identical_concurrent_calls_reach_the_upstream_once(nursery: trio.Nursery) -> None:
    with trio.fail_after(60):
        node = await start_scopecast(nursery)
        await mine(node, 2)
        served = await serve_broker(
            nursery, DEV_CHAIN, [upstream_entry(node)], response_cache=1 << 24
        )
        await wait_for_head(served)
        async with httpx.AsyncClient(limits=httpx.Limits(max_connections=100)) as http:
            client = Client(http, served.http_url)
            before = await upstream_calls(http, node, "eth_getBalance")
            answers: list[Any] = []

            async def ask() -> None:
                answers.append(await client.call("eth_getBalance", [DEV_ACCOUNTS[0], "0x1"]))

            async with trio.open_nursery() as callers:
                for _ in range(100):
                    callers.start_soon(ask)
            after = await upstream_calls(http, node, "eth_getBalance")
        assert len({bytes(a.result) for a in answers}) == 1
        assert after - before == 1


async def test_a_replayed_mix_reaches_the_upstream_less_than_half_as_often(
    nursery: trio.Nursery,
) -> None:
    with trio.fail_after(120):
        node = await start_scopecast(nursery)
        await mine(node, 12)
        cached = await serve_broker(
            nursery, DEV_CHAIN, [upstream_entry(node)], response_cache=1 << 24
        )
        plain = await serve_broker(nursery, DEV_CHAIN, [upstream_entry(node)])
        await wait_for_head(cached)
        async with httpx.AsyncClient() as http:
            direct = Client(http, node.http_url())
            head = int(bytes((await direct.call("eth_blockNumber")).result)[1:-1], 16)
            blocks = [
                json.loads(
                    bytes((await direct.call("eth_getBlockByNumber", [hex(n), False])).result)
                )
                for n in range(head + 1)
            ]
            hashes = [block["hash"] for block in blocks]
            receipts = [tx for block in blocks for tx in block["transactions"]]
            calls = mix(random.Random(5), head, hashes, receipts, 1000)
            counted = {}
            replies = {}
            for name, served in (("plain", plain), ("cached", cached)):
                before = sum([await upstream_calls(http, node, m) for m in MIX_METHODS])
                client = Client(http, served.http_url)
                answers = []
                for start in range(0, len(calls), 50):  # batches of 50, as a busy dapp sends
                    answers += await client.batch(calls[start : start + 50])
                after = sum([await upstream_calls(http, node, m) for m in MIX_METHODS])
                counted[name] = after - before
                replies[name] = [bytes(a.result) for a in answers]
        assert replies["cached"] == replies["plain"]
        assert counted["cached"] * 2 <= counted["plain"], counted
        print(f"\nupstream calls for {len(calls)} replayed dapp calls: {counted}")
