"""The JSON-RPC envelope: decoding every shape a client may send, encoding replies."""

import json

import msgspec
import pytest

from schemas.errors import InvalidParams, InvalidRequest, ParseError
from schemas.jsonrpc import (
    MAX_BATCH,
    BadCall,
    Call,
    batch_of_results,
    decode_message,
    encoded_result_bytes,
    error_bytes,
    join_batch,
    notification_bytes,
    result_bytes,
)


def test_single_call_keeps_params_raw_and_id_exact() -> None:
    message = decode_message(b'{"jsonrpc":"2.0","id":1.50,"method":"m","params":[1,{"a":2}]}')
    assert not message.batch
    (call,) = message.items
    assert isinstance(call, Call)
    assert call.method == "m"
    assert call.id == b"1.50"
    assert bytes(call.params) == b'[1,{"a":2}]'


@pytest.mark.parametrize("raw_id", [b'"abc"', b"null", b"-7", b"12345678901234567890"])
def test_ids_are_echoed_byte_for_byte(raw_id: bytes) -> None:
    (call,) = decode_message(b'{"jsonrpc":"2.0","id":' + raw_id + b',"method":"m"}').items
    assert isinstance(call, Call)
    assert call.id == raw_id
    assert result_bytes(call.id, True).startswith(b'{"jsonrpc":"2.0","id":' + raw_id + b",")


def test_notification_has_no_id_and_default_params() -> None:
    (call,) = decode_message(b'{"jsonrpc":"2.0","method":"n"}').items
    assert isinstance(call, Call)
    assert call.id is None
    assert bytes(call.params) == b"[]"


@pytest.mark.parametrize("text", [b"{bad", b"", b"42 trailing", b'[{"jsonrpc":"2.0"', b"\xff\xfe"])
def test_not_json_is_a_parse_error(text: bytes) -> None:
    with pytest.raises(ParseError):
        decode_message(text)


@pytest.mark.parametrize(
    "text",
    [
        b"42",
        b'"str"',
        b"{}",
        b'{"jsonrpc":"2.0","id":1}',
        b'{"jsonrpc":"2.0","id":1,"method":5}',
        b'{"jsonrpc":"2.0","id":{},"method":"m"}',
        b'{"jsonrpc":"2.0","id":[1],"method":"m"}',
        b'{"jsonrpc":"2.0","id":true,"method":"m"}',
        b'{"jsonrpc":"1.0","id":1,"method":"m"}',
        b'{"id":1,"method":"m"}',
    ],
)
def test_json_that_is_not_a_request_is_invalid(text: bytes) -> None:
    (item,) = decode_message(text).items
    assert isinstance(item, BadCall)
    assert isinstance(item.error, InvalidRequest)


def test_wrong_version_keeps_the_id() -> None:
    (item,) = decode_message(b'{"jsonrpc":"1.0","id":9,"method":"m"}').items
    assert isinstance(item, BadCall)
    assert item.id == b"9"


def test_batch_mixes_good_and_bad_items() -> None:
    message = decode_message(
        b'[{"jsonrpc":"2.0","id":1,"method":"a"}, 3, {"jsonrpc":"2.0","method":"n"}]'
    )
    assert message.batch
    kinds = [type(i).__name__ for i in message.items]
    assert kinds == ["Call", "BadCall", "Call"]


def test_empty_and_oversized_batches_are_rejected_whole() -> None:
    with pytest.raises(InvalidRequest, match="empty batch"):
        decode_message(b"[]")
    big = b"[" + b",".join([b'{"jsonrpc":"2.0","id":1,"method":"a"}'] * (MAX_BATCH + 1)) + b"]"
    too_large = decode_message(big)
    assert too_large.batch
    (item,) = too_large.items
    assert isinstance(item, BadCall)
    assert isinstance(item.error, InvalidRequest)
    assert item.error.message == "batch too large"
    assert (
        len(decode_message(big.replace(b',{"jsonrpc":"2.0","id":1,"method":"a"}]', b"]", 1)).items)
        == MAX_BATCH
    )


def batch_of(*first: bytes) -> bytes:
    """``first``, then calls with id 99 up to one more than ``MAX_BATCH`` elements."""
    rest = [b'{"jsonrpc":"2.0","id":99,"method":"a"}'] * (MAX_BATCH + 1 - len(first))
    return b"[" + b",".join([*first, *rest]) + b"]"


@pytest.mark.parametrize(
    ("first", "raw_id"),
    [
        ((b'{"jsonrpc":"2.0","id":"x7","method":"a"}',), b'"x7"'),
        ((b'{"jsonrpc":"2.0","id":null,"method":"a"}',), b"null"),
        # geth's "first call": notifications, non-requests and a wrong version are skipped
        (
            (
                b'{"jsonrpc":"2.0","method":"note"}',
                b"5",
                b'{"jsonrpc":"1.0","id":3,"method":"a"}',
                b'{"jsonrpc":"2.0","id":{},"method":"a"}',
                b'{"jsonrpc":"2.0","id":4}',
                b'{"jsonrpc":"2.0","id":12.5,"method":"a"}',
            ),
            b"12.5",
        ),
    ],
)
def test_a_batch_too_large_is_one_error_with_its_first_call_id(
    first: tuple[bytes, ...], raw_id: bytes
) -> None:
    (item,) = decode_message(batch_of(*first)).items
    assert isinstance(item, BadCall)
    assert item.id == raw_id


def test_a_batch_too_large_without_calls_has_a_null_id() -> None:
    notes = b"[" + b",".join([b'{"jsonrpc":"2.0","method":"n"}'] * (MAX_BATCH + 1)) + b"]"
    (item,) = decode_message(notes).items
    assert isinstance(item, BadCall)
    assert item.id == b"null"


def test_encoded_replies_are_valid_json_rpc() -> None:
    ok = json.loads(result_bytes(b'"x"', {"a": [1, None]}))
    assert ok == {"jsonrpc": "2.0", "id": "x", "result": {"a": [1, None]}}
    null_result = json.loads(result_bytes(b"1", None))
    assert null_result == {"jsonrpc": "2.0", "id": 1, "result": None}
    err = json.loads(error_bytes(b"null", InvalidParams("missing value for required argument 0")))
    assert err == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32602, "message": "missing value for required argument 0"},
    }
    note = json.loads(notification_bytes("wallet_notify", {"scope": "eip155:1"}))
    assert note == {"jsonrpc": "2.0", "method": "wallet_notify", "params": {"scope": "eip155:1"}}
    assert json.loads(join_batch([result_bytes(b"1", 1), result_bytes(b"2", 2)]))[1]["result"] == 2


@pytest.mark.parametrize("count", [0, 1, 3])
def test_a_batch_reply_is_its_members_in_order_whichever_way_it_is_built(count: int) -> None:
    ids = [b"%d" % n for n in range(count)]
    results = [msgspec.Raw(b'{"n":%d}' % n) if n % 2 else b'"0x%d"' % n for n in range(count)]
    members = [encoded_result_bytes(i, r) for i, r in zip(ids, results, strict=True)]
    joined = join_batch(members)
    assert joined == b"[" + b",".join(members) + b"]"
    assert batch_of_results(list(zip(ids, results, strict=True))) == joined
    assert json.loads(joined) == [json.loads(m) for m in members]

