"""Positional params of a call, checked and decoded with geth's error texts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

from schemas.errors import InvalidParams, invalid_argument
from schemas.eth import ArgumentError, decode_params
from schemas.params import positional_count

T = TypeVar("T")


def positional(raw: msgspec.Raw | bytes, required: int, optional: int = 0) -> list[Any]:
    """The params array, padded with ``None`` to ``required + optional`` entries."""
    try:
        params = decode_params(bytes(raw))
    except ArgumentError as exc:
        raise InvalidParams(str(exc)) from None
    except msgspec.DecodeError as exc:
        raise InvalidParams(str(exc)) from None
    most = required + optional
    positional_count(params, required, most)
    return params + [None] * (most - len(params))


def argument(params: list[Any], index: int, decoder: Callable[..., T], **options: Any) -> T:
    """``decoder(params[index])``, its failure reported as ``invalid argument N: reason``."""
    try:
        return decoder(params[index], **options)
    except ArgumentError as exc:
        raise invalid_argument(index, str(exc)) from None


def optional_argument(
    params: list[Any], index: int, decoder: Callable[..., T], default: T, **options: Any
) -> T:
    """Like :func:`argument`, with ``default`` for an absent or ``null`` param."""
    if params[index] is None:
        return default
    return argument(params, index, decoder, **options)
