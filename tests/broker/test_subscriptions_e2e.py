"""Subscriptions over real WebSockets on the dev chain: newHeads, logs, reorgs, both forms."""

import json
from typing import Any

import trio

from tests.broker.test_outbox_steps import data_segments_in
from tests.support.inprocess import Dapp, RunningBroker, dapp
from tests.support.rawws import RawWebSocket

DEV = "eip155:1337"
TRANSFER = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"


async def mine(node: RunningBroker, count: int = 1) -> None:
    for _ in range(count):
        reply = await node.rpc("evm_mine", [])
        assert "error" not in reply, reply


async def token_address(node: RunningBroker) -> str:
    """The demo token: the contract whose Transfer logs the dev chain emits."""
    logs = (
        await node.rpc(
            "eth_getLogs", [{"fromBlock": "earliest", "toBlock": "latest", "topics": [TRANSFER]}]
        )
    )["result"]
    assert logs, "the dev chain deploys its token at start"
    return str(logs[0]["address"])


async def transfer(node: RunningBroker, token: str, to: str, amount: int) -> str:
    """Send a demo token transfer from the first dev account through the dev keyring; mine it."""
    data = "0xa9059cbb" + to[2:].rjust(64, "0") + hex(amount)[2:].rjust(64, "0")
    sender = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"
    nonce = (await node.rpc("eth_getTransactionCount", [sender, "latest"]))["result"]
    signed = (
        await node.rpc(
            "eth_signTransaction",
            [
                {
                    "type": "0x2",
                    "from": sender,
                    "to": token,
                    "value": "0x0",
                    "data": data,
                    "nonce": nonce,
                    "gasLimit": "0x30000",
                    "maxFeePerGas": "0x77359400",
                    "maxPriorityFeePerGas": "0x1",
                    "chainId": "0x539",
                }
            ],
        )
    )["result"]
    reply = await node.rpc("eth_sendRawTransaction", [signed["raw"]])
    assert "error" not in reply, reply
    return str(reply["result"])


async def heads(conn: Dapp, count: int) -> list[dict[str, Any]]:
    return [await conn.notification() for _ in range(count)]


async def test_three_blocks_give_three_heads_in_order_on_both_forms(node: RunningBroker) -> None:
    with trio.fail_after(30):
        async with (
            dapp(node.ws_url()) as direct,
            dapp(node.ws_url(), origin="https://d.example") as scoped,
        ):
            sub = await direct.result("eth_subscribe", ["newHeads"])
            assert sub.startswith("0x")
            assert len(sub) == 34
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
                {"scope": DEV, "request": {"method": "eth_subscribe", "params": ["newHeads"]}},
            )
            scoped_sub = invoked["result"]["result"]
            start = int(await direct.result("eth_blockNumber", []), 16)
            await mine(node, 3)
            got = await heads(direct, 3)
            assert [n["method"] for n in got] == ["eth_subscription"] * 3
            assert [n["params"]["subscription"] for n in got] == [sub] * 3
            assert [int(n["params"]["result"]["number"], 16) for n in got] == [
                start + 1,
                start + 2,
                start + 3,
            ]
            block = await direct.result("eth_getBlockByNumber", [hex(start + 3), False])
            assert got[2]["params"]["result"]["hash"] == block["hash"]
            assert got[1]["params"]["result"]["hash"] == block["parentHash"]

            notes = await heads(scoped, 3)
            assert [n["method"] for n in notes] == ["wallet_notify"] * 3
            assert notes[0]["params"]["scope"] == DEV
            inner = [n["params"]["notification"] for n in notes]
            assert [i["method"] for i in inner] == ["eth_subscription"] * 3
            assert [i["params"]["subscription"] for i in inner] == [scoped_sub] * 3
            assert [i["params"]["result"]["hash"] for i in inner] == [
                n["params"]["result"]["hash"] for n in got
            ]


