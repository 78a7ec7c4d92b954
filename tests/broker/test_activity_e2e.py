"""Address activity (``eth_subscribe ["activity", {"address"}]``) over real WebSockets and a
webhook receiver on the py-evm dev chain: a transfer notifies the subscribers of its sender and
of its recipient once each, a token's logs still notify the addresses they name, and a
reorganisation (``evm_revert``, then a block) takes both back with ``"removed": true``."""

from typing import Any

import trio

from broker.compose import ServeOptions
from broker.config import Config
from tests.broker.test_subscriptions_e2e import mine, token_address, transfer
from tests.broker.test_webhooks_e2e import FAST, create
from tests.support.inprocess import Dapp, RunningBroker, dapp, running_broker
from tests.support.webhook_receiver import webhook_receiver

SENDER = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"
RECIPIENT = "0x" + "7b" * 20
ELSEWHERE = "0x" + "e1" * 20


async def send_value(node: RunningBroker, to: str, value: int = 1) -> str:
    """A value transfer from the first dev account (mined at once on the dev chain): its hash."""
    nonce = (await node.rpc("eth_getTransactionCount", [SENDER, "latest"]))["result"]
    tx = {
        "type": "0x2",
        "from": SENDER,
        "to": to,
        "value": hex(value),
        "data": "0x",
        "nonce": nonce,
        "gasLimit": "0x5208",
        "maxFeePerGas": "0x77359400",
        "maxPriorityFeePerGas": "0x1",
        "chainId": "0x539",
    }
    signed = (await node.rpc("eth_signTransaction", [tx]))["result"]
    reply = await node.rpc("eth_sendRawTransaction", [signed["raw"]])
    assert "error" not in reply, reply
    return str(reply["result"])


async def follow(conn: Dapp, address: str) -> str:
    return str(await conn.result("eth_subscribe", ["activity", {"address": address}]))


async def results(conn: Dapp, count: int, sub: str) -> list[dict[str, Any]]:
    found = []
    for _ in range(count):
        note = await conn.notification()
        assert note["method"] == "eth_subscription"
        assert note["params"]["subscription"] == sub
        found.append(note["params"]["result"])
    return found


def brief(result: dict[str, Any]) -> tuple[str, str, bool]:
    """(kind, transaction hash, removed) of an activity notification's result."""
    item = result[result["kind"]]
    tx_hash = item["hash"] if result["kind"] == "transaction" else item["transactionHash"]
    return result["kind"], tx_hash, result["removed"]


async def test_a_transfer_notifies_its_sender_and_recipient_once_each(node: RunningBroker) -> None:
    with trio.fail_after(60):
        async with (
            dapp(node.ws_url()) as sender,
            dapp(node.ws_url()) as recipient,
            dapp(node.ws_url()) as bystander,
        ):
            token = await token_address(node)
            from_sub = await follow(sender, SENDER)
            to_sub = await follow(recipient, RECIPIENT.upper().replace("0X", "0x"))
            other_sub = await follow(bystander, ELSEWHERE)
            paid = await send_value(node, RECIPIENT, 5)
            (sent,) = await results(sender, 1, from_sub)
            (received,) = await results(recipient, 1, to_sub)
            assert sent == received
            assert sent["kind"] == "transaction"
            assert sent["removed"] is False
            tx = sent["transaction"]
            assert (tx["hash"], tx["from"], tx["to"], tx["value"]) == (
                paid,
                SENDER,
                RECIPIENT,
                "0x5",
            )
            assert tx["blockHash"] is not None
            block = (await node.rpc("eth_getTransactionByHash", [paid]))["result"]
            assert tx["blockNumber"] == block["blockNumber"]
            # A token transfer: the transaction is the sender's (to the token); its Transfer log
            # names both (topics 1 and 2).
            moved = await transfer(node, token, RECIPIENT, 3)
            assert [brief(r) for r in await results(sender, 2, from_sub)] == [
                ("transaction", moved, False),
                ("log", moved, False),
            ]
            (logged,) = await results(recipient, 1, to_sub)
            assert brief(logged) == ("log", moved, False)
            assert logged["log"]["address"] == token
            assert logged["log"]["topics"][2] == "0x" + "0" * 24 + RECIPIENT[2:]
            await mine(node)  # a block without either: nothing
            last = await send_value(node, RECIPIENT)
            assert [brief(r) for r in await results(recipient, 1, to_sub)] == [
                ("transaction", last, False)
            ]
            assert [brief(r) for r in await results(sender, 1, from_sub)] == [
                ("transaction", last, False)
            ]
            await bystander.call("eth_unsubscribe", [other_sub])  # answered after any notification
            assert bystander.notifications == []
            assert sender.notifications == recipient.notifications == []


async def test_a_reorg_takes_the_transactions_and_logs_back_as_removed(node: RunningBroker) -> None:
    with trio.fail_after(60):
        async with dapp(node.ws_url()) as conn:
            token = await token_address(node)
            sub = await follow(conn, RECIPIENT)
            snapshot = (await node.rpc("evm_snapshot", []))["result"]
            paid = await send_value(node, RECIPIENT)
            moved = await transfer(node, token, RECIPIENT, 7)
            before = await results(conn, 2, sub)
            assert [brief(r) for r in before] == [
                ("transaction", paid, False),
                ("log", moved, False),
            ]
            assert (await node.rpc("evm_revert", [snapshot]))["result"] is True
            await mine(node, 3)  # a longer branch without them: a reorganisation
            removed = await results(conn, 2, sub)
            assert [brief(r) for r in removed] == [
                ("transaction", paid, True),
                ("log", moved, True),
            ]
            assert removed[0]["transaction"] == before[0]["transaction"]
            assert removed[1]["log"]["removed"] is True  # the log's own member says so too
            again = await send_value(node, RECIPIENT)
            assert [brief(r) for r in await results(conn, 1, sub)] == [
                ("transaction", again, False)
            ]


async def test_an_activity_webhook_gets_transactions_and_their_removal() -> None:
    with trio.fail_after(60):
        async with (
            running_broker(ServeOptions(block_time=0), config=Config(server=FAST)) as node,
            webhook_receiver() as receiver,
        ):
            await create(node, receiver, ["activity", {"address": RECIPIENT}])
            await send_value(node, ELSEWHERE)  # not the followed address
            snapshot = (await node.rpc("evm_snapshot", []))["result"]
            paid = await send_value(node, RECIPIENT)
            await receiver.until(lambda: len(receiver.accepted) >= 1)
            assert (await node.rpc("evm_revert", [snapshot]))["result"] is True
            await mine(node, 2)
            await receiver.until(lambda: len(receiver.accepted) >= 2)
    assert receiver.bad_signatures == 0
    bodies = [r.body["notification"]["params"]["result"] for r in receiver.accepted]
    assert [brief(b) for b in bodies] == [("transaction", paid, False), ("transaction", paid, True)]
    assert len({r.delivery_id for r in receiver.accepted}) == 2
