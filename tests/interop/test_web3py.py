"""web3.py 8 against scopecast: ``Web3(HTTPProvider)`` reads blocks, transactions, receipts and logs
of a token transfer it signs and sends itself; ``AsyncWeb3(WebSocketProvider)`` subscribes to
``newHeads`` and ``logs`` and receives the blocks and Transfer logs this test mines.

web3.py runs outside trio: the sync client in a worker thread, the async one on its own asyncio loop
in a worker thread. The broker runs in the test's trio loop meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pytest
import trio
from eth_account import Account
from eth_account.signers.local import LocalAccount
from eth_utils import to_checksum_address
from hexbytes import HexBytes
from web3 import AsyncWeb3, HTTPProvider, Web3, WebSocketProvider
from web3.exceptions import BlockNotFound, TransactionNotFound

from broker.compose import ServeOptions
from tests.support.inprocess import RunningBroker, running_broker

MNEMONIC = "test test test test test test test test test test test junk"
TRANSFER_TOPIC = HexBytes(Web3.keccak(text="Transfer(address,address,uint256)"))
ZERO_TOPIC = HexBytes(b"\0" * 32)
TRANSFER_SELECTOR = HexBytes(Web3.keccak(text="transfer(address,uint256)")[:4])
ERC20_ABI: list[dict[str, Any]] = [
    {
        "type": "function",
        "name": "transfer",
        "stateMutability": "nonpayable",
        "inputs": [{"name": "to", "type": "address"}, {"name": "amount", "type": "uint256"}],
        "outputs": [{"name": "", "type": "bool"}],
    },
    {
        "type": "function",
        "name": "balanceOf",
        "stateMutability": "view",
        "inputs": [{"name": "owner", "type": "address"}],
        "outputs": [{"name": "", "type": "uint256"}],
    },
    {
        "type": "function",
        "name": "decimals",
        "stateMutability": "view",
        "inputs": [],
        "outputs": [{"name": "", "type": "uint8"}],
    },
    {
        "type": "event",
        "name": "Transfer",
        "anonymous": False,
        "inputs": [
            {"name": "from", "type": "address", "indexed": True},
            {"name": "to", "type": "address", "indexed": True},
            {"name": "value", "type": "uint256", "indexed": False},
        ],
    },
]


def mnemonic_accounts() -> list[LocalAccount]:
    Account.enable_unaudited_hdwallet_features()
    return [Account.from_mnemonic(MNEMONIC, account_path=f"m/44'/60'/0'/0/{i}") for i in range(10)]


def address_topic(address: str) -> HexBytes:
    return HexBytes(bytes(12) + HexBytes(address))


def topic_address(topic: bytes) -> str:
    return to_checksum_address(bytes(topic)[12:])


@dataclass
class DemoToken:
    address: str
    holder: LocalAccount
    others: list[LocalAccount]


def find_demo_token(w3: Web3) -> DemoToken:
    """The demo token is the contract whose Transfer from 0x0 (the mint) is on chain."""
    mints = w3.eth.get_logs(
        {"fromBlock": 0, "toBlock": "latest", "topics": [TRANSFER_TOPIC, ZERO_TOPIC]}
    )
    assert mints, "no demo token mint on the dev chain"
    minted_to = topic_address(mints[0]["topics"][2])
    accounts = mnemonic_accounts()
    holder = next((a for a in accounts if a.address == minted_to), None)
    assert holder is not None, f"the token was minted to {minted_to}, not a mnemonic account"
    return DemoToken(mints[0]["address"], holder, [a for a in accounts if a is not holder])


# --------------------------------------------------------------------------------------------------
# Web3(HTTPProvider): reads


def exercise_http(url: str) -> None:
    w3 = Web3(HTTPProvider(url, request_kwargs={"timeout": 10}))
    assert w3.is_connected()
    assert w3.eth.chain_id == 1337
    demo = find_demo_token(w3)
    token = w3.eth.contract(address=demo.address, abi=ERC20_ABI)
    assert token.functions.decimals().call() == 18
    sender, recipient = demo.holder, demo.others[0]
    balance_before = token.functions.balanceOf(recipient.address).call()

    # web3 fills gas, fees and nonce from the node; the key signs locally
    start = w3.eth.block_number
    tx = token.functions.transfer(recipient.address, 500).build_transaction(
        {"from": sender.address, "nonce": w3.eth.get_transaction_count(sender.address, "pending")}
    )
    assert tx["chainId"] == 1337
    tx_hash = w3.eth.send_raw_transaction(sender.sign_transaction(tx).raw_transaction)
    w3.provider.make_request("evm_mine", [])
    receipt = w3.eth.wait_for_transaction_receipt(tx_hash, timeout=5, poll_latency=0.05)
    assert receipt["status"] == 1
    assert receipt["transactionHash"] == tx_hash
    assert receipt["from"] == sender.address
    assert receipt["to"] == demo.address
    assert receipt["blockNumber"] > start

    # blocks: by number with full transactions, by hash with hashes
    block = w3.eth.get_block(receipt["blockNumber"], full_transactions=True)
    assert block["hash"] == receipt["blockHash"]
    assert block["number"] == receipt["blockNumber"]
    mined = block["transactions"][receipt["transactionIndex"]]
    assert mined["hash"] == tx_hash
    assert mined["from"] == sender.address
    assert mined["to"] == demo.address
    by_hash = w3.eth.get_block(receipt["blockHash"])
    assert tx_hash in by_hash["transactions"]
    assert by_hash["parentHash"] == w3.eth.get_block(receipt["blockNumber"] - 1)["hash"]

    # transactions and receipts, by hash and by position
    fetched = w3.eth.get_transaction(tx_hash)
    assert fetched["input"][:4] == TRANSFER_SELECTOR
    assert fetched["blockHash"] == receipt["blockHash"]
    assert fetched["chainId"] == 1337
    positioned = w3.eth.get_transaction_by_block(
        receipt["blockNumber"], receipt["transactionIndex"]
    )
    assert positioned["hash"] == tx_hash
    block_receipts = w3.eth.get_block_receipts(receipt["blockNumber"])
    assert [r["transactionHash"] for r in block_receipts] == list(by_hash["transactions"])
    assert block_receipts[receipt["transactionIndex"]] == receipt
    (event,) = token.events.Transfer().process_receipt(receipt)
    assert event["args"] == {"from": sender.address, "to": recipient.address, "value": 500}

    # logs: a topic filter with a wildcard position, OR-alternatives, a block hash, contract events
    to_recipient = w3.eth.get_logs(
        {
            "fromBlock": start + 1,
            "toBlock": "latest",
            "address": demo.address,
            "topics": [TRANSFER_TOPIC, None, address_topic(recipient.address)],
        }
    )
    assert [log["transactionHash"] for log in to_recipient] == [tx_hash]
    assert to_recipient[0] == receipt["logs"][0]
    either = w3.eth.get_logs(
        {
            "fromBlock": 0,
            "toBlock": "latest",
            "topics": [TRANSFER_TOPIC, [ZERO_TOPIC, address_topic(sender.address)]],
        }
    )
    assert {log["transactionHash"] for log in either} >= {tx_hash}
    assert all(log["topics"][1] in (ZERO_TOPIC, address_topic(sender.address)) for log in either)
    in_block = w3.eth.get_logs({"blockHash": receipt["blockHash"], "topics": [TRANSFER_TOPIC]})
    assert [log["logIndex"] for log in in_block] == [log["logIndex"] for log in receipt["logs"]]
    events = token.events.Transfer().get_logs(
        argument_filters={"to": recipient.address}, from_block=start + 1
    )
    assert [(e["transactionHash"], e["args"]["value"]) for e in events] == [(tx_hash, 500)]
    nobody = w3.eth.get_logs(
        {"fromBlock": start + 1, "toBlock": "latest", "topics": [TRANSFER_TOPIC, None, ZERO_TOPIC]}
    )
    assert nobody == []
    assert token.functions.balanceOf(recipient.address).call() == balance_before + 500

    # a JSON-RPC batch over HTTP
    with w3.batch_requests() as batch:
        batch.add(w3.eth.get_block(receipt["blockNumber"]))
        batch.add(w3.eth.get_transaction_receipt(tx_hash))
        batch.add(token.functions.balanceOf(recipient.address))
        batched = batch.execute()
    assert batched[0]["hash"] == receipt["blockHash"]
    assert batched[1] == receipt
    assert batched[2] == balance_before + 500

    # lookups that find nothing are null results, which web3 turns into its not-found errors
    with pytest.raises(TransactionNotFound):
        w3.eth.get_transaction(HexBytes(b"\x01" * 32))
    with pytest.raises(BlockNotFound):
        w3.eth.get_block(w3.eth.block_number + 1000)


async def test_http_provider_reads_blocks_transactions_receipts_and_logs(
    node: RunningBroker,
) -> None:
    with trio.fail_after(30):
        await trio.to_thread.run_sync(exercise_http, node.http_url(), abandon_on_cancel=True)


def exercise_dev_node(url: str) -> None:
    """What a hardhat user does with web3.py: the node's accounts send, time moves, balances set."""
    w3 = Web3(HTTPProvider(url, request_kwargs={"timeout": 10}))
    accounts = w3.eth.accounts
    assert len(accounts) == 10
    before = w3.eth.get_balance(accounts[2])
    tx_hash = w3.eth.send_transaction({"from": accounts[1], "to": accounts[2], "value": 10**18})
    receipt = w3.eth.wait_for_transaction_receipt(tx_hash, timeout=10)
    assert receipt["status"] == 1
    assert receipt["gasUsed"] == 21_000
    assert w3.eth.get_balance(accounts[2]) == before + 10**18
    fees = w3.eth.fee_history(3, "latest", [25, 75])
    assert len(fees["baseFeePerGas"]) == 4
    assert w3.eth.max_priority_fee > 0
    assert w3.eth.estimate_gas({"from": accounts[1], "to": accounts[2], "value": 1}) == 21_000
    assert w3.eth.get_transaction_count(accounts[1]) >= 1
    wall = int(time.time())
    w3.provider.make_request("evm_increaseTime", [3600])
    w3.provider.make_request("evm_mine", [])
    assert w3.eth.get_block("latest")["timestamp"] >= wall + 3600 - 1
    rich = Web3.to_checksum_address("0x" + "cd" * 20)
    w3.provider.make_request("hardhat_setBalance", [rich, hex(5 * 10**18)])
    assert w3.eth.get_balance(rich) == 5 * 10**18


