"""Params as msgspec Structs, decoded at the door; a mistake is -32602 saying what was wrong.

Two shapes of params:

- Positional (geth's methods): an ``array_like`` Struct with ``forbid_unknown_fields``, one field
  per argument (those without a default are required), read by :func:`decode_positional` with
  geth's texts: ``non-array args``, ``missing value for required argument N``, ``too many
  arguments, want at most N``, ``invalid argument N: …``. Absent or ``null`` params are no
  arguments, as in geth.
- Named (the ``wallet_*`` and ``admin_*`` methods): an object Struct, read by
  :func:`decode_named`; the caller says in its own words what a mistake means (a
  :class:`Mistake` names the member).

Build each ``msgspec.json.Decoder(Struct)`` once, at module level, next to its Struct.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final, Literal, NamedTuple, TypeVar

import msgspec

from schemas.errors import (
    InvalidParams,
    RpcError,
    invalid_argument,
    missing_argument,
    too_many_arguments,
)

T = TypeVar("T")

_LOCATED: Final = re.compile(r"(?P<reason>.*?)(?: - at `\$(?P<path>[^`]*)`)?\Z", re.S)
_FIELD: Final = re.compile(
    r"Object (?P<kind>missing required|contains unknown) field `(?P<name>[^`]*)`\Z"
)
_COUNT: Final = re.compile(
    r"Expected `array` of at (?P<bound>least|most) length (?P<want>\d+)(?:, got (?P<got>\d+))?\Z"
)
_STEP: Final = re.compile(r"\.([^.\[]+)|\[([^\]]+)\]")
#: How msgspec writes the position of a value in a mapping (it does not say the key).
_ANY_KEY: Final = "..."


class Mistake(NamedTuple):
    """What msgspec found wrong in params, and where.

    Attributes:
        path: The members leading to it (``("request", "method")``, ``("methods", 0)``; ``()``
            for the params themselves). A missing or unknown member is the last step.
        kind: ``missing`` (a required member is absent), ``unknown`` (a member that is not
            allowed) or ``invalid`` (a value of the wrong type or form).
        reason: msgspec's text, without its location.
        text: msgspec's whole text.
    """

    path: tuple[str | int, ...]
    kind: Literal["missing", "unknown", "invalid"]
    reason: str
    text: str

    @property
    def where(self) -> str:
        """The path as code writes it: ``accessList[0].address`` (empty: the params themselves)."""
        return _written(self.path)

    @property
    def clause(self) -> str:
        """The reason to follow a colon: ``expected `str`, got `int```."""
        return self.reason[:1].lower() + self.reason[1:]

    @property
    def member(self) -> str | None:
        """The top-level member at fault (None: the params themselves, or an array position)."""
        first = self.path[0] if self.path else None
        return first if isinstance(first, str) and first != _ANY_KEY else None

    @classmethod
    def of(cls, error: msgspec.ValidationError) -> Mistake:
        text = str(error)
        located = _LOCATED.match(text)
        assert located is not None  # the pattern matches every text
        reason, where = located["reason"], located["path"] or ""
        path: list[str | int] = [
            name if name else int(index) if index.isdigit() else index
            for name, index in _STEP.findall(where)
        ]
        field = _FIELD.match(reason)
        if field is None:
            return cls(tuple(path), "invalid", reason, text)
        kind: Literal["missing", "unknown"] = (
            "missing" if field["kind"] == "missing required" else "unknown"
        )
        return cls((*path, field["name"]), kind, reason, text)


def decode_named(
    data: object,
    decoder: msgspec.json.Decoder[T],
    explain: Callable[[Mistake], RpcError],
) -> T:
    """Named params as ``decoder``'s Struct: their JSON (as they arrive) or the value it decodes to.

    Raises:
        RpcError: what ``explain`` makes of the mistake; ``InvalidParams`` for text that is not
            JSON.
    """
    if not isinstance(data, bytes | msgspec.Raw):
        return convert_named(data, decoder.type, explain)
    try:
        return decoder.decode(data)
    except msgspec.ValidationError as exc:
        raise explain(Mistake.of(exc)) from None
    except msgspec.DecodeError as exc:
        raise InvalidParams(f"params are not JSON: {exc}") from None


def convert_named(value: object, kind: type[T], explain: Callable[[Mistake], RpcError]) -> T:
    """Named params already decoded from JSON, as ``kind`` (see :func:`decode_named`)."""
    try:
        return msgspec.convert(value, kind)
    except msgspec.ValidationError as exc:
        raise explain(Mistake.of(exc)) from None


def decode_positional(data: object, decoder: msgspec.json.Decoder[T]) -> T:
    """Positional params as ``decoder``'s ``array_like`` Struct, refused with geth's texts: their
    JSON (as they arrive) or the value it decodes to."""
    try:
        if not isinstance(data, bytes | msgspec.Raw):
            result: T = msgspec.convert([] if data is None else data, decoder.type)
            return result
        text = bytes(data).strip()
        return decoder.decode(b"[]" if not text or text == b"null" else text)
    except msgspec.ValidationError as exc:
        raise _positional_error(Mistake.of(exc)) from None
    except msgspec.DecodeError as exc:
        raise InvalidParams(str(exc)) from None


def _positional_error(mistake: Mistake) -> InvalidParams:
    if not mistake.path:
        count = _COUNT.match(mistake.reason)
        if count is None:
            return InvalidParams("non-array args")
        if count["bound"] == "least":  # msgspec says how many it got, then
            return missing_argument(int(count["got"]))
        return too_many_arguments(int(count["want"]))
    index, *inner = mistake.path
    where = _written(tuple(inner))
    reason = mistake.clause
    return invalid_argument(int(index), f"{where}: {reason}" if where else reason)


def _written(path: tuple[str | int, ...]) -> str:
    written = ""
    for step in path:
        if isinstance(step, int) or step == _ANY_KEY:
            written += f"[{step}]"
        else:
            written += f".{step}" if written else step
    return written


def positional_count(params: list[Any], required: int, most: int) -> None:
    """geth's count check of a positional params array already decoded."""
    if len(params) > most:
        raise too_many_arguments(most)
    if len(params) < required:
        raise missing_argument(len(params))
