"""``signatureStatusSubscribe`` through the ``solana-upstream`` adapter, a ``scopecast serve``
Solana dev chain playing the node: a signature that landed before the subscription is notified at
once (its status asked of the node), one sent after is followed to finalized, and one whose
blockhash expires unsent is reported as dropped."""

from __future__ import annotations

from typing import Any

import trio

from tests.support.inprocess import Dapp, dapp

from .nodes import (
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

LIFE = [("included", "processed"), ("confirmed", "confirmed"), ("finalized", "finalized")]


async def steps(conn: Dapp, sub: int, count: int) -> list[dict[str, Any]]:
    found = []
    while len(found) < count:
        message = await conn.notification()
        if message["method"] != "signatureStatusNotification":
            continue
        assert message["params"]["subscription"] == sub
        found.append(message["params"]["result"])
    return found


def brief(results: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    return [(r["status"], r["commitment"]) for r in results]


async def test_landed_followed_and_dropped_signatures(nursery: trio.Nursery) -> None:
    with trio.fail_after(90):
        node = await solana_node(nursery)
        served = await front(nursery, [entry(node)])
        url = served.http_url
        before, tx = await signed_transfer(url, fresh_address(), 1_000_000)
        await result(url, "sendTransaction", tx, {"encoding": "base64"})
        landed = (await node_result(node, "getSignatureStatuses", [before]))["value"][0]
        async with dapp(served.ws_url) as conn:
            early = await conn.result("signatureStatusSubscribe", [before])
            results = await steps(conn, early, 3)
            assert brief(results) == LIFE
            assert {r["slot"] for r in results} == {landed["slot"]}

            after, tx = await signed_transfer(url, fresh_address(), 2_000_000)
            followed = await conn.result("signatureStatusSubscribe", [after])
            await result(url, "sendTransaction", tx, {"encoding": "base64"})
            await advance(node, 1)
            results = await steps(conn, followed, 3)
            assert brief(results) == LIFE
            assert {r["hash"] for r in results} == {after}
            ended = await conn.call("signatureStatusUnsubscribe", [followed])
            assert ended["error"]["code"] == -32602

            latest = (await result(url, "getLatestBlockhash"))["value"]
            unsent, _ = await signed_transfer(url, fresh_address(), 3_000_000)
            options = {"lastValidBlockHeight": latest["lastValidBlockHeight"]}
            doomed = await conn.result("signatureStatusSubscribe", [unsent, options])
            height = await result(url, "getBlockHeight")
            await advance(node, latest["lastValidBlockHeight"] - height + 1)
            (dropped,) = await steps(conn, doomed, 1)
            assert (dropped["hash"], dropped["status"]) == (unsent, "dropped")


async def test_a_sent_transaction_that_never_lands_is_dropped_without_the_option(
    nursery: trio.Nursery,
) -> None:
    with trio.fail_after(90):
        node = await solana_node(nursery)
        served = await front(nursery, [entry(node)])
        url = served.http_url
        landed, tx = await signed_transfer(url, fresh_address(), 1_000_000)
        await result(url, "sendTransaction", tx, {"encoding": "base64"})
        built = (await result(url, "getLatestBlockhash"))["value"]
        doomed, tx = await signed_transfer(url, fresh_address(), 2_000_000)
        # Its blockhash expires on the node before the send reaches it: the node accepts it
        # (preflight skipped) and drops it, as a Solana leader does.
        height = await node_result(node, "getBlockHeight")
        await advance(node, built["lastValidBlockHeight"] - height + 1)
        # Refused by the node's preflight (the blockhash expired): its error comes back as is.
        refused = await rpc(url, "sendTransaction", tx, {"encoding": "base64"})
        assert refused["error"]["code"] == -32002
        options = {"encoding": "base64", "skipPreflight": True}
        assert await result(url, "sendTransaction", tx, options) == doomed
        # The front knows only an upper bound of its last valid height: the newest blockhash's.
        bound = (await node_result(node, "getLatestBlockhash"))["value"]["lastValidBlockHeight"]
        async with dapp(served.ws_url) as conn:
            followed = await conn.result("signatureStatusSubscribe", [doomed])  # no height
            await advance(node, bound - await node_result(node, "getBlockHeight"))
            assert await node_result(node, "getBlockHeight") == bound
            # At the bound it is not dropped yet: the follower's look that notifies another
            # subscription's steps (steps() fails on any other subscription's) says nothing of it.
            other = await conn.result("signatureStatusSubscribe", [landed])
            assert brief(await steps(conn, other, 3)) == LIFE
            await advance(node, 1)
            (dropped,) = await steps(conn, followed, 1)
            assert (dropped["hash"], dropped["status"]) == (doomed, "dropped")
            statuses = await node_result(node, "getSignatureStatuses", [doomed])
            assert statuses["value"] == [None]
