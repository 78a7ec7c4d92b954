"""One Solana node (a ``scopecast serve`` process) behind the ``solana-upstream`` adapter: calls
forwarded byte for byte, the dev chain's limits, Solana's PubSub over the node's slots and blocks
(every slot once, in order; transactions; accounts), the SDK's conformance checks, and the
response cache keeping only what is finalized."""

from __future__ import annotations

from typing import Any

import trio

from adapters.conformance import check_chain_adapter
from tests.support.inprocess import Dapp, dapp
from tests.support.processes import ScopecastProcess
from tests.support.waiting import eventually

from .nodes import (
    ALICE,
    advance,
    entry,
    fresh_address,
    front,
    node_result,
    result,
    rpc,
    signed_transfer,
    solana_node,
)


async def next_of(conn: Dapp, method: str, slots: list[int]) -> dict[str, Any]:
    """The next ``method`` notification; the slots notified meanwhile are appended to ``slots``."""
    while True:
        message = await conn.notification()
        if message["method"] == "slotNotification":
            slots.append(message["params"]["result"]["slot"])
        if message["method"] == method:
            return message


SYSTEM_PROGRAM = "11111111111111111111111111111111"


async def gather(conn: Dapp, counts: dict[str, int], slots: list[int]) -> dict[str, Any]:
    """The ``result`` of the next notifications of each method, as many as ``counts`` says, and
    under ``"order"`` the methods in the order they came; slots go to ``slots``."""
    found: dict[str, Any] = {method: [] for method in counts}
    found["order"] = []
    while any(len(found[method]) < count for method, count in counts.items()):
        message = await conn.notification()
        method = message["method"]
        if method == "slotNotification":
            slots.append(message["params"]["result"]["slot"])
        elif method in counts:
            found[method].append(message["params"]["result"])
            found["order"].append(method)
    return found


async def first_slot(conn: Dapp, node: ScopecastProcess, slots: list[int]) -> None:
    """Produce slots on ``node`` until one reaches the subscriber (the broker follows it)."""
    while not slots:
        await advance(node, 1)
        with trio.move_on_after(0.5):
            await next_of(conn, "slotNotification", slots)


async def test_calls_pubsub_and_limits_through_one_node(nursery: trio.Nursery) -> None:
    with trio.fail_after(90):
        node = await solana_node(nursery)
        served = await front(nursery, [entry(node)])
        await check_chain_adapter(served.adapter)  # the SDK's checks, a second follower too
        url = served.http_url
        assert await result(url, "getGenesisHash") == await node_result(node, "getGenesisHash")
        owner = str(ALICE.pubkey())
        assert await result(url, "getBalance", owner) == await node_result(
            node, "getBalance", owner
        )
        too_many = await rpc(url, "getMultipleAccounts", [owner] * 101)
        assert too_many["error"]["code"] == -32602
        assert "Too many inputs provided; max 100" in too_many["error"]["message"]
        not_a_list = await rpc(url, "getSlot")
        assert "result" in not_a_list
        unknown = await rpc(
            url, "scopecast_advanceSlots", 1
        )  # the node's dev method: not forwarded
        assert unknown["error"]["code"] == -32601

        to = fresh_address()
        async with dapp(served.ws_url) as conn:
            await conn.result("slotSubscribe", [])
            await conn.result("accountSubscribe", [to, {"encoding": "base64"}])
            await conn.result("programSubscribe", [SYSTEM_PROGRAM, {"encoding": "base64"}])
            slots: list[int] = []
            await first_slot(conn, node, slots)
            signature, tx = await signed_transfer(url, to, 1_000_000_000)
            await conn.result("signatureSubscribe", [signature])
            assert await result(url, "sendTransaction", tx, {"encoding": "base64"}) == signature
            await advance(node, 1)  # the transaction's slot closes: its block is complete
            found = await gather(
                conn,
                {"signatureNotification": 1, "accountNotification": 1, "programNotification": 2},
                slots,
            )
            landed = (await node_result(node, "getSignatureStatuses", [signature]))["value"][0]
            # The block's transactions first, then the accounts they wrote (as the dev chain).
            assert found["order"][0] == "signatureNotification"
            (status,) = found["signatureNotification"]
            assert status == {"context": {"slot": landed["slot"]}, "value": {"err": None}}
            (account,) = found["accountNotification"]
            assert account["value"]["lamports"] == 1_000_000_000
            assert account["context"]["slot"] >= landed["slot"]
            # Both accounts the transfer wrote are the system program's.
            owned = {item["value"]["pubkey"] for item in found["programNotification"]}
            assert owned == {str(ALICE.pubkey()), to}
            top = await advance(node, 5)
            while not slots or slots[-1] < top:
                await next_of(conn, "slotNotification", slots)
        assert slots == list(range(slots[0], top + 1))  # every slot once, in order


async def test_the_cache_keeps_finalized_answers_only(nursery: trio.Nursery) -> None:
    with trio.fail_after(90):
        node = await solana_node(nursery)
        served = await front(
            nursery,
            [{"http": node.http_url(network="solana")}],
            response_cache=1 << 20,
        )
        url = served.http_url
        signature, tx = await signed_transfer(url, str(ALICE.pubkey()), 1)
        await result(url, "sendTransaction", tx, {"encoding": "base64"})
        landed = (await node_result(node, "getSignatureStatuses", [signature]))["value"][0]["slot"]
        await advance(node, 2)
        await eventually(
            lambda: (served.adapter.reported_slot or 0) > landed,
            "the broker seeing the transaction's slot close",
        )
        kept = {
            "getGenesisHash": [],
            "getBlock": [landed],
            "getTransaction": [signature],
        }
        answers = {method: await result(url, method, *params) for method, params in kept.items()}
        assert await rpc(url, "getTransaction", "1" * 88) == await rpc(
            url, "getTransaction", "1" * 88
        )
        await node.kill()
        for method, params in kept.items():
            assert await result(url, method, *params) == answers[method], method
        for method, params in (("getSlot", []), ("getBalance", [str(ALICE.pubkey())])):
            reply = await rpc(url, method, *params)
            assert reply["error"]["message"] == "no upstream node available", method
        # Not found was not kept either: it may be found a moment later.
        reply = await rpc(url, "getTransaction", "1" * 88)
        assert reply["error"]["message"] == "no upstream node available"