async def test_http_provider_on_the_dev_node_as_a_hardhat_user(node: RunningBroker) -> None:
    with trio.fail_after(30):
        await trio.to_thread.run_sync(exercise_dev_node, node.http_url(), abandon_on_cancel=True)


# --------------------------------------------------------------------------------------------------
# AsyncWeb3(WebSocketProvider): subscriptions


@dataclass
class Traffic:
    """What the trio side mined: block numbers, and the transfers as (tx hash, recipient, amount)."""

    blocks: list[int] = field(default_factory=list)
    transfers: list[tuple[str, str, int]] = field(default_factory=list)


async def rpc_result(node: RunningBroker, method: str, params: list[Any]) -> Any:
    reply = await node.rpc(method, params)
    assert "error" not in reply, (method, params, reply)
    return reply["result"]


async def mine_transfers(node: RunningBroker, demo: DemoToken, amounts: list[int]) -> Traffic:
    """Send one signed token transfer per amount, each followed by ``evm_mine``, then mine an empty
    block; report what landed where."""
    traffic = Traffic()
    start = int(await rpc_result(node, "eth_blockNumber", []), 16)
    nonce = int(
        await rpc_result(node, "eth_getTransactionCount", [demo.holder.address, "pending"]), 16
    )
    token = Web3().eth.contract(address=demo.address, abi=ERC20_ABI)
    for offset, amount in enumerate(amounts):
        recipient = demo.others[offset].address
        latest = await rpc_result(node, "eth_getBlockByNumber", ["latest", False])
        signed = demo.holder.sign_transaction(
            {
                "type": 2,
                "chainId": 1337,
                "nonce": nonce + offset,
                "to": demo.address,
                "value": 0,
                "gas": 100_000,
                "maxPriorityFeePerGas": 10**9,
                "maxFeePerGas": 2 * int(latest["baseFeePerGas"], 16) + 10**9,
                "data": token.encode_abi("transfer", [recipient, amount]),
            }
        )
        tx_hash = await rpc_result(
            node, "eth_sendRawTransaction", [signed.raw_transaction.to_0x_hex()]
        )
        await rpc_result(node, "evm_mine", [])
        traffic.transfers.append((tx_hash, recipient, amount))
    await rpc_result(node, "evm_mine", [])
    end = int(await rpc_result(node, "eth_blockNumber", []), 16)
    traffic.blocks = list(range(start + 1, end + 1))
    return traffic


