"""``eth_getLogs``: geth's filter semantics, the SPEC limits, and the log index underneath."""

from __future__ import annotations

import time
from typing import Any

import msgspec
import pytest

from adapters.devchain import DevChainAdapter
from adapters.devchain.assembler import Label, Ref, assemble, deployer
from adapters.devchain.log_index import (
    LogIndex,
    QueryTimeout,
    TooManyResults,
    scan,
)
from adapters.evm.blocks import LogRecord
from adapters.evm.log_filter import LogCriteria
from schemas.errors import InvalidParams, LimitExceeded, ServerError

from .conftest import Rpc, Wallet

T1, T2, T3 = ("0x" + c * 64 for c in "123")
SPAM_TOPIC = "0x" + "aa" * 32


def emitter() -> bytes:
    """Emits one log whose topics are the call data's words (0 to 4 of them)."""
    program: list[Any] = ["CALLDATASIZE", 5, "SHR"]
    for count in range(5):
        program += ["DUP1", count, "EQ", Ref(f"log{count}"), "JUMPI"]
    program += [0, 0, "REVERT"]
    for count in range(5):
        topics = [item for i in reversed(range(count)) for item in (32 * i, "CALLDATALOAD")]
        program += [Label(f"log{count}"), *topics, 0, 0, f"LOG{count}", "STOP"]
    return deployer(assemble(program))


def spammer() -> bytes:
    """Emits as many logs as the first call data word says, topics (SPAM_TOPIC, i)."""
    return deployer(
        assemble(
            [
                0,
                "CALLDATALOAD",
                0,
                Label("loop"),
                "DUP2",
                "DUP2",
                "EQ",
                Ref("done"),
                "JUMPI",
                "DUP1",
                bytes.fromhex(SPAM_TOPIC[2:]),
                0,
                0,
                "LOG2",
                1,
                "ADD",
                Ref("loop"),
                "JUMP",
                Label("done"),
                "STOP",
            ]
        )
    )


async def deploy(wallet: Wallet, rpc: Rpc, init_code: bytes) -> str:
    tx_hash = await wallet.send(0, {"to": None, "data": init_code, "gas": 500_000})
    address: str = (await rpc("eth_getTransactionReceipt", tx_hash))["contractAddress"]
    return address


async def emit(wallet: Wallet, address: str, *topics: str) -> None:
    data = b"".join(bytes.fromhex(t[2:]) for t in topics)
    await wallet.send(0, {"to": address, "data": data})


@pytest.fixture
async def emitted(adapter: DevChainAdapter, rpc: Rpc, wallet: Wallet) -> str:
    """Five logs from an emitter at blocks 4-8: no topics, [T1], [T1 T2], [T2 T1], [T1 T2 T3]."""
    address = await deploy(wallet, rpc, emitter())
    for topics in ((), (T1,), (T1, T2), (T2, T1), (T1, T2, T3)):
        await emit(wallet, address, *topics)
    return address


async def topics_of(rpc: Rpc, criteria: dict[str, Any]) -> list[list[str]]:
    logs = await rpc("eth_getLogs", {"fromBlock": "0x0", **criteria})
    return [log["topics"] for log in logs]


async def test_address_filters(emitted: str, rpc: Rpc, adapter: DevChainAdapter) -> None:
    assert len(await topics_of(rpc, {"address": emitted})) == 5
    assert len(await topics_of(rpc, {"address": emitted.upper().replace("0X", "0x")})) == 5
    assert len(await topics_of(rpc, {"address": [emitted, adapter.token_address]})) == 15
    assert len(await topics_of(rpc, {})) == 15
    assert await topics_of(rpc, {"address": "0x" + "99" * 20}) == []


