"""Solana's PubSub through the broker's chain-family hook, on the default `solana` network: the
subscriptions Solana defines with integer ids, over `/solana/ws/v3/<KEY>` and inside a session
beside an `eip155` one on one socket, one-shot `signatureSubscribe`, resume, and README's worked
example."""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import quote

import trio
from solders.hash import Hash
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.system_program import TransferParams, transfer
from solders.transaction import Transaction

from adapters._ed25519 import DEV_MNEMONIC, derive_keypairs
from tests.broker.test_subscriptions_e2e import mine
from tests.support.inprocess import Dapp, RunningBroker, dapp
from tests.test_docs import ROOT, blocks, curl_calls, json_values, matches

SOLANA = "solana"
EVM = "eip155:1337"
(ALICE,) = derive_keypairs(DEV_MNEMONIC, 1)


async def solana_rpc(node: RunningBroker, method: str, *params: Any) -> Any:
    reply = await node.rpc(method, list(params), network=SOLANA)
    assert "error" not in reply, reply
    return reply["result"]


async def chain_id(node: RunningBroker) -> str:
    return f"solana:{(await solana_rpc(node, 'getGenesisHash'))[:32]}"


async def signed_transfer(node: RunningBroker, to: str, lamports: int) -> tuple[str, str]:
    """A transfer from the first dev account: (its signature, the transaction in base64)."""
    blockhash = (await solana_rpc(node, "getLatestBlockhash"))["value"]["blockhash"]
    message = Message(
        [
            transfer(
                TransferParams(
                    from_pubkey=ALICE.pubkey(),
                    to_pubkey=Pubkey.from_string(to),
                    lamports=lamports,
                )
            )
        ],
        ALICE.pubkey(),
    )
    tx = Transaction([ALICE], message, Hash.from_string(blockhash))
    return str(tx.signatures[0]), base64.b64encode(bytes(tx)).decode()


def inner(message: dict[str, Any]) -> dict[str, Any]:
    """A Solana notification's params (``{subscription, result}``), direct or in a session."""
    if message["method"] == "wallet_notify":
        notification: dict[str, Any] = message["params"]["notification"]
        return notification
    return message


async def next_of(conn: Dapp, method: str) -> dict[str, Any]:
    while True:
        message = inner(await conn.notification())
        if message["method"] == method:
            return message


async def test_slot_account_and_signature_subscriptions(node: RunningBroker) -> None:
    address = str(Keypair().pubkey())
    with trio.fail_after(30):
        async with dapp(node.ws_url(network=SOLANA)) as conn:
            slots = await conn.result("slotSubscribe", [])
            account = await conn.result("accountSubscribe", [address, {"encoding": "base64"}])
            assert isinstance(slots, int)
            assert isinstance(account, int)
            assert slots != account
            signature, tx = await signed_transfer(node, address, 5_000_000)
            one_shot = await conn.result("signatureSubscribe", [signature])
            assert await solana_rpc(node, "sendTransaction", tx, {"encoding": "base64"}) == (
                signature
            )
            seen: dict[str, dict[str, Any]] = {}
            while len(seen) < 3:
                message = inner(await conn.notification())
                seen.setdefault(message["method"], message)
            slot = seen["slotNotification"]
            assert slot["params"]["subscription"] == slots
            assert set(slot["params"]["result"]) == {"parent", "root", "slot"}
            written = seen["accountNotification"]
            assert written["params"]["subscription"] == account
            value = written["params"]["result"]["value"]
            assert value["lamports"] == 5_000_000
            assert value["data"] == ["", "base64"]
            landed = seen["signatureNotification"]
            context = landed["params"]["result"]["context"]
            assert landed["params"] == {
                "subscription": one_shot,
                "result": {"context": context, "value": {"err": None}},
            }
            # signatureSubscribe ends with its notification; the others go on until ended.
            ended = await conn.call("signatureUnsubscribe", [one_shot])
            assert ended["error"]["code"] == -32602
            assert await conn.result("slotUnsubscribe", [slots]) is True
            assert await conn.result("accountUnsubscribe", [account]) is True
            again = await conn.call("accountUnsubscribe", [account])
            assert again["error"]["code"] == -32602