@dataclass
class Received:
    heads: list[dict[str, Any]] = field(default_factory=list)
    logs: list[dict[str, Any]] = field(default_factory=list)
    filtered: list[dict[str, Any]] = field(default_factory=list)
    unsubscribed: list[bool] = field(default_factory=list)


async def subscribe_and_listen(
    url: str, demo: DemoToken, make_traffic: Callable[[], Traffic], amounts: list[int]
) -> tuple[Received, Traffic]:
    """On asyncio: subscribe, let the trio side mine (``make_traffic`` blocks a worker thread until
    it is done), then collect notifications until every mined block and transfer has arrived."""
    received = Received()
    async with AsyncWeb3(WebSocketProvider(url)) as w3:
        async with w3.batch_requests() as batch:
            batch.add(w3.eth.chain_id)
            batch.add(w3.eth.get_block("latest"))
            chain_id, latest = await batch.async_execute()
        assert chain_id == 1337
        assert latest["number"] >= 0
        heads_id = await w3.eth.subscribe("newHeads")
        logs_id = await w3.eth.subscribe(
            "logs", {"address": demo.address, "topics": [TRANSFER_TOPIC]}
        )
        second = demo.others[1].address
        filtered_id = await w3.eth.subscribe(
            "logs",
            {"address": demo.address, "topics": [TRANSFER_TOPIC, None, address_topic(second)]},
        )
        assert len({heads_id, logs_id, filtered_id}) == 3
        traffic = await asyncio.to_thread(make_traffic)

        def complete() -> bool:
            return (
                len(received.heads) >= len(traffic.blocks)
                and len(received.logs) >= len(amounts)
                and len(received.filtered) >= 1
            )

        async with asyncio.timeout(10):
            async for message in w3.socket.process_subscriptions():
                target = {
                    heads_id: received.heads,
                    logs_id: received.logs,
                    filtered_id: received.filtered,
                }[message["subscription"]]
                target.append(message["result"])
                if complete():
                    break
        # anything more (duplicates, strays) would arrive right behind
        stray = None
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(0.3):
                stray = await anext(aiter(w3.socket.process_subscriptions()))
        assert stray is None, stray
        for sub_id in (heads_id, logs_id, filtered_id):
            received.unsubscribed.append(await w3.eth.unsubscribe(sub_id))
    return received, traffic


