"""The EVM profile's subscription family (``adapters.evm.subscriptions``), sans-io: its index
finds the filters a log can match, the ``removed`` splice, heads, and ``eth_unsubscribe``'s ids."""

from __future__ import annotations

import pytest

from adapters.base import GroupedIndex
from adapters.evm.blocks import (
    ChainBlock,
    HeadEvent,
    LogRecord,
    LogsEvent,
    TransactionRecord,
    with_transactions,
)
from adapters.evm.subscriptions import (
    EVM_SUBSCRIPTIONS,
    NEW_HEADS,
    EvmIndex,
    EvmMatcher,
    follows_activity,
    parse_subscribe,
)
from schemas.errors import ServerError

CHAIN = "eip155:1"
A = "0x" + "aa" * 20
B = "0x" + "bb" * 20
T1 = "0x" + "11" * 32
T2 = "0x" + "22" * 32


def _log(address: str, *topics: str) -> LogRecord:
    return LogRecord(address, topics, b'{"address":"%s","removed":false}' % address.encode())


def _block(*logs: LogRecord) -> ChainBlock:
    return ChainBlock(1, "0x" + "01" * 32, "0x" + "00" * 32, b'{"number":"0x1"}', logs)


def _index(**subs: list[object]) -> EvmIndex[str]:
    index: EvmIndex[str] = EVM_SUBSCRIPTIONS.new_index()
    for name, params in subs.items():
        index.add(name, parse_subscribe(params))
    return index


def test_a_log_reaches_the_filters_of_its_address_its_first_topic_and_the_catch_alls() -> None:
    index = _index(
        by_a=["logs", {"address": A}],
        by_b=["logs", {"address": B}],
        by_t1=["logs", {"topics": [T1]}],
        by_t2=["logs", {"topics": [T2]}],
        by_a_t2=["logs", {"address": A, "topics": [T2]}],
        every=["logs"],
        heads=[NEW_HEADS],
    )
    found = list(index.matching(LogsEvent(CHAIN, _block(_log(A, T1)), removed=False)))
    assert {payload for _, payload in found} == {_log(A).json}
    assert sorted(sub for subs, _ in found for sub in subs) == ["by_a", "by_t1", "every"]


def test_a_filter_is_the_same_group_for_every_log_of_a_block_it_matches() -> None:
    index = _index(by_a=["logs", {"address": A}], every=["logs"])
    block = _block(_log(A, T1), _log(B, T1), _log(A, T2))
    found = list(index.matching(LogsEvent(CHAIN, block, removed=False)))
    by_group: dict[int, tuple[list[str], list[bytes]]] = {}
    for subs, payload in found:
        by_group.setdefault(id(subs), (sorted(subs), []))[1].append(payload)
    # the broker gathers a group's payloads by its identity: one write per subscriber
    assert sorted(by_group.values()) == [
        (["by_a"], [_log(A, T1).json, _log(A, T2).json]),
        (["every"], [_log(A, T1).json, _log(B, T1).json, _log(A, T2).json]),
    ]


def test_each_log_of_a_block_is_its_own_payload_and_unmatched_logs_none() -> None:
    index = _index(by_a=["logs", {"address": A}])
    block = _block(_log(A, T1), _log(B, T1), _log(A, T2))
    found = [list(subs) for subs, _ in index.matching(LogsEvent(CHAIN, block, removed=False))]
    assert found == [["by_a"], ["by_a"]]


def test_logs_of_an_orphaned_block_are_sent_with_removed_true_once_built() -> None:
    index = _index(by_a=["logs", {"address": A}], every=["logs"])
    found = list(index.matching(LogsEvent(CHAIN, _block(_log(A)), removed=True)))
    assert len(found) == 2  # two filters, one payload object built for both
    assert found[0][1] is found[1][1]
    assert found[0][1] == b'{"address":"%s","removed":true}' % A.encode()


def test_a_head_reaches_the_new_heads_subscriptions_only() -> None:
    index = _index(heads=[NEW_HEADS], every=["logs"])
    block = _block(_log(A))
    assert [(list(s), p) for s, p in index.matching(HeadEvent(CHAIN, block))] == [
        (["heads"], block.header_json)
    ]
    assert EvmMatcher(NEW_HEADS).render(HeadEvent(CHAIN, block)) == block.header_json


def test_subscriptions_sharing_a_filter_are_matched_as_one_group_and_leave_it_one_by_one() -> None:
    index = _index(
        first=["logs", {"address": A}],
        second=["logs", {"address": A}],
        narrower=["logs", {"address": A, "topics": [T2]}],
    )
    assert len(index.by_address[A]) == 2  # two distinct filters, not three subscriptions
    event = LogsEvent(CHAIN, _block(_log(A, T1)), removed=False)
    assert [sorted(subs) for subs, _ in index.matching(event)] == [["first", "second"]]
    index.remove("first", parse_subscribe(["logs", {"address": A}]))
    assert [sorted(subs) for subs, _ in index.matching(event)] == [["second"]]
    event_t2 = LogsEvent(CHAIN, _block(_log(A, T2)), removed=False)
    found = index.matching(event_t2)
    assert sorted(sub for subs, _ in found for sub in subs) == ["narrower", "second"]


