"""The broker's own checks of a Solana call before any upstream sees it (sans-io): the limits the
dev chain keeps, with its texts (Solana's), so both adapters refuse alike and an upstream is never
asked for more than a node would answer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import msgspec

from .. import _wire as wire
from .._errors import invalid_params
from .._methods import (
    MAX_BLOCKS_RANGE,
    MAX_MULTIPLE_ACCOUNTS,
    MAX_SIGNATURE_STATUSES,
    MAX_SIGNATURES_FOR_ADDRESS,
)

_decode: Final = msgspec.json.Decoder()


def _first_list(most: int) -> Callable[[list[Any]], None]:
    def check(params: list[Any]) -> None:
        wire.bounded_list(params[0] if params else None, most)

    return check


def _blocks_range(params: list[Any]) -> None:
    start, end = [*params, None, None][:2]
    if isinstance(start, int) and isinstance(end, int) and end - start > MAX_BLOCKS_RANGE:
        raise invalid_params(f"Slot range too large; max {MAX_BLOCKS_RANGE}")


def _config(params: list[Any]) -> Any:
    return params[1] if len(params) > 1 and isinstance(params[1], dict) else {}


def _signatures_limit(params: list[Any]) -> None:
    limit = _config(params).get("limit")
    if isinstance(limit, int) and limit > MAX_SIGNATURES_FOR_ADDRESS:
        raise invalid_params(f"Invalid limit; max {MAX_SIGNATURES_FOR_ADDRESS}")


def _program_filters(params: list[Any]) -> None:
    wire.program_filters(_config(params).get("filters"))


_CHECKS: Final[dict[str, Callable[[list[Any]], None]]] = {
    "getMultipleAccounts": _first_list(MAX_MULTIPLE_ACCOUNTS),
    "getSignatureStatuses": _first_list(MAX_SIGNATURE_STATUSES),
    "getSignaturesForAddress": _signatures_limit,
    "getProgramAccounts": _program_filters,
    "getBlocks": _blocks_range,
}


def check_params(method: str, params: bytes) -> None:
    """Raise Solana's -32602 for params the broker refuses (not an array; more entries, a longer
    range or more filters than the method's limit)."""
    if not params.lstrip().startswith(b"["):
        raise invalid_params("invalid type: map, expected a sequence")
    check = _CHECKS.get(method)
    if check is None:
        return
    try:
        decoded = _decode.decode(params)
    except msgspec.DecodeError:
        raise invalid_params("params are not JSON") from None
    check(decoded)
