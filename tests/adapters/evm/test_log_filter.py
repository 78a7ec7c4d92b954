"""Log filter criteria and geth's matching rules (sans-io)."""

import pytest

from adapters.evm.log_filter import LogCriteria, parse_criteria
from broker.errors import InvalidParams
from schemas.eth import MAX_FILTER_CRITERIA

A = "0x" + "aa" * 20
B = "0x" + "bb" * 20
T1 = "0x" + "11" * 32
T2 = "0x" + "22" * 32
T3 = "0x" + "33" * 32


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