async def test_unsubscribe_and_errors(node: RunningBroker) -> None:
    with trio.fail_after(30):
        async with dapp(node.ws_url()) as a, dapp(node.ws_url()) as b:
            sub = await a.result("eth_subscribe", ["newHeads"])
            assert (await b.call("eth_unsubscribe", [sub]))["error"] == {
                "code": -32000,
                "message": "subscription not found",
            }
            assert await a.result("eth_unsubscribe", [sub]) is True
            assert (await a.call("eth_unsubscribe", [sub]))["error"]["code"] == -32000
            assert (await a.call("eth_subscribe", ["newHeads", {}]))["error"]["code"] == -32602
            assert (await a.call("eth_subscribe", ["bogus"]))["error"]["code"] == -32601
            assert (await a.call("eth_subscribe", []))["error"]["code"] == -32602
            await mine(node)
            assert await a.result("eth_chainId", []) == "0x539"
            assert a.notifications == []
    reply = await node.rpc("eth_subscribe", ["newHeads"])
    assert reply["error"] == {"code": -32601, "message": "notifications not supported"}


async def test_log_subscription_gets_exactly_the_matching_logs(node: RunningBroker) -> None:
    token = await token_address(node)
    alice = "0x" + "a1" * 20
    bob = "0x" + "b0" * 20
    carol = "0x" + "c4" * 20
    to_topic = lambda a: "0x" + a[2:].rjust(64, "0")  # noqa: E731
    with trio.fail_after(30):
        async with dapp(node.ws_url()) as conn:
            sub = await conn.result(
                "eth_subscribe",
                [
                    "logs",
                    {
                        "address": token,
                        "topics": [TRANSFER, None, [to_topic(alice), to_topic(bob)]],
                    },
                ],
            )
            other = await conn.result("eth_subscribe", ["logs", {"address": "0x" + "99" * 20}])
            for who, amount in ((alice, 1), (carol, 2), (bob, 3)):
                await transfer(node, token, who, amount)
            got = [await conn.notification() for _ in range(2)]
            assert {n["params"]["subscription"] for n in got} == {sub}
            assert [int(n["params"]["result"]["data"], 16) for n in got] == [1, 3]
            assert all(n["params"]["result"]["removed"] is False for n in got)
            await mine(node)
            assert await conn.result("eth_unsubscribe", [other]) is True
            assert conn.notifications == []


async def test_reorg_delivers_removed_logs_before_the_new_ones(node: RunningBroker) -> None:
    token = await token_address(node)
    with trio.fail_after(30):
        async with dapp(node.ws_url()) as conn:
            await conn.result("eth_subscribe", ["logs", {"address": token}])
            snapshot = (await node.rpc("evm_snapshot", []))["result"]
            first = await transfer(node, token, "0x" + "a1" * 20, 7)
            old = await conn.notification()
            assert old["params"]["result"]["transactionHash"] == first
            assert (await node.rpc("evm_revert", [snapshot]))["result"] is True
            second = await transfer(node, token, "0x" + "b0" * 20, 8)
            removed = await conn.notification()
            assert removed["params"]["result"]["removed"] is True
            assert removed["params"]["result"]["transactionHash"] == first
            new = await conn.notification()
            assert new["params"]["result"]["removed"] is False
            assert new["params"]["result"]["transactionHash"] == second
            assert new["params"]["result"]["blockNumber"] == old["params"]["result"]["blockNumber"]


async def test_session_subscription_ends_with_its_scope(node: RunningBroker) -> None:
    with trio.fail_after(30):
        async with dapp(node.ws_url()) as conn:
            await conn.result(
                "wallet_createSession",
                {
                    "optionalScopes": {
                        DEV: {"methods": ["eth_subscribe"], "notifications": ["eth_subscription"]}
                    }
                },
            )
            await conn.result(
                "wallet_invokeMethod",
                {"scope": DEV, "request": {"method": "eth_subscribe", "params": ["newHeads"]}},
            )
            await conn.result("wallet_revokeSession", {})
            await mine(node, 2)
            assert await conn.result("eth_chainId", []) == "0x539"
            assert conn.notifications == []
            assert node.broker.hub.count() == 0


