"""Shared values and checks for the session-layer tests."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from broker.sessions import ChainSupport, Identity, Session
from schemas.caip import ScopeObject
from schemas.errors import RpcError

NOW = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
DEV = Identity.of("dev", "https://dapp.example")
ADDRESS = "0xAb5801a7D398351b8bE11C439e05C5B3259aeC9B"
ADDRESS_LOWER = ADDRESS.lower()
OTHER_ADDRESS = "0x" + "11" * 20

SUPPORTED = {
    "eip155:1337": ChainSupport(
        methods=frozenset({"eth_call", "eth_getLogs", "personal_sign"}),
        notifications=frozenset({"eth_subscription"}),
    ),
    "eip155:1": ChainSupport(
        methods=frozenset({"eth_call"}), notifications=frozenset({"eth_subscription"})
    ),
}


def scope(
    methods: tuple[str, ...] = (),
    notifications: tuple[str, ...] = (),
    accounts: tuple[str, ...] = (),
) -> ScopeObject:
    return ScopeObject(methods=methods, notifications=notifications, accounts=accounts)


def make_session(
    scopes: dict[str, ScopeObject] | None = None, *, expiry: datetime | None = None
) -> Session:
    return Session(
        identity=DEV,
        scopes={
            "eip155:1337": scope(
                ("eth_call", "personal_sign"),
                ("eth_subscription",),
                (f"eip155:1337:{ADDRESS_LOWER}",),
            ),
            "eip155:1": scope(("eth_call",), (), ()),
        }
        if scopes is None
        else scopes,
        expiry=expiry or NOW + timedelta(days=1),
        global_config={},
        created_at=NOW,
    )


def assert_rejected(
    error: type[RpcError],
    call: Callable[[Any], object],
    value: Any,
    *,
    code: int,
    match: str | None = None,
) -> RpcError:
    """``call(value)`` raises ``error`` with wire ``code`` and leaves ``value`` as it was."""
    before = copy.deepcopy(value)
    with pytest.raises(error, match=None if match is None else re.escape(match)) as caught:
        call(value)
    assert caught.value.code == code
    assert value == before
    return caught.value
