"""The incremental ``result`` array counter (sans-io): every split of the bytes gives the same count."""

import json
import time

import msgspec
import pytest

from adapters.upstream._result_counter import ResultCounter, TooManyResults

LOG = {
    "address": "0x" + "ab" * 20,
    "topics": ["0x" + "11" * 32, "0x" + "22" * 32],
    "data": "0x" + "00" * 64,
    "blockNumber": "0x10",
    "transactionHash": "0x" + "33" * 32,
    "transactionIndex": "0x0",
    "blockHash": "0x" + "44" * 32,
    "logIndex": "0x0",
    "removed": False,
}

REPLIES = [
    b'{"jsonrpc":"2.0","id":1,"result":[]}',
    b'{"jsonrpc":"2.0","id":1,"result":[ ]}',
    b'{"jsonrpc":"2.0","id":1,"result":[1]}',
    b'{"jsonrpc":"2.0","id":1,"result":[1, 2 ,3]}',
    b'{"jsonrpc":"2.0","id":1,"result":[true,null,"x"]}',
    b'{"jsonrpc":"2.0","id":1,"result":[[1,2],[3,[4,5]],{}]}',
    b'{"jsonrpc":"2.0","id":1,"result":["a,b","[{\\"]}","\\\\",""]}',
    b'{ "result" : [ {"a":[1,2,3],"b":{"c":","}} , {"result":[9,9,9]} ] , "id" : 1 , "jsonrpc":"2.0" }',
    b'{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"x","data":{"result":[1,2]}}}',
    b'{"jsonrpc":"2.0","id":1,"result":null}',
    b'{"jsonrpc":"2.0","id":1,"result":{"items":[1,2,3]}}',
    b'{"jsonrpc":"2.0","id":1,"result":"[1,2,3]"}',
    b'{"jsonrpc":"2.0","id":1,"results":[1,2,3],"result":[4]}',
    b'{"jsonrpc":"2.0","id":1,"\\u0072esult":[1,2,3],"result":[]}',
    b'{"jsonrpc":"2.0","id":1,"result":["\\u005d\\"",  "\xc3\xa9]"]}',
    b'\n{\n  "jsonrpc": "2.0",\n  "id": 1,\n  "result": [\n    {"x": 1},\n    {"y": 2}\n  ]\n}\n',
    b'{"jsonrpc":"2.0","id":1,"result":' + json.dumps([LOG] * 5).encode() + b"}",
]


def expected(reply: bytes) -> int:
    result = msgspec.json.decode(reply).get("result")
    return len(result) if isinstance(result, list) else 0


def feed(counter: ResultCounter, chunks: list[bytes], fed: list[int]) -> None:
    """Feed every chunk, recording the bytes handed over (the raising chunk included)."""
    for chunk in chunks:
        fed.append(len(chunk))
        counter.feed(chunk)


def count(chunks: list[bytes], limit: int = 10_000) -> ResultCounter:
    counter = ResultCounter(limit)
    for chunk in chunks:
        counter.feed(chunk)
    return counter


@pytest.mark.parametrize("reply", REPLIES)
def test_every_two_way_split_counts_the_same(reply: bytes) -> None:
    for cut in range(len(reply) + 1):
        counter = count([reply[:cut], reply[cut:]])
        assert counter.count == expected(reply), (cut, reply[:cut])


@pytest.mark.parametrize("reply", REPLIES)
def test_byte_by_byte(reply: bytes) -> None:
    counter = count([reply[i : i + 1] for i in range(len(reply))])
    assert counter.count == expected(reply)


def test_finished_only_for_an_array_result() -> None:
    assert count([REPLIES[3]]).finished
    assert not count([REPLIES[9]]).finished


def test_the_limit_is_inclusive() -> None:
    three = b'{"jsonrpc":"2.0","id":1,"result":[{},{},{}]}'
    assert count([three], limit=3).count == 3
    with pytest.raises(TooManyResults):
        count([three], limit=2)


def test_stops_as_soon_as_the_element_past_the_limit_begins() -> None:
    reply = b'{"jsonrpc":"2.0","id":1,"result":[' + b",".join(b"%d" % i for i in range(100))
    fed: list[int] = []
    with pytest.raises(TooManyResults):
        feed(ResultCounter(10), [reply[i : i + 1] for i in range(len(reply))], fed)
    assert reply[: sum(fed)].endswith(b"9,")  # the comma that starts element 11


def test_large_reply_is_counted_quickly_and_abandoned_early() -> None:
    """20,000 logs (~11 MB) in 64 KiB chunks: aborted at the 10,001st (the timing is printed, not asserted)."""
    item = msgspec.json.encode(LOG)
    reply = b'{"jsonrpc":"2.0","id":1,"result":[' + b",".join([item] * 20_000) + b"]}"
    chunks = [reply[i : i + 65536] for i in range(0, len(reply), 65536)]
    fed: list[int] = []
    started = time.perf_counter()
    with pytest.raises(TooManyResults):
        feed(ResultCounter(10_000), chunks, fed)
    elapsed = time.perf_counter() - started
    consumed = sum(fed)
    per_mb = elapsed / (consumed / 1e6)
    print(
        f"\nscanned {consumed / 1e6:.1f} MB of {len(reply) / 1e6:.1f} MB in {elapsed * 1e3:.0f} ms"
    )
    assert consumed < len(reply) * 0.55
    print(f"({per_mb * 1e3:.0f} ms per MB)")
