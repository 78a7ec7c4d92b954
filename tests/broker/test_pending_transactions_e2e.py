"""``eth_subscribe ["newPendingTransactions"]`` on the dev chain over real WebSockets: hashes, the
whole transactions with ``true`` (as geth), directly and inside a session; and the account
methods anvil users reach for (``eth_sign``, ``eth_signTypedData``) inside a session."""

from __future__ import annotations

import trio
from eth_account import Account
from eth_account.messages import encode_defunct

from tests.adapters.keyring.test_typed_data import MAIL
from tests.support.inprocess import RunningBroker, dapp

DEV = "eip155:1337"
SENDER = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"
RECEIVER = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"


async def send(node: RunningBroker, value: int) -> str:
    reply = await node.rpc(
        "eth_sendTransaction", [{"from": SENDER, "to": RECEIVER, "value": hex(value)}]
    )
    assert "error" not in reply, reply
    return str(reply["result"])


async def test_hashes_and_whole_transactions_directly_and_in_a_session(
    node: RunningBroker,
) -> None:
    with trio.fail_after(30):
        async with (
            dapp(node.ws_url()) as direct,
            dapp(node.ws_url(), origin="https://dapp.example") as scoped,
        ):
            hashes = await direct.result("eth_subscribe", ["newPendingTransactions"])
            whole = await direct.result("eth_subscribe", ["newPendingTransactions", True])
            await scoped.result(
                "wallet_createSession",
                {
                    "optionalScopes": {
                        DEV: {"methods": ["eth_subscribe"], "notifications": ["eth_subscription"]}
                    }
                },
            )
            invoked = await scoped.result(
                "wallet_invokeMethod",
                {
                    "scope": DEV,
                    "request": {"method": "eth_subscribe", "params": ["newPendingTransactions"]},
                },
            )
            tx_hash = await send(node, 12345)
            got = {
                n["params"]["subscription"]: n["params"]["result"]
                for n in [await direct.notification(), await direct.notification()]
            }
            assert got[hashes] == tx_hash
            pending = got[whole]
            assert pending["hash"] == tx_hash
            assert pending["from"] == SENDER
            assert pending["to"] == RECEIVER
            assert pending["value"] == hex(12345)
            # announced as it entered the pool: not mined yet in what it says
            assert pending["blockHash"] is None
            assert pending["blockNumber"] is None
            note = await scoped.notification()
            assert note["method"] == "wallet_notify"
            assert note["params"]["scope"] == DEV
            inner = note["params"]["notification"]["params"]
            assert inner == {"subscription": invoked["result"]["result"], "result": tx_hash}
            # the transaction was mined at once (automine) and is the one announced
            receipt = (await node.rpc("eth_getTransactionReceipt", [tx_hash]))["result"]
            assert receipt["status"] == "0x1"


async def test_bad_params_and_unsubscribe(node: RunningBroker) -> None:
    with trio.fail_after(30):
        async with dapp(node.ws_url()) as conn:
            bad = await conn.call("eth_subscribe", ["newPendingTransactions", "yes"])
            assert bad["error"] == {
                "code": -32602,
                "message": "invalid argument 1: want true (whole transactions) or false",
            }
            unknown = await conn.call("eth_subscribe", ["newPendingTransaction"])
            assert unknown["error"]["data"] == {
                "supported": ["newHeads", "logs", "newPendingTransactions", "activity", "transaction"]
            }
            sub = await conn.result("eth_subscribe", ["newPendingTransactions", False])
            assert await conn.result("eth_unsubscribe", [sub]) is True
            await send(node, 1)
            assert await conn.result("eth_chainId", []) == "0x539"
            assert conn.notifications == []


async def test_eth_sign_and_eth_sign_typed_data_in_a_session(node: RunningBroker) -> None:
    with trio.fail_after(30):
        async with dapp(node.ws_url()) as conn:
            granted = await conn.result(
                "wallet_createSession",
                {
                    "optionalScopes": {
                        DEV: {"methods": ["eth_sign", "eth_signTypedData"], "notifications": []}
                    }
                },
            )
            assert granted["sessionScopes"][DEV]["methods"] == ["eth_sign", "eth_signTypedData"]
            account = granted["sessionScopes"][DEV]["accounts"][0].rsplit(":", 1)[1]
            signed = await conn.result(
                "wallet_invokeMethod",
                {"scope": DEV, "request": {"method": "eth_sign", "params": [account, "0x6869"]}},
            )
            signature = signed["result"]["result"]
            recovered = Account.recover_message(encode_defunct(b"hi"), signature=signature)
            assert recovered.lower() == account
            mail = {**MAIL, "domain": {**MAIL["domain"], "chainId": 1337}}
            typed = await conn.result(
                "wallet_invokeMethod",
                {
                    "scope": DEV,
                    "request": {"method": "eth_signTypedData", "params": [account, mail]},
                },
            )
            assert typed["result"]["result"].startswith("0x")
            # not granted: personal_sign was not requested
            refused = await conn.call(
                "wallet_invokeMethod",
                {"scope": DEV, "request": {"method": "personal_sign", "params": ["0x68", account]}},
            )
            assert refused["error"]["code"] == 4100