async def test_websocket_provider_subscriptions_receive_heads_and_logs(
    node: RunningBroker,
) -> None:
    amounts = [700, 800]
    with trio.fail_after(30):
        demo = await trio.to_thread.run_sync(
            lambda: find_demo_token(Web3(HTTPProvider(node.http_url())))
        )
        trio_token = trio.lowlevel.current_trio_token()
        make_traffic = partial(
            trio.from_thread.run, mine_transfers, node, demo, amounts, trio_token=trio_token
        )
        received, traffic = await trio.to_thread.run_sync(
            lambda: asyncio.run(subscribe_and_listen(node.ws_url(), demo, make_traffic, amounts)),
            abandon_on_cancel=True,
        )

    assert [head["number"] for head in received.heads] == traffic.blocks
    for head in received.heads:
        block = await rpc_result(node, "eth_getBlockByNumber", [hex(head["number"]), False])
        assert head["hash"].to_0x_hex() == block["hash"]
        assert head["parentHash"] == HexBytes(
            (await rpc_result(node, "eth_getBlockByNumber", [hex(head["number"] - 1), False]))[
                "hash"
            ]
        )

    assert [log["transactionHash"].to_0x_hex() for log in received.logs] == [
        tx_hash for tx_hash, _, _ in traffic.transfers
    ]
    for log, (tx_hash, recipient, amount) in zip(received.logs, traffic.transfers, strict=True):
        assert log["address"] == demo.address
        assert log["removed"] is False
        assert log["topics"] == [
            TRANSFER_TOPIC,
            address_topic(demo.holder.address),
            address_topic(recipient),
        ]
        assert int.from_bytes(log["data"], "big") == amount
        receipt = await rpc_result(node, "eth_getTransactionReceipt", [tx_hash])
        assert log["blockHash"].to_0x_hex() == receipt["blockHash"]
        assert log["logIndex"] == int(receipt["logs"][0]["logIndex"], 16)
    assert [log["transactionHash"].to_0x_hex() for log in received.filtered] == [
        traffic.transfers[1][0]
    ]
    assert received.unsubscribed == [True, True, True]


