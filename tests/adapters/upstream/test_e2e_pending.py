"""``eth_subscribe ["newPendingTransactions"]`` through the upstream adapter: the broker follows the
node's pool over its WebSocket (a real ``scopecast serve`` dev chain, which offers it) and hands
each announced transaction on, as a hash or whole; a network whose upstreams have no WebSocket
does not offer the subscription."""

from __future__ import annotations

import httpx
import trio

from tests.adapters.upstream.e2e import (
    DEV_CHAIN,
    http_client,
    notifications,
    serve_broker,
    subscribed,
    upstream_entry,
)
from tests.support.inprocess import dapp
from tests.support.processes import ScopecastProcess, start_scopecast
from tests.support.waiting import eventually

SENDER = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"
RECEIVER = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"


async def node_pending_subscriptions(http: httpx.AsyncClient, node: ScopecastProcess) -> int:
    """The broker's own subscriptions to the node's pool, as the node counts them."""
    text = (await http.get(f"http://127.0.0.1:{node.port}/metrics")).text
    prefix = 'scopecast_subscriptions{kind="newPendingTransactions"}'
    return sum(
        int(float(line.split()[-1])) for line in text.splitlines() if line.startswith(prefix)
    )


async def test_pending_transactions_come_through_from_the_node(nursery: trio.Nursery) -> None:
    with trio.fail_after(60):
        node = await start_scopecast(nursery, "--block-time", "0")
        served = await serve_broker(nursery, DEV_CHAIN, [upstream_entry(node)])
        url = f"ws://127.0.0.1:{served.port}/ws/v3/dev"
        async with (
            http_client() as http,
            subscribed(url, "newPendingTransactions") as (hashes, _),
            subscribed(url, "newPendingTransactions", True) as (whole, _),
        ):
            await eventually(
                lambda: node_pending_subscriptions(http, node),
                "the broker subscribed to the node's pending transactions",
            )
            sent = await node.result(
                "eth_sendTransaction", [{"from": SENDER, "to": RECEIVER, "value": "0x7"}]
            )
            assert await notifications(hashes, 1) == [sent]
            [announced] = await notifications(whole, 1)
            assert announced["hash"] == sent
            assert announced["from"] == SENDER
            assert announced["value"] == "0x7"


async def test_without_a_websocket_upstream_the_subscription_is_not_offered(
    nursery: trio.Nursery,
) -> None:
    with trio.fail_after(60):
        node = await start_scopecast(nursery, "--block-time", "0")
        served = await serve_broker(nursery, DEV_CHAIN, [upstream_entry(node, ws=None)])
        async with dapp(f"ws://127.0.0.1:{served.port}/ws/v3/dev") as conn:
            refused = await conn.call("eth_subscribe", ["newPendingTransactions"])
        assert refused["error"]["code"] == -32601
        assert refused["error"]["data"] == {"supported": ["newHeads", "logs", "activity", "transaction"]}
