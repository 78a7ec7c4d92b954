"""Checking positional params and their hex fields, with errors that name the argument and field.

Errors read like geth's (``invalid argument 0: …``) and say which field was wrong, with a path such
as ``accessList[0].address``, because a signing request that fails for an unnamed reason is hard to
fix from a dapp.
"""

from __future__ import annotations

import re
from typing import Any, Final, TypeVar

import msgspec
from eth_utils.address import is_checksum_address

from schemas.errors import InvalidParams, invalid_argument
from schemas.params import Mistake, positional_count

T = TypeVar("T")

_HEX_DIGITS: Final = re.compile(r"0x[0-9a-fA-F]*\Z")
_ADDRESS: Final = re.compile(r"0x[0-9a-fA-F]{40}\Z")
_UINT256_MAX: Final = 2**256 - 1


def field_error(index: int, path: str, reason: str) -> InvalidParams:
    """``invalid argument N: field `path`: reason`` (or without the field when ``path`` is empty)."""
    return invalid_argument(index, f"field `{path}`: {reason}" if path else reason)


def missing_field(index: int, path: str) -> InvalidParams:
    """``invalid argument N: missing field `path```."""
    return invalid_argument(index, f"missing field `{path}`")


def check_count(params: list[Any], required: int, allowed: int | None = None) -> None:
    """Require at least ``required`` params and at most ``allowed`` (default: exactly required)."""
    positional_count(params, required, required if allowed is None else allowed)


def convert(value: Any, type_: type[T], index: int) -> T:
    """Shape-check a JSON object as ``type_``, turning msgspec's message into a named field."""
    try:
        return msgspec.convert(value, type_)
    except msgspec.ValidationError as exc:
        raise _translate(Mistake.of(exc), index) from None


def _translate(mistake: Mistake, index: int) -> InvalidParams:
    if mistake.kind == "missing":
        return missing_field(index, mistake.where)
    if mistake.kind == "unknown":
        return invalid_argument(index, f"unknown field `{mistake.where}`")
    return field_error(index, mistake.where, mistake.clause)


def quantity(value: Any, index: int, path: str = "") -> int:
    """A ``0x`` hex quantity of at most 256 bits."""
    if not isinstance(value, str) or not _HEX_DIGITS.match(value) or len(value) == 2:
        raise field_error(index, path, "want a 0x-prefixed hex quantity")
    number = int(value, 16)
    if number > _UINT256_MAX:
        raise field_error(index, path, "quantity exceeds 256 bits")
    return number


def lenient_quantity(value: Any, index: int, path: str = "") -> int:
    """A quantity as anvil and hardhat take it: a ``0x`` hex string or a non-negative JSON
    integer (web3.py sends ``type`` as a number), at most 256 bits."""
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str):
            return quantity(value, index, path)
        raise field_error(index, path, "want a 0x-prefixed hex quantity or a number")
    if not 0 <= value <= _UINT256_MAX:
        raise field_error(index, path, "want a quantity between 0 and 2**256 - 1")
    return value


def data(value: Any, index: int, path: str = "") -> bytes:
    """``0x`` followed by an even number of hex digits (``0x`` alone is empty data)."""
    if not isinstance(value, str) or not _HEX_DIGITS.match(value) or len(value) % 2:
        raise field_error(index, path, "want 0x-prefixed hex data with an even number of digits")
    return bytes.fromhex(value[2:])


def word(value: Any, index: int, path: str = "") -> bytes:
    """Exactly 32 bytes of hex data (a storage key, a hash)."""
    raw = data(value, index, path)
    if len(raw) != 32:
        raise field_error(index, path, f"want 32 bytes, got {len(raw)}")
    return raw


def address(value: Any, index: int, path: str = "") -> str:
    """A 20-byte ``0x`` address, returned lowercase.

    Mixed case must be a valid EIP-55 checksum: a dapp that sends one means it, and a failing
    checksum is a mistyped address that must not be signed for.
    """
    if not isinstance(value, str) or not _ADDRESS.match(value):
        raise field_error(index, path, "want a 0x-prefixed 20-byte hex address")
    digits = value[2:]
    if digits != digits.lower() and digits != digits.upper() and not is_checksum_address(value):
        raise field_error(index, path, "address has an invalid EIP-55 checksum")
    return value.lower()


def chain_reference(chain: str) -> int:
    """The decimal reference of an ``eip155:<n>`` CAIP-2 id."""
    namespace, _, reference = chain.partition(":")
    if namespace != "eip155" or not reference.isdigit() or reference != str(int(reference)):
        raise ValueError(f"not an eip155 chain id: {chain!r}")
    return int(reference)
