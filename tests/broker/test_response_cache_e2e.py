"""The response cache on a real dev chain: every answer served over HTTP, cached or not, equals the
chain's own answer at that moment, through new heads, transactions and reorganisations."""

from __future__ import annotations

import random
from typing import Any

import httpx
import msgspec
import trio
from eth_account import Account

from adapters.devchain import DevChainAdapter
from broker.compose import ServeOptions
from schemas.errors import RpcError
from schemas.jsonrpc import encode, error_object
from tests.support.inprocess import running_broker

CHAIN = "eip155:1337"
GWEI = 10**9


class _Reply(msgspec.Struct):
    result: msgspec.Raw = msgspec.Raw(b"null")
    error: msgspec.Raw = msgspec.Raw(b"")


_reply = msgspec.json.Decoder(_Reply)


async def _queries(client: httpx.AsyncClient, url: str, adapter: DevChainAdapter) -> list[Any]:
    head = adapter.chain.head.number
    account = "0x" + adapter.accounts[1].address.hex()
    calls: list[tuple[str, list[Any]]] = [
        ("eth_chainId", []),
        ("eth_blockNumber", []),
        ("eth_getBlockByNumber", ["latest", False]),
        ("eth_getBlockByNumber", ["latest", True]),
        ("eth_getBalance", [account, "latest"]),
        ("eth_getTransactionCount", [account, "latest"]),
        ("eth_getLogs", [{"fromBlock": "0x0", "toBlock": "latest"}]),
        ("eth_getLogs", [{"fromBlock": "0x0", "toBlock": hex(head)}]),
    ]
    for number in range(max(0, head - 3), head + 2):
        calls.append(("eth_getBlockByNumber", [hex(number), False]))
        calls.append(("eth_getBalance", [account, hex(number)]))
    for record in list(adapter.chain.records.values())[-4:]:
        calls.append(("eth_getBlockByHash", [record.hash, False]))
        for tx in record.txs:
            calls.append(("eth_getTransactionByHash", [tx.hash]))
            calls.append(("eth_getTransactionReceipt", [tx.hash]))
    mismatches = []
    for method, params in calls:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        reply = _reply.decode((await client.post(url, json=body)).content)
        served = bytes(reply.error) or bytes(reply.result)
        try:
            truth = encode(await adapter.call(CHAIN, method, msgspec.Raw(encode(params))))
        except RpcError as exc:
            truth = encode(error_object(exc))
        if served != truth:
            mismatches.append((method, params, served[:120], truth[:120]))
    return mismatches


async def test_no_stale_answer_through_heads_transactions_and_reorgs() -> None:
    rng = random.Random(17)
    with trio.fail_after(120):
        async with (
            running_broker(ServeOptions(block_time=0)) as node,
            httpx.AsyncClient() as client,
        ):
            adapter = node.broker.networks.by_name("dev").adapter
            assert isinstance(adapter, DevChainAdapter)
            url = node.http_url()
            sender = Account.from_key(adapter.accounts[0].key.to_bytes())
            snapshots: list[str] = []
            reorgs = 0

            async def rpc(method: str, *params: Any) -> Any:
                body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}
                return (await client.post(url, json=body)).json()["result"]

            for step in range(40):
                action = rng.choice(["mine", "tx", "snapshot", "revert", "query"])
                if action == "mine":
                    await rpc("evm_mine")
                elif action == "tx":
                    nonce = int(await rpc("eth_getTransactionCount", sender.address, "pending"), 16)
                    raw = sender.sign_transaction(
                        {
                            "chainId": 1337,
                            "nonce": nonce,
                            "to": adapter.accounts[1].address,
                            "value": rng.randrange(1, 10**15),
                            "gas": 21_000,
                            "maxFeePerGas": 10 * GWEI,
                            "maxPriorityFeePerGas": GWEI,
                        }
                    ).raw_transaction
                    await rpc("eth_sendRawTransaction", "0x" + bytes(raw).hex())
                    await rpc("evm_mine")
                elif action == "snapshot":
                    snapshots.append(await rpc("evm_snapshot"))
                elif action == "revert" and snapshots:
                    assert await rpc("evm_revert", snapshots.pop(rng.randrange(len(snapshots))))
                    del snapshots[:]  # later snapshots are used up too
                    await rpc("evm_mine")  # a new block at a height seen before: a reorg
                    reorgs += 1
                # Twice: the first pass may fill the cache, the second must be served from it.
                for _ in range(2):
                    mismatches = await _queries(client, url, adapter)
                    assert mismatches == [], (step, action, mismatches)
            store = node.broker.dispatcher.cache.store
            assert store is not None
            stats = store.statistics()
            assert reorgs > 0
            assert stats.hits > 1000, stats  # the cache answered, and never wrongly
            metrics = (await client.get(f"{node.base}/metrics")).text
            assert f"scopecast_response_cache_hits_total {stats.hits}.0" in metrics
