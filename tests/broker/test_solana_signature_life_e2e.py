"""``signatureStatusSubscribe`` on the default ``solana`` dev network, over real WebSockets: a
transfer followed to finalized, directly and through ``wallet_invokeMethod`` in a session; a
signature that landed before its subscription; an expired blockhash reported as dropped; and
Solana webhooks (the lifecycle, ``accountSubscribe``, ``programSubscribe``,
``signatureSubscribe``) delivered to a receiver that verifies their signatures."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import trio
from solders.keypair import Keypair

from broker.compose import ServeOptions
from broker.config import Config
from tests.broker.test_solana_pubsub_e2e import chain_id, inner, signed_transfer, solana_rpc
from tests.broker.test_webhooks_e2e import FAST
from tests.support.inprocess import Dapp, RunningBroker, dapp, running_broker
from tests.support.waiting import eventually
from tests.support.webhook_receiver import Receiver, webhook_receiver

SOLANA = "solana"
SYSTEM = "11111111111111111111111111111111"
LIFE = [("included", "processed"), ("confirmed", "confirmed"), ("finalized", "finalized")]


async def steps(conn: Dapp, count: int, sub: int, *, scope: str | None = None) -> list[Any]:
    found = []
    for _ in range(count):
        message = await conn.notification()
        if scope is not None:
            assert message["method"] == "wallet_notify"
            assert message["params"]["scope"] == scope
        note = inner(message)
        assert note["method"] == "signatureStatusNotification"
        assert note["params"]["subscription"] == sub
        found.append(note["params"]["result"])
    return found


def brief(results: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    return [(r["status"], r["commitment"]) for r in results]


async def test_a_transfer_is_followed_to_finalized(node: RunningBroker) -> None:
    solana = await chain_id(node)
    to = str(Keypair().pubkey())
    with trio.fail_after(60):
        async with (
            dapp(node.ws_url(network=SOLANA)) as direct,
            dapp(node.ws_url(), origin="https://sol.example") as scoped,
        ):
            signature, tx = await signed_transfer(node, to, 3_000_000)
            sub = await direct.result("signatureStatusSubscribe", [signature])
            assert isinstance(sub, int)
            scopes = {
                solana: {
                    "methods": ["signatureStatusSubscribe"],
                    "notifications": ["signatureStatusNotification"],
                }
            }
            await scoped.result("wallet_createSession", {"optionalScopes": scopes})
            invoked = await scoped.result(
                "wallet_invokeMethod",
                {
                    "scope": solana,
                    "request": {"method": "signatureStatusSubscribe", "params": [signature]},
                },
            )
            scoped_sub = invoked["result"]["result"]
            sent = await solana_rpc(node, "sendTransaction", tx, {"encoding": "base64"})
            assert sent == signature
            results = await steps(direct, 3, sub)
            assert brief(results) == LIFE
            status = (await solana_rpc(node, "getSignatureStatuses", [signature]))["value"][0]
            for result in results:
                assert result["hash"] == signature
                assert result["slot"] == status["slot"]
                assert result["blockNumber"] == hex(status["slot"])
                assert result["receiptStatus"] == "0x1"
                assert result["err"] is None
            assert direct.last_cursor is not None  # a cursor, as every notification's
            ended = await direct.call("signatureStatusUnsubscribe", [sub])
            assert ended["error"]["code"] == -32602  # it ended itself
            assert brief(await steps(scoped, 3, scoped_sub, scope=solana)) == LIFE
            await solana_rpc(node, "scopecast_advanceSlots", 2)
            assert direct.notifications == []


async def test_a_signature_that_landed_before_is_notified_at_once(node: RunningBroker) -> None:
    to = str(Keypair().pubkey())
    with trio.fail_after(60):
        signature, tx = await signed_transfer(node, to, 1_000_000)
        await solana_rpc(node, "sendTransaction", tx, {"encoding": "base64"})
        async with dapp(node.ws_url(network=SOLANA)) as conn:
            sub = await conn.result("signatureStatusSubscribe", [signature])
            results = await steps(conn, 3, sub)
            assert brief(results) == LIFE
            assert {r["hash"] for r in results} == {signature}


async def test_an_expired_blockhash_is_reported_as_dropped(node: RunningBroker) -> None:
    to = str(Keypair().pubkey())
    with trio.fail_after(60):
        latest = (await solana_rpc(node, "getLatestBlockhash"))["value"]
        signature, tx = await signed_transfer(node, to, 1_000_000)  # never sent in time
        async with dapp(node.ws_url(network=SOLANA)) as conn:
            options = {"lastValidBlockHeight": latest["lastValidBlockHeight"]}
            sub = await conn.result("signatureStatusSubscribe", [signature, options])
            height = await solana_rpc(node, "getBlockHeight")
            # Up to its last valid height it may still land: nothing is said.
            await solana_rpc(
                node, "scopecast_advanceSlots", latest["lastValidBlockHeight"] - height
            )
            valid = await solana_rpc(node, "isBlockhashValid", latest["blockhash"])
            assert valid["value"] is True
            await solana_rpc(node, "scopecast_advanceSlots", 1)
            (dropped,) = await steps(conn, 1, sub)
            assert dropped == {
                "hash": signature,
                "status": "dropped",
                "commitment": None,
                "blockNumber": None,
                "slot": None,
                "blockHash": None,
                "depth": None,
                "receiptStatus": None,
                "err": None,
            }
            late = await node.rpc("sendTransaction", [tx, {"encoding": "base64"}], network=SOLANA)
            assert "error" in late  # the blockhash has expired indeed
            ended = await conn.call("signatureStatusUnsubscribe", [sub])
            assert ended["error"]["code"] == -32602


async def test_a_sent_transaction_that_never_lands_is_dropped_without_the_option(
    node: RunningBroker,
) -> None:
    to = str(Keypair().pubkey())
    with trio.fail_after(60):
        latest = (await solana_rpc(node, "getLatestBlockhash"))["value"]
        signature, tx = await signed_transfer(node, to, 1_000_000)
        # Sent one block after its blockhash's last valid height, preflight skipped: the dev
        # chain accepts it and its leader drops it, as Solana's does (an expired blockhash).
        height = await solana_rpc(node, "getBlockHeight")
        await solana_rpc(
            node, "scopecast_advanceSlots", latest["lastValidBlockHeight"] - height + 1
        )
        options = {"encoding": "base64", "skipPreflight": True}
        assert await solana_rpc(node, "sendTransaction", tx, options) == signature
        statuses = await solana_rpc(
            node, "getSignatureStatuses", [signature], {"searchTransactionHistory": True}
        )
        assert statuses["value"] == [None]
        async with dapp(node.ws_url(network=SOLANA)) as conn:
            sub = await conn.result("signatureStatusSubscribe", [signature])  # no height named
            (dropped,) = await steps(conn, 1, sub)
            assert (dropped["hash"], dropped["status"]) == (signature, "dropped")
            ended = await conn.call("signatureStatusUnsubscribe", [sub])
            assert ended["error"]["code"] == -32602


async def test_a_resumed_connection_takes_the_subscription_over(node: RunningBroker) -> None:
    to = str(Keypair().pubkey())
    with trio.fail_after(60):
        signature, tx = await signed_transfer(node, to, 2_000_000)
        async with dapp(node.ws_url(network=SOLANA)) as conn:
            slots = await conn.result("slotSubscribe", [])
            sub = await conn.result("signatureStatusSubscribe", [signature])
            await solana_rpc(node, "scopecast_advanceSlots", 1)
            assert inner(await conn.notification())["method"] == "slotNotification"
            cursor = conn.last_cursor
        assert cursor is not None
        # Away, the transaction lands and is finalized.
        await solana_rpc(node, "sendTransaction", tx, {"encoding": "base64"})
        async with dapp(f"{node.ws_url(network=SOLANA)}?resume={quote(cursor)}") as again:
            messages = [inner(await again.notification()) for _ in range(5)]
            methods = [m["method"] for m in messages]
            assert methods[0] == "slotNotification"  # the replay, then the live steps
            assert messages[0]["params"]["subscription"] == slots
            assert methods.count("scopecast_resumed") == 1
            # The signature's steps, from where it stands, under the same id.
            lived = [m["params"] for m in messages if m["method"] == "signatureStatusNotification"]
            assert {p["subscription"] for p in lived} == {sub}
            results = [p["result"] for p in lived]
            assert brief(results) == LIFE
            assert {r["hash"] for r in results} == {signature}
            ended = await again.call("signatureStatusUnsubscribe", [sub])
            assert ended["error"]["code"] == -32602
            assert await again.result("slotUnsubscribe", [slots]) is True


async def create(
    node: RunningBroker, receiver: Receiver, chain: str, method: str, params: list[Any]
) -> str:
    reply = await node.admin(
        "admin_createWebhook",
        {
            "url": receiver.url,
            "chain": chain,
            "subscription": {"method": method, "params": params},
            "allowPrivate": True,
        },
    )
    result = reply["result"]
    receiver.secrets[result["id"]] = result["secret"]
    return str(result["id"])


async def test_solana_webhooks_deliver_the_family_s_own_notifications() -> None:
    to = str(Keypair().pubkey())
    with trio.fail_after(60):
        async with (
            running_broker(ServeOptions(block_time=0), config=Config(server=FAST)) as node,
            webhook_receiver() as receiver,
        ):
            solana = await chain_id(node)
            signature, tx = await signed_transfer(node, to, 4_000_000)
            hooks = {
                await create(node, receiver, solana, "signatureStatusSubscribe", [signature]): (
                    "life"
                ),
                await create(node, receiver, solana, "accountSubscribe", [to]): "account",
                await create(
                    node,
                    receiver,
                    solana,
                    "programSubscribe",
                    [SYSTEM, {"filters": [{"dataSize": 0}], "encoding": "base64"}],
                ): "program",
                await create(node, receiver, solana, "signatureSubscribe", [signature]): "sig",
            }
            await solana_rpc(node, "sendTransaction", tx, {"encoding": "base64"})

            def once() -> list[Any]:
                """Each delivery once (a retry after a timeout may be accepted twice)."""
                return list({r.delivery_id: r for r in receiver.accepted}.values())

            def kinds() -> list[str]:
                return [hooks[r.body["webhook"]] for r in once()]

            await receiver.until(
                lambda: kinds().count("life") == 3 and {"account", "program", "sig"} <= set(kinds())
            )
            # The signature's webhook heard its one notification; another slot adds nothing.
            await solana_rpc(node, "scopecast_advanceSlots", 1)
            landed = await solana_rpc(node, "getSignatureStatuses", [signature])
            slot = landed["value"][0]["slot"]
            late = await solana_rpc(node, "requestAirdrop", to, 1_000_000)
            await receiver.until(lambda: kinds().count("account") == 2)
            assert late

            async def all_active() -> bool:
                listed = (await node.admin("admin_listWebhooks", {}))["result"]
                return {h["state"] for h in listed} == {"active"}

            await eventually(all_active, "every webhook active", every=0.1)
    assert receiver.bad_signatures == 0
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for received in once():
        body = received.body
        assert body["chain"] == solana
        assert body["notification"]["params"]["subscription"] == body["webhook"]
        by_kind.setdefault(hooks[body["webhook"]], []).append(body["notification"])
    life = [n["params"]["result"] for n in by_kind["life"]]
    assert {n["method"] for n in by_kind["life"]} == {"signatureStatusNotification"}
    assert brief(life) == LIFE
    assert {r["slot"] for r in life} == {slot}
    (sig,) = by_kind["sig"]
    assert sig["method"] == "signatureNotification"
    assert sig["params"]["result"] == {"context": {"slot": slot}, "value": {"err": None}}
    accounts = [n["params"]["result"] for n in by_kind["account"]]
    assert {n["method"] for n in by_kind["account"]} == {"accountNotification"}
    assert [a["value"]["lamports"] for a in accounts] == [4_000_000, 5_000_000]
    programs = [n["params"]["result"]["value"] for n in by_kind["program"]]
    assert {n["method"] for n in by_kind["program"]} == {"programNotification"}
    assert to in {p["pubkey"] for p in programs}