async def test_topic_positions_or_alternatives_and_wildcards(emitted: str, rpc: Rpc) -> None:
    only = {"address": emitted}
    assert await topics_of(rpc, {**only, "topics": [T1]}) == [[T1], [T1, T2], [T1, T2, T3]]
    assert await topics_of(rpc, {**only, "topics": [None, T2]}) == [[T1, T2], [T1, T2, T3]]
    assert await topics_of(rpc, {**only, "topics": [[], [T2, T1]]}) == [
        [T1, T2],
        [T2, T1],
        [T1, T2, T3],
    ]
    assert await topics_of(rpc, {**only, "topics": [[T2, T1]]}) == [
        [T1],
        [T1, T2],
        [T2, T1],
        [T1, T2, T3],
    ]
    # A wildcard position still needs the log to have a topic there.
    assert (
        await topics_of(rpc, {**only, "topics": [[T3, None]]}) == (await topics_of(rpc, only))[1:]
    )
    assert await topics_of(rpc, {**only, "topics": [T1, T2, T3, None]}) == []  # too few topics
    assert await topics_of(rpc, {**only, "topics": []}) == await topics_of(rpc, only)


async def test_block_ranges(emitted: str, rpc: Rpc) -> None:
    assert len(await rpc("eth_getLogs", {"address": emitted})) == 1  # latest only by default
    logs = await rpc("eth_getLogs", {"address": emitted, "fromBlock": "0x5", "toBlock": "0x6"})
    assert [log["blockNumber"] for log in logs] == ["0x5", "0x6"]
    assert len(await rpc("eth_getLogs", {"fromBlock": "earliest", "toBlock": "0x2"})) == 10
    later = await rpc("eth_getLogs", {"address": emitted, "fromBlock": "0x6", "toBlock": "0x8"})
    assert len(later) == 3
    for tag in ("pending", "safe", "finalized"):
        assert await rpc("eth_getLogs", {"fromBlock": tag, "toBlock": tag}) == [later[-1]]
    # geth's codes and texts (execution-apis filter-error-* fixtures): invalid params
    for criteria, message in [
        ({"fromBlock": "0x5", "toBlock": "0x4"}, "invalid block range params"),
        ({"fromBlock": "0x63", "toBlock": "latest"}, "invalid block range params"),
        ({"fromBlock": "0x6", "toBlock": "0x9"}, "block range extends beyond current head block"),
        ({"fromBlock": "0x63", "toBlock": "0x64"}, "block range extends beyond current head block"),
    ]:
        error = await rpc.error("eth_getLogs", criteria)
        assert isinstance(error, InvalidParams)
        assert error.message == message


async def test_block_hash(emitted: str, rpc: Rpc) -> None:
    block = await rpc("eth_getBlockByNumber", "0x6", False)
    logs = await rpc("eth_getLogs", {"blockHash": block["hash"]})
    assert [log["topics"] for log in logs] == [[T1, T2]]
    assert await rpc("eth_getLogs", {"blockhash": block["hash"], "address": emitted}) == logs
    assert await rpc("eth_getLogs", {"blockHash": block["hash"], "topics": [T3]}) == []
    error = await rpc.error("eth_getLogs", {"blockHash": block["hash"], "fromBlock": "0x1"})
    assert isinstance(error, InvalidParams)
    assert error.message == (
        "invalid argument 0: cannot specify both BlockHash and FromBlock/ToBlock, "
        "choose one or the other"
    )
    error = await rpc.error("eth_getLogs", {"blockHash": "0x" + "12" * 32})
    assert isinstance(error, ServerError)
    assert error.message == "unknown block"


@pytest.mark.parametrize(
    ("criteria", "message"),
    [
        ({"address": "0x12"}, "invalid address: hex has invalid length 1 after decoding"),
        ({"address": ["0x" + "11" * 20, 5]}, "non-string address at index 1"),
        ({"address": 5}, "invalid addresses in query"),
        ({"topics": ["0x12"]}, "hex has invalid length 1 after decoding; expected 32 for topic"),
        ({"topics": [5]}, "invalid topic(s)"),
        ({"topics": [None] * 5}, "exceed max topics"),
        ({"fromBlock": "1"}, "hex string without 0x prefix"),
        ({"address": ["0x" + "11" * 20] * 5001}, "too many addresses and topics (at most 5000)"),
    ],
)
async def test_filter_errors(rpc: Rpc, criteria: dict[str, Any], message: str) -> None:
    error = await rpc.error("eth_getLogs", criteria)
    assert isinstance(error, InvalidParams)
    assert error.message.startswith(f"invalid argument 0: {message}")


