"""``eth_subscribe`` params of the EVM profile (``adapters.evm.subscriptions``): geth's texts, and
the filter object read as geth reads it."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.evm.log_filter import LogCriteria
from adapters.evm.subscriptions import parse_subscribe
from schemas.errors import InvalidParams

A = "0x" + "aa" * 20
ONLY = "invalid argument 1: a logs subscription takes only address and topics"


@pytest.mark.parametrize(
    "criteria",
    [
        {"fromBlock": "0x1"},
        {"FromBlock": "0x1"},
        {"BLOCKHASH": "0x" + "11" * 32},
        {"toblock": "0x1"},
    ],
)
def test_a_logs_subscription_takes_no_block_range_whatever_the_key_case(
    criteria: dict[str, Any],
) -> None:
    with pytest.raises(InvalidParams) as caught:
        parse_subscribe(["logs", criteria])
    assert caught.value.message == ONLY


def test_a_null_block_range_member_is_absent_and_address_keys_match_any_case() -> None:
    matcher = parse_subscribe(["logs", {"fromBlock": None, "Address": A}])
    assert (matcher.kind, matcher.criteria) == ("logs", LogCriteria(frozenset({A})))


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({}, "non-array args"),
        ([], "missing value for required argument 0"),
        (["newHeads", {}], "too many arguments, want at most 1"),
        (["logs", {}, {}], "too many arguments, want at most 2"),
        ([1], "invalid argument 0: subscription name must be a string"),
    ],
)
def test_subscribe_params_are_refused_with_geths_texts(params: Any, message: str) -> None:
    with pytest.raises(InvalidParams) as caught:
        parse_subscribe(params)
    assert caught.value.message == message