async def test_session_subscribe_needs_the_notification_granted(node: RunningBroker) -> None:
    with trio.fail_after(30):
        async with dapp(node.ws_url()) as conn:
            await conn.result(
                "wallet_createSession",
                {"optionalScopes": {DEV: {"methods": ["eth_subscribe"], "notifications": []}}},
            )
            reply = await conn.call(
                "wallet_invokeMethod",
                {"scope": DEV, "request": {"method": "eth_subscribe", "params": ["newHeads"]}},
            )
            assert reply["error"]["code"] == 4100


async def test_a_block_reaches_a_connection_in_one_write(node: RunningBroker) -> None:
    """A connection with several subscriptions (newHeads and two log filters) gets every frame a
    block makes for it (its head, the log once per matching subscription) in one write: the client
    counts the data segments it received."""
    token = await token_address(node)
    with trio.fail_after(30):
        raw = await RawWebSocket.connect(node.port, "/ws/v3/dev")
        try:
            ids = []
            wanted: list[list[Any]] = [
                ["newHeads"],
                ["logs", {"address": token}],
                ["logs", {"topics": [TRANSFER]}],
            ]
            for i, params in enumerate(wanted):
                await raw.call(
                    {"jsonrpc": "2.0", "id": i, "method": "eth_subscribe", "params": params}
                )
                ids.append((await raw.message())["result"])
            before = data_segments_in(raw.sock)
            await transfer(node, token, "0x" + "a1" * 20, 5)
            got: list[dict[str, Any]] = []
            pings = 0
            while len(got) < 3:
                frame = await raw.frame()
                assert frame is not None
                if frame[0] == 0x9:  # a heartbeat ping that fell in between: its own write
                    pings += 1
                    continue
                got.append(json.loads(frame[1]))
            subs = [n["params"]["subscription"] for n in got]
            assert subs[0] == ids[0], "the head first"
            assert sorted(subs[1:]) == sorted(ids[1:])
            assert data_segments_in(raw.sock) - before == 1 + pings
        finally:
            raw.close()


async def test_a_block_reaches_each_connection_in_one_write_across_slices(
    node: RunningBroker,
) -> None:
    """300 connections with newHeads and logs each, and slices cut as short as they go (a look at
    the clock every 256 frames ends one): the block's fan-outs take several slices, and each
    connection still gets its head and its log in one write."""
    token = await token_address(node)
    node.broker.hub.delivery.slice = 0.0
    with trio.fail_after(60):
        conns = [await RawWebSocket.connect(node.port, "/ws/v3/dev") for _ in range(300)]
        try:
            for raw in conns:
                await raw.send_many(
                    [
                        json.dumps(
                            {
                                "jsonrpc": "2.0",
                                "id": 1,
                                "method": "eth_subscribe",
                                "params": ["newHeads"],
                            }
                        ),
                        json.dumps(
                            {
                                "jsonrpc": "2.0",
                                "id": 2,
                                "method": "eth_subscribe",
                                "params": ["logs", {"address": token}],
                            }
                        ),
                    ]
                )
            for raw in conns:
                assert "result" in await raw.message()
                assert "result" in await raw.message()
            before = [data_segments_in(raw.sock) for raw in conns]
            await transfer(node, token, "0x" + "a1" * 20, 7)
            for raw, was in zip(conns, before, strict=True):
                got: list[str] = []
                pings = 0
                while len(got) < 2:
                    frame = await raw.frame()
                    assert frame is not None
                    if frame[0] == 0x9:
                        pings += 1
                        continue
                    got.append(json.loads(frame[1])["params"]["result"].get("logIndex", "head"))
                assert got == ["head", "0x0"]
                assert data_segments_in(raw.sock) - was == 1 + pings
        finally:
            for raw in conns:
                raw.close()
