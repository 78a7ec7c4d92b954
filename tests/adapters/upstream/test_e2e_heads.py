"""Failover, WebSocket outages and reorganisations, end to end: upstreams are ``scopecast serve``
processes (the dev chain), the broker runs in this trio run, clients use real sockets."""

from __future__ import annotations

import time
from typing import Any

import pytest
import trio
from msgspec import UNSET, UnsetType

from adapters.upstream import State
from tests.support.inprocess import Dapp
from tests.support.processes import ScopecastProcess, start_scopecast
from tests.support.waiting import eventually

from .e2e import (
    DEV_CHAIN,
    GENESIS_ARGS,
    GENESIS_CHAIN,
    Client,
    Reply,
    ServedBroker,
    http_client,
    mine,
    needs_fixtures,
    notifications,
    serve_broker,
    subscribed,
    upstream_entry,
)
from .tcp_proxy import TcpProxy

pytestmark = pytest.mark.slow

TRANSFER = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"
DEV_SENDER = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"
QUERIES: list[tuple[str, list[Any]]] = [
    ("eth_getBlockByNumber", ["0x10", True]),
    ("eth_getBlockReceipts", ["0x2"]),
    ("eth_getLogs", [{"fromBlock": "0x0", "toBlock": "0x2d"}]),
    ("eth_getTransactionByBlockNumberAndIndex", ["0x3", "0x0"]),
]


async def wait_for_state(served: ServedBroker, index: int, state: State) -> None:
    # statistics() is a snapshot with no event to wait on: poll it.
    await eventually(
        lambda: served.adapter.statistics()[index].state is state, f"upstream {index} {state}"
    )


def raw(reply: Reply) -> bytes:
    assert not isinstance(reply.result, UnsetType), reply.error
    return bytes(reply.result)


async def block_hash(node: ScopecastProcess, number: int) -> str:
    return str((await node.result("eth_getBlockByNumber", [hex(number), False]))["hash"])


@needs_fixtures
async def test_killing_the_first_upstream_is_invisible_and_it_is_used_again_on_return(
    nursery: trio.Nursery,
) -> None:
    with trio.fail_after(180):
        first = await start_scopecast(nursery, *GENESIS_ARGS)
        second = await start_scopecast(nursery, *GENESIS_ARGS)  # the same chain
        served = await serve_broker(
            nursery, GENESIS_CHAIN, [upstream_entry(first), upstream_entry(second)]
        )
        async with http_client() as http, subscribed(served.ws_url, "newHeads") as (heads, _):
            broker = Client(http, served.http_url)
            expected = await broker.batch(QUERIES)
            assert all(r.error is UNSET for r in expected)

            # Clients keep querying while the first upstream is killed: none sees an error.
            errors: list[Any] = []
            answered = 0
            stop_load = trio.Event()

            async def load() -> None:
                nonlocal answered
                while not stop_load.is_set():
                    replies = await broker.batch(QUERIES)
                    errors.extend(r.error for r in replies if r.error is not UNSET)
                    answered += len(replies)

            nursery.start_soon(load)
            await eventually(lambda: answered >= 2 * len(QUERIES), "the load is under way")
            await first.kill()
            started = time.perf_counter()
            after = await broker.batch(QUERIES)
            failover = time.perf_counter() - started
            assert [raw(r) for r in after] == [raw(r) for r in expected]
            since_kill = answered
            await eventually(  # the load goes on after the failover, still without an error
                lambda: answered >= since_kill + 5 * len(QUERIES), "more answers after the kill"
            )
            stop_load.set()
            assert errors == []
            assert served.adapter.statistics()[0].state is not State.HEALTHY

            # Heads keep coming, now from the second upstream.
            mined = time.perf_counter()
            await mine(second)
            seen = await heights(heads, 0x2E)
            head_latency = time.perf_counter() - mined
            assert seen[-1] == (0x2E, await block_hash(second, 0x2E))

            # The first comes back on its port: probed back, then first in line again. It is
            # still at 0x2d (the second mined 0x2e), so eth_blockNumber says who answers.
            await first.restart()
            returned = time.perf_counter()
            await wait_for_state(served, 0, State.HEALTHY)
            back_in = time.perf_counter() - returned
            assert await broker.result("eth_blockNumber") == "0x2d"

            # Its own block 0x2e replaces the second's (a reorganisation at the same height).
            await mine(first)
            assert await heights(heads, 0x2E) == [(0x2E, await block_hash(first, 0x2E))]
        print(
            f"\nfailover after kill -9: {failover * 1e3:.0f} ms ({answered} answers under load, "
            f"0 errors); head from the second upstream {head_latency * 1e3:.0f} ms after mining; "
            f"restarted upstream back in service {back_in * 1e3:.0f} ms after it listened"
        )
        nursery.cancel_scope.cancel()


async def heights(conn: Dapp, until: int) -> list[tuple[int, str]]:
    """(number, hash) of the heads received up to and including height ``until``."""
    found: list[tuple[int, str]] = []
    while not found or found[-1][0] < until:
        (head,) = await notifications(conn, 1)
        found.append((int(head["number"], 16), head["hash"]))
    return found


