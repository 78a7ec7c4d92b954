"""Polled filters' params (``broker.filters``): decoded by the Structs of ``schemas.filters``, the
filter object read as geth reads it."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from broker.errors import InvalidParams, ServerError
from broker.filters import FilterRegistry

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
