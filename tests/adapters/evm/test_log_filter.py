"""Log filter objects, criteria and geth's matching rules (sans-io)."""

from typing import Any

import pytest

from adapters.evm.log_filter import LogCriteria, decode_log_filter, parse_criteria, parse_filter
from schemas import eth as schema
from schemas.errors import InvalidParams
from schemas.eth import MAX_FILTER_CRITERIA

A = "0x" + "aa" * 20
B = "0x" + "bb" * 20
T1 = "0x" + "11" * 32
T2 = "0x" + "22" * 32
T3 = "0x" + "33" * 32
HASH = "0x" + "ab" * 32


def test_empty_filter_matches_everything() -> None:
    criteria = parse_criteria({})
    assert criteria == LogCriteria()
    assert criteria.matches(A, ())
    assert criteria.matches(B, (T1, T2))


def test_addresses_are_case_insensitive_and_or_matched() -> None:
    criteria = parse_criteria({"address": [A.upper().replace("0X", "0x"), B]})
    assert criteria.matches(A, ())
    assert criteria.matches(B, (T1,))
    assert not criteria.matches("0x" + "cc" * 20, ())
    assert parse_criteria({"address": A}).addresses == frozenset({A})


def test_topic_positions_and_alternatives() -> None:
    criteria = parse_criteria({"topics": [[T1, T2], None, T3]})
    assert criteria.matches(A, (T1, T1, T3))
    assert criteria.matches(A, (T2, T2, T3, T1))
    assert not criteria.matches(A, (T3, T1, T3))
    assert not criteria.matches(A, (T1, T1, T1))
    assert not criteria.matches(A, (T1, T1)), "more positions than the log has topics never match"


def test_trailing_wildcards_still_require_that_many_topics() -> None:
    criteria = parse_criteria({"topics": [T1, None]})
    assert criteria.matches(A, (T1, T2))
    assert not criteria.matches(A, (T1,))


@pytest.mark.parametrize("position", [[], [T1, None], None])
def test_empty_or_null_holding_positions_are_wildcards(position: object) -> None:
    criteria = parse_criteria({"topics": [position, T2]})
    assert criteria.matches(A, (T3, T2))


@pytest.mark.parametrize(
    "obj",
    [
        [],
        {"address": "0x12"},
        {"address": [A, 5]},
        {"topics": "0x"},
        {"topics": ["0x1234"]},
        {"topics": [T1, T1, T1, T1, T1]},
    ],
)
def test_malformed_filters_are_invalid_params(obj: object) -> None:
    with pytest.raises(InvalidParams):
        parse_criteria(obj)


def test_malformed_filters_get_geths_texts() -> None:
    with pytest.raises(InvalidParams) as failed:
        parse_criteria({"address": "0x12"}, where="invalid argument 1")
    assert failed.value.message == (
        "invalid argument 1: invalid address: hex has invalid length 1 after decoding; "
        "expected 20 for address"
    )


def test_more_than_5000_addresses_and_topics_is_rejected() -> None:
    assert MAX_FILTER_CRITERIA == 5_000
    addresses = [f"0x{i:040x}" for i in range(MAX_FILTER_CRITERIA)]
    assert parse_criteria({"address": addresses}).addresses == frozenset(addresses)
    with pytest.raises(InvalidParams, match="too many addresses and topics"):
        parse_criteria({"address": addresses, "topics": [T1]})


def test_duplicates_count_towards_the_limit_but_not_the_match() -> None:
    criteria = parse_criteria({"address": [A] * MAX_FILTER_CRITERIA})
    assert criteria == LogCriteria(frozenset({A}))
    with pytest.raises(InvalidParams, match="too many addresses and topics"):
        parse_criteria({"address": [A] * MAX_FILTER_CRITERIA, "topics": [[T1, T1]]})


def test_log_filters() -> None:
    decoded = decode_log_filter(
        {
            "FROMBLOCK": "0x1",  # keys match case-insensitively, as in Go
            "toBlock": "latest",
            "address": "0x" + "AA" * 20,
            "topics": [None, HASH, [HASH, None], [HASH, "0x" + "cd" * 32]],
        }
    )
    assert decoded.from_block == 1
    assert decoded.to_block == "latest"
    assert decoded.addresses == ("0x" + "aa" * 20,)
    assert decoded.topics == (None, (HASH,), None, (HASH, "0x" + "cd" * 32))
    assert decoded.criteria_count() == 4
    assert decode_log_filter({"blockHash": None, "fromBlock": None}) == schema.LogFilter()
    with pytest.raises(
        schema.ArgumentError, match=r"Go struct field input.blockHash of type common.Hash"
    ):
        decode_log_filter({"blockHash": "12"})
    with pytest.raises(
        schema.ArgumentError, match=r"cannot unmarshal array into Go value of type filters.input"
    ):
        decode_log_filter([])


BOTH = "invalid argument 0: cannot specify both BlockHash and FromBlock/ToBlock, choose one or the other"


@pytest.mark.parametrize(
    "obj",
    [
        {"blockHash": HASH, "fromBlock": "0x1"},
        {"BLOCKHASH": HASH, "toblock": "latest"},
        {"blockhash": HASH, "ToBlock": "0x2", "FromBlock": "0x1"},
    ],
)
def test_a_block_hash_excludes_a_block_range_whatever_the_key_case(obj: dict[str, Any]) -> None:
    with pytest.raises(InvalidParams) as caught:
        parse_filter(obj)
    assert caught.value.message == BOTH
    with pytest.raises(schema.ArgumentError, match="cannot specify both"):
        decode_log_filter(obj)


@pytest.mark.parametrize(
    "obj",
    [
        {"blockHash": HASH},
        {"blockHash": HASH, "fromBlock": None, "TOBLOCK": None},
        {"blockHash": None, "toBlock": "0x1"},
        {"fromBlock": "0x1", "toBlock": "0x2"},
    ],
)
def test_a_null_member_is_absent(obj: dict[str, Any]) -> None:
    members, _ = parse_filter(obj)
    assert None not in members.values()
    decode_log_filter(obj)


def test_address_and_topics_match_whatever_their_key_case() -> None:
    members, criteria = parse_filter({"Address": A, "TOPICS": [T1], "FromBlock": "0x1"})
    assert criteria == LogCriteria(frozenset({A}), (frozenset({T1}),))
    assert members["fromblock"] == "0x1"
    assert parse_criteria({"ADDRESS": [A, B]}).addresses == frozenset({A, B})
    assert decode_log_filter({"ADDRESS": A}).addresses == (A,)


def test_a_filter_object_must_be_an_object() -> None:
    with pytest.raises(InvalidParams, match=r"\Ainvalid argument 1: filter must be an object\Z"):
        parse_filter(["x"], where="invalid argument 1")
