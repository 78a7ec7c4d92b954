"""Every node method and its error cases over HTTP and WebSocket, single and batched, on the dev chain."""

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
import trio
import trio_websocket
from eth_account import Account
from eth_utils import to_checksum_address

from adapters.devchain import DevChainAdapter
from adapters.devchain.token import transfer_calldata
from broker.compose import ServeOptions
from tests.support.inprocess import RunningBroker, running_broker

TRANSFER = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"
MISSING = "0x" + "ab" * 32

Send = Callable[[Any], Awaitable[Any]]


@asynccontextmanager
async def transport(node: RunningBroker, kind: str) -> AsyncIterator[Send]:
    if kind == "http":
        async with httpx.AsyncClient() as client:

            async def post(body: Any) -> Any:
                reply = await client.post(
                    node.http_url(),
                    content=json.dumps(body),
                    headers={"content-type": "application/json"},
                )
                assert reply.status_code == 200
                return reply.json() if reply.content else None

            yield post
    else:
        async with trio_websocket.open_websocket_url(node.ws_url()) as ws:

            async def send(body: Any) -> Any:
                await ws.send_message(json.dumps(body))
                return json.loads(await ws.get_message())

            yield send


def req(method: str, params: Any, request_id: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


@pytest.fixture
async def node() -> AsyncIterator[RunningBroker]:
    with trio.fail_after(60):
        async with running_broker(ServeOptions(block_time=0)) as running:
            # some blocks with token transfers so that logs, receipts and transactions exist
            for _ in range(3):
                assert "error" not in await running.rpc("evm_mine", [])
            yield running


@pytest.mark.parametrize("kind", ["http", "ws"])
async def test_every_node_method(node: RunningBroker, kind: str) -> None:
    with trio.fail_after(60):
        async with transport(node, kind) as send:
            await every_node_method(send)


#: Filter calls change what the next call sees (a new filter id, an uninstalled filter): replayed
#: in a batch they would not answer as they did one by one.
STATEFUL = frozenset(
    {"eth_newFilter", "eth_getFilterLogs", "eth_getFilterChanges", "eth_uninstallFilter"}
)


@pytest.mark.parametrize("kind", ["http", "ws"])
async def test_every_node_method_in_one_batch_answers_as_one_by_one(
    node: RunningBroker, kind: str
) -> None:
    with trio.fail_after(60):
        async with transport(node, kind) as send:
            singles: list[tuple[dict[str, Any], Any]] = []

            async def recording(body: Any) -> Any:
                reply = await send(body)
                singles.append((body, reply))
                return reply

            await every_node_method(recording)
            replayed = [(body, reply) for body, reply in singles if body["method"] not in STATEFUL]
            assert len(replayed) >= 25
            batch = [{**body, "id": n} for n, (body, _) in enumerate(replayed)]
            replies = await send(batch)
            assert isinstance(replies, list)
            by_id = {reply["id"]: reply for reply in replies}
            assert sorted(by_id) == list(range(len(batch)))
            for n, (body, single) in enumerate(replayed):
                assert by_id[n] == {**single, "id": n}, body


async def every_node_method(send: Send) -> None:
    """Call every node method once or more, asserting each reply (one call per ``send``)."""
    logs = (
        await send(
            req(
                "eth_getLogs",
                [{"fromBlock": "earliest", "toBlock": "latest", "topics": [TRANSFER]}],
            )
        )
    )["result"]
    assert logs, "the dev chain's token emitted Transfer logs"
    log = logs[0]
    assert set(log) >= {
        "removed",
        "logIndex",
        "transactionIndex",
        "transactionHash",
        "blockHash",
        "blockNumber",
        "address",
        "data",
        "topics",
    }
    assert log["removed"] is False

    by_hash = (await send(req("eth_getBlockByHash", [log["blockHash"], True])))["result"]
    by_number = (await send(req("eth_getBlockByNumber", [log["blockNumber"], True])))["result"]
    assert by_hash == by_number
    assert by_hash["hash"] == log["blockHash"]
    tx = next(t for t in by_hash["transactions"] if t["hash"] == log["transactionHash"])
    assert (await send(req("eth_getTransactionByHash", [tx["hash"]])))["result"] == tx
    assert (
        await send(
            req(
                "eth_getTransactionByBlockNumberAndIndex",
                [log["blockNumber"], tx["transactionIndex"]],
            )
        )
    )["result"] == tx
    hashes_only = (await send(req("eth_getBlockByNumber", [log["blockNumber"], False])))["result"]
    assert hashes_only["transactions"] == [t["hash"] for t in by_hash["transactions"]]

    receipt = (await send(req("eth_getTransactionReceipt", [tx["hash"]])))["result"]
    assert receipt["transactionHash"] == tx["hash"]
    assert receipt["logs"][0] == log
    receipts = (await send(req("eth_getBlockReceipts", [log["blockNumber"]])))["result"]
    assert receipt in receipts
    assert (await send(req("eth_getBlockReceipts", [by_hash["hash"]])))["result"] == receipts
    assert (await send(req("eth_getBlockReceipts", [int(log["blockNumber"], 16)])))[
        "result"
    ] == receipts

    latest = (await send(req("eth_getBlockByNumber", ["latest", False])))["result"]
    for tag in ("safe", "finalized"):
        assert (await send(req("eth_getBlockByNumber", [tag, False])))["result"][
            "number"
        ] == latest["number"]
    # pending: the block the pool would make next, as geth shows it (no hash, nonce or miner)
    pending = (await send(req("eth_getBlockByNumber", ["pending", False])))["result"]
    assert int(pending["number"], 16) == int(latest["number"], 16) + 1
    assert (pending["hash"], pending["nonce"], pending["miner"]) == (None, None, None)
    assert (await send(req("eth_getBlockReceipts", ["pending"])))["result"] == (
        await send(req("eth_getBlockReceipts", ["latest"]))
    )["result"]
    assert (await send(req("eth_getBlockByNumber", ["earliest", False])))["result"][
        "number"
    ] == "0x0"
    assert (await send(req("eth_blockNumber", [])))["result"] == latest["number"]
    assert (await send(req("eth_chainId", [])))["result"] == "0x539"
    assert (await send(req("eth_getUncleByBlockNumberAndIndex", ["latest", "0x0"])))[
        "result"
    ] is None

    # not found is null; no logs is []
    for method, params in [
        ("eth_getBlockByHash", [MISSING, False]),
        ("eth_getBlockByNumber", ["0xffffff", False]),
        ("eth_getTransactionByHash", [MISSING]),
        ("eth_getTransactionReceipt", [MISSING]),
        ("eth_getTransactionByBlockNumberAndIndex", ["latest", "0xff"]),
        ("eth_getBlockReceipts", ["0xffffff"]),
    ]:
        assert (await send(req(method, params))) == {
            "jsonrpc": "2.0",
            "id": 1,
            "result": None,
        }, method
    nothing = await send(
        req(
            "eth_getLogs",
            [{"fromBlock": "0x0", "toBlock": "latest", "address": "0x" + "00" * 20}],
        )
    )
    assert nothing["result"] == []

    # filters
    fid = (
        await send(
            req(
                "eth_newFilter",
                [{"fromBlock": "0x0", "toBlock": "latest", "topics": [TRANSFER]}],
            )
        )
    )["result"]
    assert (await send(req("eth_getFilterLogs", [fid])))["result"] == logs
    assert (await send(req("eth_getFilterChanges", [fid])))["result"] == []
    assert (await send(req("eth_uninstallFilter", [fid])))["result"] is True
    assert (await send(req("eth_uninstallFilter", [fid])))["result"] is False
    assert (await send(req("eth_getFilterChanges", [fid])))["error"] == {
        "code": -32000,
        "message": "filter not found",
    }
    pending_fid = (await send(req("eth_newFilter", [{"fromBlock": "pending"}])))["result"]
    assert (await send(req("eth_getFilterLogs", [pending_fid])))["error"]["code"] == -32602


@pytest.mark.parametrize("kind", ["http", "ws"])
async def test_errors_keep_the_connection_usable(node: RunningBroker, kind: str) -> None:
    with trio.fail_after(60):
        async with transport(node, kind) as send:
            cases: list[tuple[Any, int]] = [
                (req("eth_nope", []), -32601),
                (req("eth_getBlockByNumber", []), -32602),
                (req("eth_getBlockByNumber", ["0x1"]), -32602),
                (req("eth_getBlockByHash", ["0x1234", False]), -32602),
                (req("eth_getLogs", [{"blockhash": MISSING, "fromBlock": "0x1"}]), -32602),
                (req("eth_getLogs", [{"address": [f"0x{i:040x}" for i in range(5001)]}]), -32602),
                (req("eth_getTransactionByHash", "not-an-array"), -32602),
                ({"jsonrpc": "2.0", "id": 1}, -32600),
            ]
            for body, code in cases:
                reply = await send(body)
                assert reply["error"]["code"] == code, (body, reply)
            unknown = await send(req("eth_nope", []))
            assert (
                unknown["error"]["message"] == "the method eth_nope does not exist/is not available"
            )
            missing = await send(req("eth_getBlockByNumber", []))
            assert missing["error"]["message"] == "missing value for required argument 0"
            assert (await send(req("eth_chainId", [], request_id="after")))["result"] == "0x539"


@pytest.mark.parametrize("kind", ["http", "ws"])
async def test_filters_count_criteria_as_get_logs_does(node: RunningBroker, kind: str) -> None:
    # Duplicates count toward the 5,000 (geth counts the addresses given): a filter that installs
    # must also run, and one that eth_getLogs refuses must not install.
    same = "0x" + "11" * 20
    too_many = "invalid argument 0: too many addresses and topics (at most 5000)"
    over = [
        {"fromBlock": "0x0", "address": [same] * 5001},
        {"fromBlock": "0x0", "address": [same] * 4999, "topics": [[TRANSFER, TRANSFER]]},
    ]
    at_limit = {"fromBlock": "0x0", "address": [same] * 4998, "topics": [[TRANSFER, TRANSFER]]}
    with trio.fail_after(60):
        async with transport(node, kind) as send:
            for criteria in over:
                for method in ("eth_getLogs", "eth_newFilter"):
                    reply = await send(req(method, [criteria]))
                    assert reply["error"] == {"code": -32602, "message": too_many}, method
            assert (await send(req("eth_getLogs", [at_limit])))["result"] == []
            fid = (await send(req("eth_newFilter", [at_limit])))["result"]
            assert (await send(req("eth_getFilterLogs", [fid])))["result"] == []
            if kind == "ws":
                reply = await send(req("eth_subscribe", ["logs", {"address": [same] * 5001}]))
                assert reply["error"] == {
                    "code": -32602,
                    "message": too_many.replace("argument 0", "argument 1"),
                }


@pytest.mark.parametrize("kind", ["http", "ws"])
async def test_batches(node: RunningBroker, kind: str) -> None:
    with trio.fail_after(60):
        async with transport(node, kind) as send:
            batch = [
                req("eth_chainId", [], 1),
                req("eth_nope", [], "two"),
                {
                    "jsonrpc": "2.0",
                    "method": "eth_blockNumber",
                    "params": [],
                },  # a notification: no reply
                req("eth_getBlockByNumber", ["latest", False], None),
                5,
            ]
            replies = await send(batch)
            assert [r.get("id") for r in replies] == [1, "two", None, None]
            assert replies[0]["result"] == "0x539"
            assert replies[1]["error"]["code"] == -32601
            assert replies[2]["result"]["number"].startswith("0x")
            assert replies[3]["error"]["code"] == -32600
            assert (await send([]))["error"] == {"code": -32600, "message": "empty batch"}
            # as geth: a one-element array answering with the id of the batch's first call
            too_large = [{"jsonrpc": "2.0", "method": "eth_chainId", "params": []}]
            too_large += [req("eth_chainId", [], f"n{i}") for i in range(1000)]
            assert await send(too_large) == [
                {
                    "jsonrpc": "2.0",
                    "id": "n0",
                    "error": {"code": -32600, "message": "batch too large"},
                }
            ]
            assert len(await send([req("eth_chainId", [], i) for i in range(1000)])) == 1000


@pytest.mark.parametrize("kind", ["http", "ws"])
async def test_wildcard_topic_positions_need_that_many_topics_on_every_path(
    node: RunningBroker, kind: str
) -> None:
    # The dev chain's token Transfer logs have three topics: [null, null, null] matches them,
    # [null, null, null, null] matches none (geth), on getLogs, filters and subscriptions alike.
    three = {"fromBlock": "0x0", "toBlock": "latest", "topics": [None, None, None]}
    four = {**three, "topics": [None, None, None, None]}
    with trio.fail_after(60):
        async with transport(node, kind) as send:
            logs = (await send(req("eth_getLogs", [three])))["result"]
            assert logs
            assert all(len(log["topics"]) == 3 for log in logs)
            assert (await send(req("eth_getLogs", [four])))["result"] == []
            for criteria, expected in ((three, logs), (four, [])):
                fid = (await send(req("eth_newFilter", [criteria])))["result"]
                assert (await send(req("eth_getFilterLogs", [fid])))["result"] == expected
    if kind == "ws":
        async with trio_websocket.open_websocket_url(node.ws_url()) as ws:
            subscriptions = {}
            for name, criteria in (("three", three), ("four", four)):
                topics = {"topics": criteria["topics"]}
                await ws.send_message(json.dumps(req("eth_subscribe", ["logs", topics], name)))
                reply = json.loads(await ws.get_message())
                subscriptions[reply["result"]] = name
            # The transfer's block, then an empty one: its head comes after every notification of
            # the transfer's block on this connection, so what was not heard by then is not sent.
            await ws.send_message(json.dumps(req("eth_subscribe", ["newHeads"], "heads")))
            heads = json.loads(await ws.get_message())["result"]
            await _send_token_transfer(node)
            last = int((await node.rpc("eth_blockNumber", []))["result"], 16) + 1
            assert "error" not in await node.rpc("evm_mine", [])
            heard = set()
            while True:
                message = json.loads(await ws.get_message())
                if message["params"]["subscription"] != heads:
                    heard.add(subscriptions[message["params"]["subscription"]])
                elif int(message["params"]["result"]["number"], 16) == last:
                    break
            assert heard == {"three"}


async def _send_token_transfer(node: RunningBroker) -> None:
    """One token Transfer (three topics), sent and mined: the dev token's first holder pays."""
    adapter = node.broker.networks.by_name("dev").adapter
    assert isinstance(adapter, DevChainAdapter)
    sender = Account.from_key(adapter.accounts[0].key.to_bytes())
    logs = (await node.rpc("eth_getLogs", [{"fromBlock": "0x0", "topics": [TRANSFER]}]))["result"]
    pending = await node.rpc("eth_getTransactionCount", [sender.address, "pending"])
    raw = sender.sign_transaction(
        {
            "chainId": 1337,
            "nonce": int(pending["result"], 16),
            "to": to_checksum_address(logs[0]["address"]),
            "data": transfer_calldata(adapter.accounts[1].address, 1),
            "gas": 100_000,
            "maxFeePerGas": 10 * 10**9,
            "maxPriorityFeePerGas": 10**9,
            "value": 0,
        }
    ).raw_transaction
    assert "error" not in await node.rpc("eth_sendRawTransaction", ["0x" + bytes(raw).hex()])
    assert "error" not in await node.rpc("evm_mine", [])


async def test_an_unknown_subscription_type_lists_the_valid_ones(node: RunningBroker) -> None:
    with trio.fail_after(30):
        async with transport(node, "ws") as send:
            reply = await send(req("eth_subscribe", ["newPendingHeads"]))
    assert reply["error"] == {
        "code": -32601,
        "message": 'no "newPendingHeads" subscription in eth namespace',
        "data": {"supported": ["newHeads", "logs", "newPendingTransactions", "activity", "transaction"]},
    }