async def test_heights_missed_during_a_websocket_outage_arrive_in_order_once(
    nursery: trio.Nursery, caplog: pytest.LogCaptureFixture
) -> None:
    with trio.fail_after(120):
        node = await start_scopecast(nursery, "--block-time", "0")
        proxy = TcpProxy(node.port)
        await nursery.start(proxy.serve)
        through_proxy = f"ws://127.0.0.1:{proxy.port}/ws/v3/dev"
        served = await serve_broker(
            nursery,
            DEV_CHAIN,
            [upstream_entry(node, ws=through_proxy)],
            poll_interval=30,
            ws_ping_interval=0.5,
        )
        async with http_client() as http, subscribed(served.ws_url, "newHeads") as (heads, _):
            upstream = Client(http, node.http_url())
            start = int(await upstream.result("eth_blockNumber"), 16)
            await mine(node, 2)
            seen = await heights(heads, start + 2)

            # Cut: the connection drops and reconnecting fails for a while.
            proxy.cut()
            await mine(node, 3)
            await proxy.wait_until(lambda proxy: proxy.refused >= 2)
            restored = time.perf_counter()
            proxy.restore()
            seen += await heights(heads, start + 5)
            after_cut = time.perf_counter() - restored
            # (They may come by HTTP first: the pause below is of a WebSocket that follows again.)
            await eventually(
                lambda: caplog.text.count("following newHeads over") == 2, "the WebSocket is back"
            )

            # Pause: the connection stays open but nothing passes, then everything at once.
            proxy.pause()
            await mine(node, 3)
            await proxy.wait_until(lambda proxy: proxy.held >= 1)  # the heads, held
            proxy.resume()
            seen += await heights(heads, start + 8)

            # A stall that lasts: the unanswered ping gives the connection up, and heads come
            # by HTTP while the WebSocket stays stuck.
            proxy.pause()
            stalled = time.perf_counter()
            await mine(node, 2)
            seen += await heights(heads, start + 10)
            via_http = time.perf_counter() - stalled
            proxy.resume()
            await mine(node)
            seen += await heights(heads, start + 11)
            numbers = [number for number, _hash in seen]
            assert numbers[0] <= start + 1
            assert numbers == list(range(numbers[0], start + 12)), numbers
            for number, head_hash in seen:
                assert head_hash == await block_hash(node, number)
        print(
            f"\nafter the cut, the missed heights arrived {after_cut * 1e3:.0f} ms after the "
            f"WebSocket was restored; during a stall they came over HTTP after {via_http:.1f} s "
            f"({proxy.connections_made} connections through the proxy)"
        )
        nursery.cancel_scope.cancel()


async def token_address(node: ScopecastProcess) -> str:
    logs = await node.result("eth_getLogs", [{"fromBlock": "earliest", "topics": [TRANSFER]}])
    assert logs, "the dev chain deploys its demo token at start"
    return str(logs[0]["address"])


async def transfer(node: ScopecastProcess, token: str, to: str, amount: int) -> str:
    """A demo token transfer signed by the upstream's dev keyring; the dev chain mines it."""
    data = "0xa9059cbb" + to[2:].rjust(64, "0") + hex(amount)[2:].rjust(64, "0")
    nonce = await node.result("eth_getTransactionCount", [DEV_SENDER, "latest"])
    signed = await node.result(
        "eth_signTransaction",
        [
            {
                "type": "0x2",
                "from": DEV_SENDER,
                "to": token,
                "value": "0x0",
                "data": data,
                "nonce": nonce,
                "gasLimit": "0x30000",
                "maxFeePerGas": "0x77359400",
                "maxPriorityFeePerGas": "0x1",
                "chainId": "0x539",
            }
        ],
    )
    return str(await node.result("eth_sendRawTransaction", [signed["raw"]]))


async def test_a_reorg_on_the_upstream_reaches_log_subscribers_as_removed_logs(
    nursery: trio.Nursery,
) -> None:
    with trio.fail_after(120):
        node = await start_scopecast(nursery, "--block-time", "0")
        served = await serve_broker(nursery, DEV_CHAIN, [upstream_entry(node)])
        token = await token_address(node)
        async with subscribed(served.ws_url, "logs", {"address": token}) as (logs, _):
            start = int(await node.result("eth_blockNumber"), 16)
            snapshot = await node.result("evm_snapshot")
            first = await transfer(node, token, "0x" + "a1" * 20, 7)
            (old,) = await notifications(logs, 1)
            while old["transactionHash"] != first:
                # The head the broker found at start may be reported after we subscribed.
                assert int(old["blockNumber"], 16) <= start
                (old,) = await notifications(logs, 1)
            assert old["removed"] is False

            assert await node.result("evm_revert", [snapshot]) is True
            second = await transfer(node, token, "0x" + "b0" * 20, 8)
            removed, new = await notifications(logs, 2)
            assert removed == {**old, "removed": True}
            assert (new["transactionHash"], new["removed"]) == (second, False)
            assert new["blockNumber"] == old["blockNumber"]
            assert new["blockHash"] != old["blockHash"]
        nursery.cancel_scope.cancel()


async def test_without_a_websocket_heads_come_by_polling_in_order(nursery: trio.Nursery) -> None:
    with trio.fail_after(60):
        node = await start_scopecast(nursery, "--block-time", "0")
        served = await serve_broker(
            nursery, DEV_CHAIN, [upstream_entry(node, ws=None)], poll_interval=0.3
        )
        async with subscribed(served.ws_url, "newHeads") as (heads, _):
            start = int(await node.result("eth_blockNumber"), 16)
            await mine(node, 4)  # faster than the polls: the tracker fetches what they skip
            seen = await heights(heads, start + 4)
            await mine(node)
            seen += await heights(heads, start + 5)
        numbers = [number for number, _hash in seen]
        assert numbers == list(range(numbers[0], start + 6)), numbers
        nursery.cancel_scope.cancel()