async def follow_demo_chain(url: str, token_address: str, *, heads_wanted: int) -> Received:
    """On asyncio: follow a chain that mines on its own until ``heads_wanted`` heads and at least
    one Transfer log have arrived, then take what else comes in the next moment."""
    received = Received()
    async with AsyncWeb3(WebSocketProvider(url)) as w3:
        # logs first: every head received is then a block mined after both subscriptions existed
        logs_id = await w3.eth.subscribe(
            "logs", {"address": token_address, "topics": [TRANSFER_TOPIC]}
        )
        heads_id = await w3.eth.subscribe("newHeads")

        def take(message: Any) -> None:
            if message["subscription"] == heads_id:
                received.heads.append(message["result"])
            else:
                assert message["subscription"] == logs_id, message
                received.logs.append(message["result"])

        async with asyncio.timeout(15):
            async for message in w3.socket.process_subscriptions():
                take(message)
                if len(received.heads) >= heads_wanted and received.logs:
                    break
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(0.1):
                async for message in w3.socket.process_subscriptions():
                    take(message)
    return received


async def test_websocket_provider_follows_the_demo_traffic() -> None:
    with trio.fail_after(40):
        async with running_broker(ServeOptions(block_time=0.2)) as node:
            demo = await trio.to_thread.run_sync(
                lambda: find_demo_token(Web3(HTTPProvider(node.http_url())))
            )
            received = await trio.to_thread.run_sync(
                lambda: asyncio.run(follow_demo_chain(node.ws_url(), demo.address, heads_wanted=4)),
                abandon_on_cancel=True,
            )
            numbers = [head["number"] for head in received.heads]
            assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))
            # every Transfer of the followed blocks arrived, once, as eth_getLogs has it (the
            # newest block is left out: its logs may still be on their way)
            first, last = numbers[0], numbers[-2]
            expected = await rpc_result(
                node,
                "eth_getLogs",
                [
                    {
                        "fromBlock": hex(first),
                        "toBlock": hex(last),
                        "address": demo.address,
                        "topics": [TRANSFER_TOPIC.to_0x_hex()],
                    }
                ],
            )
            got = [
                (log["blockHash"].to_0x_hex(), log["logIndex"])
                for log in received.logs
                if first <= log["blockNumber"] <= last
            ]
            assert got == [(log["blockHash"], int(log["logIndex"], 16)) for log in expected]
            for head in received.heads[:-1]:
                block = await rpc_result(node, "eth_getBlockByNumber", [hex(head["number"]), False])
                assert head["hash"].to_0x_hex() == block["hash"]