def test_removed_subscriptions_leave_no_buckets_behind() -> None:
    index = _index(
        by_a=["logs", {"address": [A, B]}], by_t1=["logs", {"topics": [[T1, T2]]}], every=["logs"]
    )
    index.remove("by_a", parse_subscribe(["logs", {"address": [A, B]}]))
    index.remove("by_t1", parse_subscribe(["logs", {"topics": [[T1, T2]]}]))
    index.remove("every", parse_subscribe(["logs"]))
    assert not index.by_address
    assert not index.by_topic0
    assert not index.catch_all
    assert list(index.matching(LogsEvent(CHAIN, _block(_log(A, T1)), removed=False))) == []


def test_the_family_declares_geths_methods_ids_and_errors() -> None:
    family = EVM_SUBSCRIPTIONS
    assert dict(family.methods) == {"eth_subscribe": "eth_unsubscribe"}
    assert family.notifications() == {"eth_subscription"}
    assert not family.integer_ids
    assert family.unsubscribe_id("eth_unsubscribe", ["0xab"]) == "0xab"
    assert family.unsubscribe_id("eth_unsubscribe", [7]) is None
    assert family.unsubscribe_id("eth_unsubscribe", []) is None
    assert isinstance(family.unknown_subscription(), ServerError)
    assert family.kind("eth_subscribe", parse_subscribe(["logs"])) == "logs"
    assert "eth_subscribe" in family.method_docs().methods
    assert family.method_docs().methods["eth_subscription"].result is None


class _Slot:
    key = ("slot",)
    notification = "slotNotification"
    one_shot = False

    def render(self, event: object) -> bytes | None:
        return b"%d" % event if isinstance(event, int) else None


def test_the_default_index_renders_once_per_group() -> None:
    index: GroupedIndex[str] = GroupedIndex()
    index.add("a", _Slot())
    index.add("b", _Slot())
    assert [(sorted(s), p) for s, p in index.matching(3)] == [(["a", "b"], b"3")]
    assert list(index.matching("not a slot")) == []
    index.remove("a", _Slot())
    index.remove("b", _Slot())
    assert index.groups == {}


@pytest.mark.parametrize("params", [["newHeads"], ["logs", {"address": A}]])
def test_a_matcher_keys_alike_subscriptions_alike(params: list[object]) -> None:
    assert parse_subscribe(params).key == parse_subscribe(list(params)).key


def test_activity_gets_a_block_s_transactions_then_its_logs_each_once_per_subscription() -> None:
    to_b = TransactionRecord(A, B, b'{"hash":"0x1"}')
    to_self = TransactionRecord(A, A, b'{"hash":"0x2"}')
    creation = TransactionRecord(B, None, b'{"hash":"0x3"}')
    block = ChainBlock(
        1,
        "0x" + "01" * 32,
        "0x" + "00" * 32,
        b"{}",
        (_log("0x" + "cc" * 20, T1, "0x" + "0" * 24 + A[2:]),),
        (to_b, to_self, creation),
    )
    index = _index(a=["activity", {"address": A}], b=["activity", {"address": B}])
    found = [
        (sorted(group), payload)
        for group, payload in index.matching(LogsEvent(CHAIN, block, False))
    ]
    first = b'{"kind":"transaction","removed":false,"transaction":{"hash":"0x1"}}'
    # A transfer from A to B: A's subscription and B's, in either order, once each.
    assert sorted(found[:2]) == [(["a"], first), (["b"], first)]
    assert found[2:] == [
        (["a"], b'{"kind":"transaction","removed":false,"transaction":{"hash":"0x2"}}'),
        (["b"], b'{"kind":"transaction","removed":false,"transaction":{"hash":"0x3"}}'),
        (
            ["a"],
            b'{"kind":"log","removed":false,"log":{"address":"0x%s","removed":false}}'
            % (b"cc" * 20),
        ),
    ]
    removed = [payload for _, payload in index.matching(LogsEvent(CHAIN, block, True))]
    assert removed[0] == b'{"kind":"transaction","removed":true,"transaction":{"hash":"0x1"}}'
    assert removed[-1].endswith(b'"removed":true}}')  # the log's own member too
    assert follows_activity(index)
    index.remove("a", parse_subscribe(["activity", {"address": A}]))
    index.remove("b", parse_subscribe(["activity", {"address": B}]))
    assert not follows_activity(index)
    assert list(index.matching(LogsEvent(CHAIN, block, False))) == []


def test_a_block_answer_with_whole_transactions_gives_the_block_its_records() -> None:
    block = _block()
    answer = {
        "hash": block.hash,
        "transactions": [
            {"hash": "0x1", "from": A.upper().replace("0X", "0x"), "to": B},
            {"hash": "0x2", "from": B, "to": None},
        ],
    }
    found = with_transactions(block, answer)
    assert [(t.sender, t.recipient) for t in found.transactions] == [(A, B), (B, None)]
    assert found.has_activity
    assert not block.has_activity
    assert b'"hash":"0x1"' in found.transactions[0].json
    # Another block (a reorganisation in between), hashes only, or nothing: left as it was.
    assert with_transactions(block, {**answer, "hash": "0x" + "ff" * 32}) is block
    assert with_transactions(block, {"hash": block.hash, "transactions": ["0x1"]}) is block
    assert with_transactions(block, None) is block
