"""``eth_subscribe ["transaction", {hash}]`` on the dev chain, over real WebSockets: a transfer
followed through included, confirmed (1, 6), removed by a reorganisation (``evm_revert``),
included again, confirmed (1, 6, 12) and finalized, after which the subscription has ended; the
same steps through ``wallet_invokeMethod`` in a session."""

from typing import Any

import trio
from eth_hash.auto import keccak

from tests.broker.test_subscriptions_e2e import mine
from tests.support.inprocess import Dapp, RunningBroker, dapp

DEV = "eip155:1337"
SENDER = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"


async def signed_transfer(node: RunningBroker) -> tuple[str, str]:
    """A value transfer from the first dev account, signed, not sent: (raw, hash)."""
    nonce = (await node.rpc("eth_getTransactionCount", [SENDER, "latest"]))["result"]
    tx = {
        "type": "0x2",
        "from": SENDER,
        "to": "0x" + "77" * 20,
        "value": "0x1",
        "data": "0x",
        "nonce": nonce,
        "gasLimit": "0x5208",
        "maxFeePerGas": "0x77359400",
        "maxPriorityFeePerGas": "0x1",
        "chainId": "0x539",
    }
    signed = (await node.rpc("eth_signTransaction", [tx]))["result"]
    raw = signed["raw"]
    return raw, "0x" + keccak(bytes.fromhex(raw[2:])).hex()


async def steps(conn: Dapp, count: int, sub: str, *, scoped: bool = False) -> list[dict[str, Any]]:
    found = []
    for _ in range(count):
        note = await conn.notification()
        if scoped:
            assert note["method"] == "wallet_notify"
            assert note["params"]["scope"] == DEV
            note = note["params"]["notification"]
        assert note["method"] == "eth_subscription"
        assert note["params"]["subscription"] == sub
        found.append(note["params"]["result"])
    return found


def brief(results: list[dict[str, Any]]) -> list[tuple[str, int | None]]:
    return [(r["status"], r["depth"]) for r in results]


async def test_a_transfer_is_followed_through_a_reorg_to_finality(node: RunningBroker) -> None:
    with trio.fail_after(60):
        async with (
            dapp(node.ws_url()) as direct,
            dapp(node.ws_url(), origin="https://t.example") as scoped,
        ):
            raw, tx_hash = await signed_transfer(node)
            sub = await direct.result("eth_subscribe", ["transaction", {"hash": tx_hash}])
            await scoped.result(
                "wallet_createSession",
                {
                    "optionalScopes": {
                        DEV: {
                            "methods": ["eth_subscribe", "eth_unsubscribe"],
                            "notifications": ["eth_subscription"],
                        }
                    }
                },
            )
            invoked = await scoped.result(
                "wallet_invokeMethod",
                {
                    "scope": DEV,
                    "request": {
                        "method": "eth_subscribe",
                        "params": ["transaction", {"hash": tx_hash}],
                    },
                },
            )
            scoped_sub = invoked["result"]["result"]
            snapshot = (await node.rpc("evm_snapshot", []))["result"]
            assert (await node.rpc("eth_sendRawTransaction", [raw]))["result"] == tx_hash
            first = await steps(direct, 1, sub)
            assert first[0]["status"] == "included"
            assert first[0]["receiptStatus"] == "0x1"
            assert first[0]["hash"] == tx_hash
            await mine(node, 6)
            assert brief(await steps(direct, 2, sub)) == [("confirmed", 1), ("confirmed", 6)]
            assert (await node.rpc("evm_revert", [snapshot]))["result"] is True
            await mine(node)  # the reorganisation: its block is gone
            removed = await steps(direct, 1, sub)
            assert removed[0]["status"] == "removed"
            assert removed[0]["blockHash"] == first[0]["blockHash"]
            assert (await node.rpc("eth_sendRawTransaction", [raw]))["result"] == tx_hash
            again = await steps(direct, 1, sub)
            assert again[0]["status"] == "included"
            assert again[0]["blockHash"] != first[0]["blockHash"]
            await mine(node, 12)
            rest = await steps(direct, 4, sub)
            assert brief(rest) == [
                ("confirmed", 1),
                ("confirmed", 6),
                ("confirmed", 12),
                ("finalized", 12),
            ]
            assert rest[-1]["blockHash"] == again[0]["blockHash"]
            ended = await direct.call("eth_unsubscribe", [sub])
            assert ended["error"]["message"] == "subscription not found"  # it ended itself
            in_session = await steps(scoped, 9, scoped_sub, scoped=True)
            assert [r["status"] for r in in_session] == [
                "included",
                "confirmed",
                "confirmed",
                "removed",
                "included",
                "confirmed",
                "confirmed",
                "confirmed",
                "finalized",
            ]
            await mine(node)
            assert direct.notifications == []


async def test_bad_transaction_params_get_clear_errors(node: RunningBroker) -> None:
    with trio.fail_after(30):
        async with dapp(node.ws_url()) as conn:
            for params in (["transaction"], ["transaction", {}], ["transaction", {"hash": "0x12"}]):
                reply = await conn.call("eth_subscribe", params)
                assert reply["error"]["code"] == -32602, params
