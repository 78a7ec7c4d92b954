"""Positional params of a call, checked and decoded with geth's error texts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

from schemas.errors import InvalidParams, invalid_argument, missing_argument
from schemas.eth import ArgumentError, decode_params

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
    if len(params) > most:
        raise InvalidParams(f"too many arguments, want at most {most}")
    if len(params) < required:
        raise missing_argument(len(params))
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
