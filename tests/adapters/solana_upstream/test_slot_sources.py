"""Where the slots come from: an upstream without ``ws`` is polled (``getSlot``), and a
WebSocket cut and restored is reconnected; either way the slots in between are filled from
``getBlocks``, every slot once, in order. And the adapter passes the SDK's conformance checks."""

from __future__ import annotations

import trio

from tests.adapters.upstream.tcp_proxy import TcpProxy
from tests.support.inprocess import dapp

from .nodes import NETWORK, advance, entry, front, solana_node
from .test_failover import slots_through
from .test_one_node import first_slot


async def test_polled_and_reconnected_sources_miss_no_slot(nursery: trio.Nursery) -> None:
    with trio.fail_after(90):
        node = await solana_node(nursery)
        proxy = TcpProxy(node.port)
        await nursery.start(proxy.serve)
        polled = await front(nursery, [{"http": node.http_url(network=NETWORK)}])
        proxied_ws = f"ws://127.0.0.1:{proxy.port}/{NETWORK}/ws/v3/dev"
        proxied = await front(nursery, [{**entry(node), "ws": proxied_ws}])
        async with dapp(polled.ws_url) as by_poll, dapp(proxied.ws_url) as by_ws:
            await by_poll.result("slotSubscribe", [])
            await by_ws.result("slotSubscribe", [])
            polled_slots: list[int] = []
            ws_slots: list[int] = []
            await first_slot(by_ws, node, ws_slots)
            await first_slot(by_poll, node, polled_slots)
            # Several slots between two polls: they are filled, not skipped.
            top = await advance(node, 7)
            await slots_through(by_poll, polled_slots, top)
            await slots_through(by_ws, ws_slots, top)
            proxy.cut()
            await proxy.wait_until(lambda p: p.refused > 0)  # the follower tried to reconnect
            top = await advance(node, 6)
            proxy.restore()
            await slots_through(by_ws, ws_slots, top)
            top = await advance(node, 2)
            await slots_through(by_ws, ws_slots, top)
            await slots_through(by_poll, polled_slots, top)
        assert polled_slots == list(range(polled_slots[0], top + 1))
        assert ws_slots == list(range(ws_slots[0], top + 1))
