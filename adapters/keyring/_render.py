"""Readable renderings of amounts and calls for the wallet operator's approval summary."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

_WEI_PER_ETHER = Decimal(10) ** 18
_WEI_PER_GWEI = Decimal(10) ** 9


def hex_quantity(number: int) -> str:
    """``0x``-prefixed hex without leading zeros, as JSON-RPC writes quantities."""
    return hex(number)


def hex_bytes(raw: bytes) -> str:
    """``0x``-prefixed lowercase hex data."""
    return "0x" + raw.hex()


def _plain(amount: Decimal) -> str:
    # ``normalize`` drops trailing zeros; ``:f`` keeps it out of exponent notation.
    return f"{amount.normalize():f}"


def ether(wei: int) -> dict[str, str]:
    """An amount of wei as ``{"wei": …, "ether": …}`` decimal strings."""
    return {"wei": str(wei), "ether": _plain(Decimal(wei) / _WEI_PER_ETHER)}


def gwei(wei: int) -> dict[str, str]:
    """A per-gas price as ``{"wei": …, "gwei": …}`` decimal strings."""
    return {"wei": str(wei), "gwei": _plain(Decimal(wei) / _WEI_PER_GWEI)}


def calldata(data: bytes) -> dict[str, Any]:
    """Calldata as its length and 4-byte selector (None when too short to have one)."""
    return {"bytes": len(data), "selector": hex_bytes(data[:4]) if len(data) >= 4 else None}


def call(to: str | None, value: int, data: bytes) -> dict[str, Any]:
    """One call: target (None for a contract creation), value and calldata."""
    return {"to": to, "value": ether(value), "data": calldata(data)}
