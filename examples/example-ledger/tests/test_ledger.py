"""The example adapter passes scopecast's shared adapter checks and does what it says."""

from __future__ import annotations

import msgspec
import pytest
from example_ledger import LedgerAdapter

from adapters.base import NetworkSpec
from adapters.conformance import check_chain_adapter
from adapters.registry import load
from schemas.errors import InvalidParams

SPEC = NetworkSpec("ledger", "ledger:demo", "example-ledger", {"genesis": ["a", "b"]})


def raw(value: object) -> msgspec.Raw:
    return msgspec.Raw(msgspec.json.encode(value))


async def test_the_shared_checks_pass() -> None:
    await check_chain_adapter(LedgerAdapter.from_spec(SPEC))


def test_the_entry_point_finds_it() -> None:
    assert load("example-ledger") is LedgerAdapter


async def test_append_head_and_entries() -> None:
    ledger = LedgerAdapter.from_spec(SPEC)
    assert await ledger.call("ledger:demo", "ledger_head", raw([])) == 1
    entry = await ledger.call("ledger:demo", "ledger_append", raw(["c"]))
    assert entry.height == 2
    assert await ledger.call("ledger:demo", "ledger_getEntry", raw([2])) == entry
    assert await ledger.call("ledger:demo", "ledger_getEntry", raw([9])) is None
    with pytest.raises(InvalidParams):
        await ledger.call("ledger:demo", "ledger_getEntry", raw([-1]))


def test_unknown_options_are_a_configuration_error() -> None:
    with pytest.raises(ValueError, match="genisis"):
        LedgerAdapter.from_spec(
            NetworkSpec("ledger", "ledger:demo", "example-ledger", {"genisis": []})
        )
