"""The operator API's params (``POST /admin``), as msgspec Structs decoded once at the door.

Each method takes one object (or an array holding one object, as some JSON-RPC clients send).
Member types are checked by msgspec; a mistake is -32602 naming the member.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from schemas.errors import InvalidParams
from schemas.params import Mistake, convert_named

T = TypeVar("T", bound=msgspec.Struct)


class DappParams(msgspec.Struct, kw_only=True):
    """A dapp identity: its API key and Origin (``-`` when it sent none)."""

    apiKey: str
    origin: str = "-"


class UpdateSessionParams(DappParams, kw_only=True):
    sessionScopes: dict[str, Any]


class RevokeSessionParams(DappParams, kw_only=True):
    scopes: list[str] | None = None


class ApproveParams(msgspec.Struct, kw_only=True):
    id: str
    accounts: list[str] | None = None
    sessionScopes: dict[str, Any] | None = None


class RejectParams(msgspec.Struct, kw_only=True):
    id: str


def decode_params(raw: bytes, kind: type[T]) -> T:
    """``raw`` params as ``kind`` (InvalidParams naming the member on a mistake)."""
    try:
        value = msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        raise InvalidParams(f"params are not JSON: {exc}") from None
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], dict):
        value = value[0]  # accept [ {...} ] as well as {...}
    if value == [] or value is None:
        value = {}
    if not isinstance(value, dict):
        raise InvalidParams("params must be an object")
    return convert_named(value, kind, _invalid)


def _invalid(mistake: Mistake) -> InvalidParams:
    return InvalidParams(f"invalid params: {mistake.text}")
