"""geth-style decoding of node-method params (``schemas.eth``), as plain function calls."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from schemas import eth as schema

HASH = "0x" + "ab" * 32


@pytest.mark.parametrize(
    ("value", "expected"),
    [("latest", "latest"), ("safe", "safe"), ("0x0", 0), ("0x1F", 31), (" 0x2 ", 2)],
)
def test_block_numbers(value: str, expected: schema.BlockNumber) -> None:
    assert schema.decode_block_number(value) == expected


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("", "empty hex string"),
        ("12", "hex string without 0x prefix"),
        (-1, "hex string without 0x prefix"),
        (True, "hex string without 0x prefix"),
        ("0x", 'hex string "0x"'),
        ("0x012", "hex number with leading zero digits"),
        ("0xg", "invalid hex string"),
        ("0x1" + "0" * 16, "hex number > 64 bits"),
        ("0x8000000000000000", "block number larger than int64"),
    ],
)
def test_block_number_errors(value: Any, reason: str) -> None:
    with pytest.raises(schema.ArgumentError) as caught:
        schema.decode_block_number(value)
    assert str(caught.value) == reason


def test_block_refs() -> None:
    assert schema.decode_block_ref(HASH) == schema.BlockHashRef(bytes.fromhex(HASH[2:]))
    assert schema.decode_block_ref({"blockHash": HASH, "requireCanonical": True}) == (
        schema.BlockHashRef(bytes.fromhex(HASH[2:]), True)
    )
    assert schema.decode_block_ref({"blockNumber": "0x5"}) == 5
    assert schema.decode_block_ref("pending") == "pending"
    assert schema.decode_block_ref(7, allow_decimal=True) == 7
    assert schema.decode_block_ref("7", allow_decimal=True) == 7
    with pytest.raises(schema.ArgumentError, match=r"cannot specify both"):
        schema.decode_block_ref({"blockHash": HASH, "blockNumber": "0x1"})
    assert schema.decode_block_ref(7) == 7
    with pytest.raises(
        schema.ArgumentError, match=r"cannot unmarshal bool into Go value of type string"
    ):
        schema.decode_block_ref(True)
    with pytest.raises(schema.ArgumentError, match=r"^hex string without 0x prefix$"):
        schema.decode_block_ref("7")


def test_fixed_and_variable_bytes() -> None:
    assert schema.decode_hash(HASH.upper().replace("0X", "0x")) == bytes.fromhex(HASH[2:])
    assert schema.decode_address("0x" + "00" * 20) == bytes(20)
    with pytest.raises(
        schema.ArgumentError, match=r"^hex string has length 0, want 64 for common.Hash$"
    ):
        schema.decode_hash("")
    with pytest.raises(
        schema.ArgumentError, match=r"invalid hex string into Go value of type common.Hash"
    ):
        schema.decode_hash("0x" + "zz" * 32)
    assert schema.decode_data("0x") == b""
    assert schema.decode_data("0xABcd") == b"\xab\xcd"
    with pytest.raises(schema.ArgumentError, match=r"hex string of odd length"):
        schema.decode_data("0xabc")


def test_quantities() -> None:
    assert schema.decode_quantity("0x0") == 0
    assert schema.decode_quantity("") == 0  # geth lets an empty string through as zero
    assert schema.decode_quantity("0x" + "f" * 64) == 2**256 - 1
    with pytest.raises(schema.ArgumentError, match=r"hex number > 256 bits"):
        schema.decode_quantity("0x1" + "0" * 64)
    with pytest.raises(
        schema.ArgumentError, match=r"hex number > 64 bits into Go value of type hexutil.Uint64"
    ):
        schema.decode_quantity("0x1" + "0" * 16, schema.UINT64_TYPE)
    assert schema.decode_bool(None) is False
    with pytest.raises(
        schema.ArgumentError, match=r"cannot unmarshal number into Go value of type bool"
    ):
        schema.decode_bool(1)


def test_params_arrays() -> None:
    assert schema.decode_params(b"") == []
    assert schema.decode_params(b" null ") == []
    assert schema.decode_params(b'[1, "a"]') == [1, "a"]
    with pytest.raises(schema.ArgumentError, match=r"non-array args"):
        schema.decode_params(b'"x"')


def test_header_struct_writes_nulls_for_later_forks() -> None:
    fields = dict.fromkeys(
        ["parent_hash", "sha3_uncles", "miner", "state_root", "transactions_root", "receipts_root", "logs_bloom", "difficulty", "number", "gas_limit", "gas_used", "timestamp", "extra_data", "mix_hash", "nonce", "hash"],
        "0x0",
    )  # fmt: skip
    encoded = msgspec.json.decode(msgspec.json.encode(schema.Header(**fields)))
    assert encoded["baseFeePerGas"] is None
    assert encoded["requestsHash"] is None
    assert list(encoded)[-1] == "hash"