async def test_solana_subscriptions_need_the_solana_network_and_a_websocket(
    node: RunningBroker,
) -> None:
    with trio.fail_after(30):
        async with dapp(node.ws_url()) as evm:  # the default network is the EVM dev chain
            refused = await evm.call("slotSubscribe", [])
            assert refused["error"]["code"] == -32601
        over_http = await node.rpc("slotSubscribe", [], network=SOLANA)
        assert over_http["error"]["code"] == -32601
        assert "notifications not supported" in over_http["error"]["message"]
        async with dapp(node.ws_url(network=SOLANA)) as conn:
            bad = await conn.call("accountSubscribe", ["not-base58!"])
            assert bad["error"]["code"] == -32602


async def test_one_session_holds_an_evm_and_a_solana_subscription_on_one_socket(
    node: RunningBroker,
) -> None:
    solana = await chain_id(node)
    address = str(Keypair().pubkey())
    scopes = {
        EVM: {"methods": ["eth_subscribe"], "notifications": ["eth_subscription"]},
        solana: {"methods": ["accountSubscribe"], "notifications": ["accountNotification"]},
    }
    with trio.fail_after(30):
        async with dapp(node.ws_url(), origin="https://both.example") as conn:
            created = await conn.result("wallet_createSession", {"optionalScopes": scopes})
            assert set(created["sessionScopes"]) == {EVM, solana}
            heads = await conn.result(
                "wallet_invokeMethod",
                {"scope": EVM, "request": {"method": "eth_subscribe", "params": ["newHeads"]}},
            )
            account = await conn.result(
                "wallet_invokeMethod",
                {
                    "scope": solana,
                    "request": {"method": "accountSubscribe", "params": [address]},
                },
            )
            assert heads["result"]["method"] == "eth_subscribe"
            assert account == {
                "scope": solana,
                "result": {"method": "accountSubscribe", "result": 1},
            }
            await mine(node)
            await solana_rpc(node, "requestAirdrop", address, 7_000_000)
            seen: dict[str, dict[str, Any]] = {}
            while len(seen) < 2:
                message = await conn.notification()
                assert message["method"] == "wallet_notify"
                seen[message["params"]["scope"]] = message["params"]["notification"]
            assert seen[EVM]["method"] == "eth_subscription"
            assert seen[EVM]["params"]["subscription"] == heads["result"]["result"]
            assert seen[solana]["method"] == "accountNotification"
            assert seen[solana]["params"]["subscription"] == account["result"]["result"]
            assert seen[solana]["params"]["result"]["value"]["lamports"] == 7_000_000
            # A notification the session did not grant is refused.
            refused = await conn.call(
                "wallet_invokeMethod",
                {"scope": solana, "request": {"method": "slotSubscribe", "params": []}},
            )
            assert refused["error"]["code"] == 4100


async def test_a_solana_subscription_resumes_after_a_drop(node: RunningBroker) -> None:
    address = str(Keypair().pubkey())
    with trio.fail_after(30):
        async with dapp(node.ws_url(network=SOLANA)) as conn:
            account = await conn.result("accountSubscribe", [address])
            await solana_rpc(node, "requestAirdrop", address, 1_000_000)
            await next_of(conn, "accountNotification")
            cursor = conn.last_cursor
        assert cursor is not None
        for _ in range(2):
            await solana_rpc(node, "requestAirdrop", address, 1_000_000)
        url = f"{node.ws_url(network=SOLANA)}?resume={quote(cursor)}"
        async with dapp(url) as again:
            replayed = [await again.notification() for _ in range(2)]
            assert [m["params"]["subscription"] for m in replayed] == [account, account]
            assert [m["params"]["result"]["value"]["lamports"] for m in replayed] == [
                2_000_000,
                3_000_000,
            ]
            done = await again.notification()
            assert done["method"] == "scopecast_resumed"
            assert done["params"] == {"replayed": 2, "complete": True}


