"""Polled filters' params (``adapters.evm.filters``): decoded by the Structs of ``schemas.filter_params``, the
filter object read as geth reads it."""

from __future__ import annotations

import tracemalloc
from typing import Any

import msgspec
import pytest

from adapters.evm.filters import MAX_BUFFERED, FilterRegistry, FilterStatistics
from broker.events.chain_events import ChainEvent, HeadEvent, LogsEvent
from schemas.errors import InvalidParams, LimitExceeded, ServerError
from tests.support.fake_chain import make_block

KEY = "dev"
CHAIN = "eip155:1337"
HASH = "0x" + "ab" * 32


async def _get_logs(chain: str, spec: dict[str, Any]) -> list[Any]:
    return [spec]


def _raw(value: Any) -> msgspec.Raw:
    return msgspec.Raw(msgspec.json.encode(value))


async def test_a_block_hash_with_a_range_is_refused_whatever_the_key_case() -> None:
    registry = FilterRegistry(_get_logs)
    for spec in ({"BlockHash": HASH, "fromBlock": "0x1"}, {"blockhash": HASH, "TOBLOCK": "0x2"}):
        with pytest.raises(InvalidParams, match="cannot specify both BlockHash and FromBlock"):
            registry.new_log_filter(KEY, CHAIN, _raw([spec]))
    # a null member is absent, as geth reads it
    registry.new_log_filter(KEY, CHAIN, _raw([{"blockHash": HASH, "fromBlock": None}]))
    assert len(registry) == 1


async def test_pending_as_from_block_is_refused_by_get_filter_logs_whatever_the_key_case() -> None:
    registry = FilterRegistry(_get_logs)
    for key in ("fromBlock", "FROMBLOCK"):
        fid = registry.new_log_filter(KEY, CHAIN, _raw([{key: "pending"}]))
        with pytest.raises(InvalidParams, match="pending is not supported as fromBlock"):
            await registry.logs(KEY, _raw([fid]))
    fid = registry.new_log_filter(KEY, CHAIN, _raw([{"FromBlock": "0x1"}]))
    assert await registry.logs(KEY, _raw([fid])) == [{"FromBlock": "0x1"}]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({}, "non-array args"),
        ([], "missing value for required argument 0"),
        ([{}, {}], "too many arguments, want at most 1"),
        (["x"], "invalid argument 0: filter must be an object"),
        ([{"fromBlock": []}], "invalid argument 0: invalid fromBlock []"),
        ([{"toBlock": "0xzz"}], "invalid argument 0: invalid toBlock '0xzz'"),
    ],
)
async def test_new_filter_params_are_refused_with_geths_texts(params: Any, message: str) -> None:
    registry = FilterRegistry(_get_logs)
    with pytest.raises(InvalidParams) as caught:
        registry.new_log_filter(KEY, CHAIN, _raw(params))
    assert caught.value.message == message
    assert len(registry) == 0


async def test_filter_ids_are_strings() -> None:
    registry = FilterRegistry(_get_logs)
    fid = registry.new_block_filter(KEY, CHAIN)
    with pytest.raises(InvalidParams, match=r"\Ainvalid argument 0: expected `str`, got `int`\Z"):
        registry.changes(KEY, _raw([1]))
    with pytest.raises(InvalidParams, match=r"\Atoo many arguments, want at most 1\Z"):
        registry.uninstall(KEY, _raw([fid, fid]))
    with pytest.raises(ServerError, match="filter not found"):
        registry.changes("another key", _raw([fid]))
    assert registry.changes(KEY, _raw([fid])) == []
    assert registry.uninstall(KEY, _raw([fid])) is True


def _events(count: int, logs: int = 3) -> list[ChainEvent]:
    events: list[ChainEvent] = []
    parent = HASH
    for number in range(1, count + 1):
        block = make_block(number, parent, logs=logs)
        events += [HeadEvent(CHAIN, block), LogsEvent(CHAIN, block, removed=False)]
        parent = block.hash
    return events


async def test_unpolled_filters_share_one_journal_of_events() -> None:
    """Filters never polled (installed by a client that went away) hold no copy of the events:
    memory grows with the events, not with the filters times the events."""
    registry = FilterRegistry(_get_logs)
    registry.on_event(_events(1)[0])  # nothing installed: nothing kept
    assert registry.statistics() == FilterStatistics(0, 0)
    polled = registry.new_block_filter(KEY, CHAIN)
    for _ in range(200):
        registry.new_block_filter(KEY, CHAIN)
        registry.new_log_filter(KEY, CHAIN, _raw([{}]))
    events = _events(100)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for event in events:
            registry.on_event(event)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # 400 filters each keeping 100 block hashes or 300 logs took megabytes (~5 MB).
    assert grown < 100_000
    assert registry.statistics() == FilterStatistics(401, 200)
    assert registry.changes(KEY, _raw([polled])) == [e.block.hash for e in events[::2]]
    assert registry.statistics().journal_events == 200  # the other filters have not read them


async def test_each_filter_gets_its_own_changes_from_the_journal() -> None:
    registry = FilterRegistry(_get_logs)
    events = _events(4, logs=2)
    blocks = registry.new_block_filter(KEY, CHAIN)
    for event in events[:4]:
        registry.on_event(event)
    logs = registry.new_log_filter(KEY, CHAIN, _raw([{}]))  # sees only what comes after it
    for event in events[4:]:
        registry.on_event(event)
    assert registry.changes(KEY, _raw([blocks])) == [e.block.hash for e in events[::2]]
    assert registry.statistics().journal_events == 4  # the log filter's part is kept
    found = registry.changes(KEY, _raw([logs]))
    assert [bytes(r) for r in found] == [log.json for e in events[5::2] for log in e.block.logs]
    assert registry.statistics().journal_events == 0  # read by every filter: dropped
    assert registry.changes(KEY, _raw([blocks])) == []
    assert registry.uninstall(KEY, _raw([logs]))


async def test_a_filter_left_too_far_behind_is_told_to_poll_more_often() -> None:
    registry = FilterRegistry(_get_logs)
    lagging = registry.new_block_filter(KEY, CHAIN)
    for event in _events(MAX_BUFFERED // 2 + 1, logs=0):
        registry.on_event(event)
    assert registry.statistics().journal_events == MAX_BUFFERED  # bounded
    with pytest.raises(LimitExceeded, match="poll more often"):
        registry.changes(KEY, _raw([lagging]))
    after = _events(1, logs=0)
    registry.on_event(after[0])
    assert registry.changes(KEY, _raw([lagging])) == [after[0].block.hash]
