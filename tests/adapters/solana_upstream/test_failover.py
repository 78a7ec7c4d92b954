"""Two Solana nodes (``scopecast serve`` processes) behind the ``solana-upstream`` adapter: a node
of another cluster left out at start, and failover when the first node is killed (``kill -9``)
or stopped (SIGSTOP): reads go on, a transaction is not sent twice, and subscribers see every
slot once, in order, across the switch."""

from __future__ import annotations

import logging
import os
import signal
from pathlib import Path

import pytest
import trio

from adapters.solana import dev_chain_id
from adapters.solana.upstream import NoUsableSolanaUpstream
from adapters.upstream import State
from tests.adapters.upstream.tcp_proxy import TcpProxy
from tests.support.inprocess import Dapp, dapp

from .nodes import (
    ALICE,
    NETWORK,
    advance,
    entry,
    fresh_address,
    front,
    level,
    node_result,
    result,
    rpc,
    signed_transfer,
    solana_nodes,
)
from .test_one_node import first_slot, next_of

ANOTHER_CLUSTER = dev_chain_id({"genesis_seed": "another cluster"})


def other_cluster(tmp_path: Path) -> Path:
    """A config whose Solana dev network is of another cluster (another genesis)."""
    config = tmp_path / "other.toml"
    config.write_text(
        f'[networks.solana]\nchain = "{ANOTHER_CLUSTER}"\nadapter = "solana-dev"\n'
        'genesis_seed = "another cluster"\n'
    )
    return config


async def slots_through(conn: Dapp, slots: list[int], top: int) -> None:
    while not slots or slots[-1] < top:
        await next_of(conn, "slotNotification", slots)


async def test_a_node_of_another_cluster_is_left_out(
    nursery: trio.Nursery, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with trio.fail_after(90):
        other, good = await solana_nodes(nursery, other_cluster(tmp_path), None)
        served = await front(nursery, [entry(other), entry(good)])
        states = [s.state for s in served.adapter.statistics()]
        assert states == [State.EXCLUDED, State.HEALTHY]
        owner = str(ALICE.pubkey())
        assert await result(served.http_url, "getBalance", owner) == await node_result(
            good, "getBalance", owner
        )
        (error,) = [r for r in caplog.records if r.levelno == logging.ERROR]
        message = error.getMessage()
        assert f"upstream 1 (127.0.0.1:{other.port})" in message
        assert "getGenesisHash" in message
        assert "/v3/" not in message  # a URL's path may hold an API key: never logged

        with pytest.raises(NoUsableSolanaUpstream) as raised:
            await front(nursery, [entry(other)])
        assert "wrong chain" in str(raised.value)
        assert "/v3/" not in str(raised.value)


async def test_kill_9_of_the_first_node(nursery: trio.Nursery) -> None:
    with trio.fail_after(120):
        first, second = await solana_nodes(nursery, None, None)
        await level(first, second)
        served = await front(nursery, [entry(first), entry(second)])
        url = served.http_url
        async with dapp(served.ws_url) as conn:
            await conn.result("slotSubscribe", [])
            slots: list[int] = []
            await first_slot(conn, first, slots)
            await slots_through(conn, slots, await advance(first, 3))
            await first.kill()
            # Reads go to the second node; the write too: it never reached the first.
            owner = str(ALICE.pubkey())
            assert await result(url, "getBalance", owner) == await node_result(
                second, "getBalance", owner
            )
            signature, tx = await signed_transfer(url, fresh_address(), 1_000_000_000)
            assert await result(url, "sendTransaction", tx, {"encoding": "base64"}) == signature
            status = await node_result(second, "getSignatureStatuses", [signature])
            assert status["value"][0] is not None
            # The second node's slots follow on from the first's: every slot once, in order.
            top = await advance(
                second, max(slots[-1] - await node_result(second, "getSlot"), 0) + 4
            )
            await slots_through(conn, slots, top)
        assert slots == list(range(slots[0], top + 1))


async def test_sigstop_of_the_first_node(nursery: trio.Nursery) -> None:
    with trio.fail_after(120):
        first, second = await solana_nodes(nursery, None, None)
        await level(first, second)
        served = await front(nursery, [entry(first), entry(second)])
        url = served.http_url
        assert first.pid is not None
        async with dapp(served.ws_url) as conn:
            await conn.result("slotSubscribe", [])
            slots: list[int] = []
            await first_slot(conn, first, slots)
            await slots_through(conn, slots, await advance(first, 2))
            os.kill(first.pid, signal.SIGSTOP)
            try:
                # The first node takes the transaction and never answers: it may have landed, so
                # it is not sent again to the second.
                signature, tx = await signed_transfer(
                    second.http_url(network="solana"), fresh_address(), 1_000_000_000
                )
                reply = await rpc(url, "sendTransaction", tx, {"encoding": "base64"})
                assert reply["error"]["code"] == -32000
                assert "may or may not have been applied" in reply["error"]["message"]
                status = await node_result(second, "getSignatureStatuses", [signature])
                assert status["value"] == [None]
                # Reads fail over; the slots go on from the second node once it is ahead.
                owner = str(ALICE.pubkey())
                assert await result(url, "getBalance", owner) == await node_result(
                    second, "getBalance", owner
                )
                behind = slots[-1] - await node_result(second, "getSlot")
                top = await advance(second, max(behind, 0) + 4)
                await slots_through(conn, slots, top)
            finally:
                os.kill(first.pid, signal.SIGCONT)
        assert slots == list(range(slots[0], top + 1))
        states = [s.state for s in served.adapter.statistics()]
        assert states[1] is State.HEALTHY


async def test_a_gap_is_not_filled_from_a_node_behind_it(nursery: trio.Nursery) -> None:
    # The first node (no WebSocket) answers reads first but lags; the follower follows the
    # second. Its WebSocket is cut while it runs ahead: on reconnecting, the slots in between
    # must come from a node that has them, not from the first (which would call them skipped).
    with trio.fail_after(120):
        behind, ahead = await solana_nodes(nursery, None, None)
        await level(behind, ahead)
        proxy = TcpProxy(ahead.port)
        await nursery.start(proxy.serve)
        proxied_ws = f"ws://127.0.0.1:{proxy.port}/{NETWORK}/ws/v3/dev"
        served = await front(
            nursery,
            [{"http": behind.http_url(network=NETWORK)}, {**entry(ahead), "ws": proxied_ws}],
        )
        async with dapp(served.ws_url) as conn:
            await conn.result("slotSubscribe", [])
            slots: list[int] = []
            await first_slot(conn, ahead, slots)
            await slots_through(conn, slots, await advance(ahead, 2))
            proxy.cut()
            await proxy.wait_until(lambda p: p.refused > 0)
            top = await advance(ahead, 7)
            await advance(behind, 1)  # moving, but still behind the gap's end
            assert await node_result(behind, "getSlot") < top - 1
            proxy.restore()
            await slots_through(conn, slots, top)
        assert slots == list(range(slots[0], top + 1))
