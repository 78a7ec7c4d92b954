"""The JSON-RPC 2.0 envelope: decoding requests (single or batch) and encoding replies.

Params stay undecoded (:class:`msgspec.Raw`) until the method is known, and the ``id`` is kept as
its raw JSON bytes so that it is echoed exactly as sent (number, string or null). Replies are built
by concatenating already-encoded parts; nothing is encoded twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import msgspec
from msgspec import UNSET, Raw, UnsetType

from schemas.errors import InvalidRequest, ParseError, RpcError

MAX_BATCH: Final = 1000
EMPTY_PARAMS: Final = Raw(b"[]")
NULL_ID: Final = b"null"

_ID_FIRST_BYTES: Final = frozenset(b'"-0123456789n')
_RESULT_HEAD: Final = b'{"jsonrpc":"2.0","id":'
_RESULT_MIDDLE: Final = b',"result":'


class _Envelope(msgspec.Struct):
    method: str
    jsonrpc: str = ""
    id: Raw | UnsetType = UNSET
    params: Raw | UnsetType = UNSET


_envelope_decoder: Final = msgspec.json.Decoder(_Envelope)
_batch_decoder: Final = msgspec.json.Decoder(list[Raw])
_any_decoder: Final = msgspec.json.Decoder()
_encoder: Final = msgspec.json.Encoder()


class Call(msgspec.Struct, gc=False):
    """One well-formed request. ``id`` is the raw JSON id, or None for a notification.

    A Struct rather than a dataclass: built once per call, in C (a quarter of the time)."""

    method: str
    params: Raw
    id: bytes | None


@dataclass(frozen=True, slots=True)
class BadCall:
    """A batch element or message that is JSON but not a valid request; answered with ``error``."""

    error: RpcError
    id: bytes = NULL_ID


Item = Call | BadCall


@dataclass(frozen=True, slots=True)
class Message:
    """A decoded frame or body: its items and whether it was a batch."""

    items: list[Item]
    batch: bool


def _item(env: _Envelope) -> Item:
    raw_id: bytes | None = None
    if env.id is not UNSET:
        raw_id = bytes(env.id)
        if raw_id[0] not in _ID_FIRST_BYTES:  # objects, arrays, booleans are not ids
            return BadCall(InvalidRequest())
    if env.jsonrpc != "2.0":
        return BadCall(InvalidRequest(), raw_id or NULL_ID)
    params = EMPTY_PARAMS if env.params is UNSET else env.params
    return Call(env.method, params, raw_id)


def _decode_item(data: bytes | Raw) -> Item:
    try:
        env = _envelope_decoder.decode(data)
    except msgspec.ValidationError:
        # JSON of the wrong shape is -32600, but msgspec may report a shape error before it sees
        # that the text is not JSON at all (``42 garbage``): only a full parse tells them apart.
        _any_decoder.decode(data)
        return BadCall(InvalidRequest())
    return _item(env)


def decode_call(data: bytes) -> Call | None:
    """The one well-formed call (request or notification) that ``data`` holds; None for anything
    else (a batch, a malformed message), which :func:`decode_message` then tells apart."""
    if data[:1] != b"{":
        return None
    try:
        item = _item(_envelope_decoder.decode(data))
    except msgspec.DecodeError:
        return None
    return item if isinstance(item, Call) else None


def _first_call_id(elements: list[Raw]) -> bytes:
    """The id of a batch's first call (a request with an id), as geth reports a batch too large."""
    for element in elements:
        item = _decode_item(element)
        if isinstance(item, Call) and item.id is not None:
            return item.id
    return NULL_ID


def decode_message(data: bytes) -> Message:
    """Decode one frame or body. Raises :class:`ParseError` when it is not JSON at all, and
    :class:`InvalidRequest` for an empty batch (answered with a single error object).

    A batch over ``MAX_BATCH`` decodes to a batch of one :class:`BadCall` carrying the id of its
    first call, so that it is answered as geth answers it: a one-element array.
    """
    start = data[:1]
    if start != b"{":  # not the usual single object straight away: look past any whitespace
        start = data.lstrip()[:1]
    if start == b"[":
        try:
            elements = _batch_decoder.decode(data)
        except msgspec.DecodeError as exc:
            raise ParseError() from exc
        if not elements:
            raise InvalidRequest("empty batch")
        if len(elements) > MAX_BATCH:
            return Message(
                [BadCall(InvalidRequest("batch too large"), _first_call_id(elements))], batch=True
            )
        return Message([_decode_item(e) for e in elements], batch=True)
    try:
        return Message([_decode_item(data)], batch=False)
    except msgspec.DecodeError as exc:
        raise ParseError() from exc


def encode(value: Any) -> bytes:
    """Encode any JSON value (``Raw`` is embedded as is)."""
    return _encoder.encode(value)


def result_bytes(raw_id: bytes, result: Any) -> bytes:
    """A success reply."""
    return encoded_result_bytes(
        raw_id, result if isinstance(result, Raw) else _encoder.encode(result)
    )


def encoded_result_bytes(raw_id: bytes, result: bytes | Raw) -> bytes:
    """A success reply whose result is already encoded JSON."""
    return b"".join((_RESULT_HEAD, raw_id, _RESULT_MIDDLE, result, b"}"))


def error_object(error: RpcError) -> dict[str, Any]:
    """The ``error`` member for ``error``."""
    obj: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.data is not UNSET:
        obj["data"] = error.data
    return obj


def error_bytes(raw_id: bytes, error: RpcError) -> bytes:
    """A failure reply."""
    return (
        b'{"jsonrpc":"2.0","id":'
        + raw_id
        + b',"error":'
        + _encoder.encode(error_object(error))
        + b"}"
    )


def notification_bytes(method: str, params: Any) -> bytes:
    """A notification (no id), as the wallet sends ``wallet_notify`` and friends."""
    return (
        b'{"jsonrpc":"2.0","method":'
        + _encoder.encode(method)
        + b',"params":'
        + _encoder.encode(params)
        + b"}"
    )


def join_batch(replies: list[bytes]) -> bytes:
    """A batch reply from its encoded members (copied once: answers can be large)."""
    if not replies:
        return b"[]"
    parts = [b"["]
    for reply in replies:
        parts += (reply, b",")
    parts[-1] = b"]"
    return b"".join(parts)


def batch_of_results(results: list[tuple[bytes, bytes | Raw]]) -> bytes:
    """A batch reply of success replies, from each one's id and already encoded result: what
    :func:`join_batch` of :func:`encoded_result_bytes` gives, with the results copied once."""
    if not results:
        return b"[]"
    parts: list[bytes | Raw] = [b"["]
    for raw_id, result in results:
        parts += (_RESULT_HEAD, raw_id, _RESULT_MIDDLE, result, b"},")
    parts[-1] = b"}]"
    return b"".join(parts)
