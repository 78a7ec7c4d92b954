"""The GC keeper (``broker.operator.gc_keeper``) freezes what survives a collection, which is safe only
because a connection that ends leaves no reference cycle: both are checked here, the second with
real connections (sessions, subscriptions, a notification) that end."""

from __future__ import annotations

import collections
import gc
import sys

import trio
import trio.testing

from broker.operator.gc_keeper import collect_and_freeze
from tests.support.cycles import collector_off, cyclic_garbage
from tests.support.inprocess import RunningBroker, dapp
from tests.support.waiting import eventually

DEV = "eip155:1337"


class _Kept:
    pass


def test_what_survives_is_frozen_and_what_is_new_is_collected() -> None:
    try:
        kept = _Kept()
        before = gc.get_freeze_count()
        collect_and_freeze()
        assert gc.get_freeze_count() > before
        assert not any(o is kept for o in gc.get_objects())  # out of the collector's sight
        cycle: list[object] = []
        cycle.append(cycle)
        del cycle
        assert gc.collect() >= 1  # what came after the freeze is still collected
    finally:
        gc.unfreeze()


async def test_connections_that_end_leave_no_cycle_for_the_collector(node: RunningBroker) -> None:
    scopes = {
        DEV: {
            "methods": ["eth_subscribe", "eth_unsubscribe"],
            "notifications": ["eth_subscription"],
        }
    }
    with trio.fail_after(60):
        gc.collect()
        with collector_off():
            for round_index in range(3):
                async with (
                    dapp(node.ws_url(), origin=f"https://a{round_index}.example") as session,
                    dapp(node.ws_url()) as direct,
                ):
                    await session.result("wallet_createSession", {"optionalScopes": scopes})
                    invoke = {"scope": DEV, "request": {"method": "eth_subscribe"}}
                    invoke["request"]["params"] = ["newHeads"]  # type: ignore[index]
                    await session.result("wallet_invokeMethod", invoke)
                    await direct.result("eth_subscribe", ["logs", {}])
                    await direct.result("eth_subscribe", ["newHeads"])
                    assert "error" not in await node.rpc("evm_mine", [])
                    await session.notification()
                    await direct.notification()
            await eventually(lambda: len(node.broker.connections) == 0, "the connections end")
            ours = list(cyclic_garbage(("broker", "adapters", "schemas")).elements())
    assert ours == [], collections.Counter(ours)


async def test_a_connection_is_freed_as_it_ends(node: RunningBroker) -> None:
    """No part of the broker holds an ended connection until later (the resume keeper's record
    flusher did, for each connection whose end dropped subscriptions: under load its backlog kept
    thousands of ended connections)."""
    with trio.fail_after(30):
        async with dapp(node.ws_url()) as direct:
            await direct.result("eth_subscribe", ["newHeads"])
            await direct.result("eth_subscribe", ["logs", {}])
            assert "error" not in await node.rpc("evm_mine", [])
            await direct.notification()  # a delivery step to a connection of two subscriptions
            (conn,) = node.broker.connections
        # Every task has run as far as it can (the flusher waits 50 ms before it writes); then
        # this test's name is the one reference left (getrefcount's argument is the other).
        while len(node.broker.connections):
            await trio.testing.wait_all_tasks_blocked()
        await trio.testing.wait_all_tasks_blocked()
        assert sys.getrefcount(conn) == 2, [type(r) for r in gc.get_referrers(conn)]