async def test_the_evm_profile_is_not_served_on_the_solana_network(node: RunningBroker) -> None:
    with trio.fail_after(30):
        for method, params in [("eth_newFilter", [{}]), ("eth_newBlockFilter", [])]:
            reply = await node.rpc(method, params, network=SOLANA)
            assert reply["error"]["code"] == -32601, reply
            assert (await node.rpc(method, params))["result"]  # the EVM network serves them
        async with dapp(node.ws_url(network=SOLANA)) as conn:
            refused = await conn.call("eth_subscribe", ["newHeads"])
            assert refused["error"]["code"] == -32601
        listed = {m["name"] for m in (await solana_rpc(node, "rpc.discover"))["methods"]}
        assert "slotSubscribe" in listed
        assert not listed & {"eth_subscribe", "eth_newFilter", "eth_getFilterChanges"}


async def test_the_readme_subscription_example(node: RunningBroker) -> None:
    """README's Solana subscription, block by block, on a fresh broker: the request and its reply,
    the airdrop (the curl), the notification as shown."""
    readme = [b for b in blocks(ROOT / "README.md") if b.kind in ("json", "sh")]
    start = next(i for i, b in enumerate(readme) if '"accountSubscribe"' in b.text)
    request, reply, airdrop, notification = readme[start : start + 4]
    assert airdrop.kind == "sh"
    with trio.fail_after(30):
        async with dapp(node.ws_url(network=SOLANA)) as conn:
            (sent,) = json_values(request.text)
            await conn.ws.send_message(json.dumps(sent))
            answered = json.loads(await conn.ws.get_message())
            assert [answered] == json_values(reply.text)
            ((path, body),) = curl_calls(airdrop.text)
            assert path == "/solana/v3/dev"
            landed = await node.rpc("requestAirdrop", json.loads(body)["params"], network=SOLANA)
            assert "result" in landed, landed
            received = json.loads(await conn.ws.get_message())
            (shown,) = json_values(notification.text)
            assert matches(shown, received), received


async def test_signature_subscribe_after_landing_notifies_at_once(node: RunningBroker) -> None:
    """A signature that already has a status (every slot is final at once) is notified after
    the subscription id (one slot time later, as a validator would at its next slot), as
    confirmation helpers that subscribe after sending expect."""
    signature, tx = await signed_transfer(node, str(Keypair().pubkey()), 1_000_000)
    await solana_rpc(node, "sendTransaction", tx, {"encoding": "base64"})
    slot = (await solana_rpc(node, "getSignatureStatuses", [signature]))["value"][0]["slot"]
    with trio.fail_after(30):
        async with dapp(node.ws_url(network=SOLANA)) as conn:
            request = {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "signatureSubscribe",
                "params": [signature, {"commitment": "finalized"}],
            }
            await conn.ws.send_message(json.dumps(request))
            answer = json.loads(await conn.ws.get_message())
            notified = json.loads(await conn.ws.get_message())
            assert answer["id"] == 7  # the id first, then the notification
            sub_id = answer["result"]
            assert notified["method"] == "signatureNotification"
            assert notified["params"]["subscription"] == sub_id
            assert notified["params"]["result"] == {
                "context": {"slot": slot},
                "value": {"err": None},
            }
            # it ended with its one notification
            ended = await conn.call("signatureUnsubscribe", [sub_id])
            assert ended["error"]["code"] == -32602
            # a signature with no status yet waits, as before
            waiting = await conn.result("signatureSubscribe", [str(Keypair().sign_message(b"x"))])
            assert await conn.result("signatureUnsubscribe", [waiting]) is True