async def test_five_thousand_criteria_are_allowed(rpc: Rpc) -> None:
    criteria = {"address": ["0x" + "11" * 20] * 4998, "topics": [[T1, T2]]}
    assert await rpc("eth_getLogs", criteria) == []


async def test_more_than_ten_thousand_results(
    adapter: DevChainAdapter, rpc: Rpc, wallet: Wallet
) -> None:
    address = await deploy(wallet, rpc, spammer())
    await wallet.send(0, {"to": address, "data": (10_000).to_bytes(32, "big"), "gas": 15_000_000})
    full = await rpc("eth_getBlockByNumber", "latest", False)
    started = time.perf_counter()
    logs = await rpc("eth_getLogs", {"fromBlock": "0x0", "address": address})
    elapsed = time.perf_counter() - started
    print(f"\n10,000-result eth_getLogs: {elapsed * 1000:.1f} ms")
    assert len(logs) == 10_000
    assert logs[-1]["logIndex"] == hex(9_999)
    await wallet.send(0, {"to": address, "data": (1).to_bytes(32, "big")})
    for criteria in ({"fromBlock": "0x0"}, {"fromBlock": "0x0", "topics": [SPAM_TOPIC]}):
        error = await rpc.error("eth_getLogs", criteria)
        assert isinstance(error, LimitExceeded)
        assert (error.code, error.message) == (-32005, "query returned more than 10000 results")
    assert len(await rpc("eth_getLogs", {"blockHash": full["hash"]})) == 10_000
    one = await rpc("eth_getLogs", {"fromBlock": "0x0", "topics": [SPAM_TOPIC, "0x" + "00" * 32]})
    assert len(one) == 2


# --------------------------------------------------------------------------------------------------
# The index and the scan, without a chain


def record(address: str, *topics: str, tag: int = 0) -> LogRecord:
    return LogRecord(address, tuple(topics), msgspec.json.encode({"tag": tag}))


def test_index_append_truncate_count() -> None:
    index = LogIndex()
    index.append(1, [record("0xa"), record("0xb")])
    index.append(2, [])
    index.append(3, [record("0xa", T1)])
    assert len(index) == 3
    assert index.count(0, 10) == 3
    assert index.count(2, 3) == 1
    assert index.count(4, 9) == 0
    assert [b.number for b in index.blocks(0, 2)] == [1]
    index.truncate(3)
    assert len(index) == 2
    assert index.count(0, 10) == 2
    with pytest.raises(ValueError, match="not above"):
        index.append(1, [record("0xc")])
    index.append(3, [record("0xc")])
    assert [b.addresses for b in index.blocks(3, 3)] == [frozenset({"0xc"})]


def test_matcher_skips_blocks_and_logs() -> None:
    index = LogIndex()
    index.append(1, [record("0xa", T1, T2, tag=1), record("0xb", T2, tag=2)])
    index.append(2, [record("0xc", T3, tag=3)])
    blocks = index.blocks(0, 9)
    matcher = LogCriteria.build(["0xa", "0xb"], [[T1, T2]])
    assert not matcher.may_match(blocks[1].addresses, blocks[1].topics)
    assert scan(blocks, matcher) == [b'{"tag":1}', b'{"tag":2}']
    assert scan(blocks, LogCriteria.build([], [None, [T2]])) == [b'{"tag":1}']
    with pytest.raises(TooManyResults):
        scan(blocks, LogCriteria(), limit=2)
    with pytest.raises(TooManyResults):
        scan(blocks, LogCriteria.build([], [[T1, T2]]), limit=1)
    with pytest.raises(QueryTimeout):
        scan(blocks, LogCriteria(), timeout=-1)


def test_ten_thousand_of_a_hundred_thousand_logs() -> None:
    # The time this takes is measured in bench/ (getLogs); here only the result is checked.
    index = LogIndex()
    token, other = "0x" + "11" * 20, "0x" + "22" * 20
    for number in range(1, 10_001):  # 10,000 blocks of 10 logs: one from the token
        logs = [record(other, T2, T3, tag=i) for i in range(9)]
        logs.append(record(token, T1, tag=number))
        index.append(number, logs)
    assert len(index) == 100_000
    found = scan(index.blocks(0, 10_000), LogCriteria.build([token], [[T1]]))
    assert len(found) == 10_000
