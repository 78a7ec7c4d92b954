"""Ethereum node objects (SPEC §2.4-2.8) and geth-style decoding of node-method params.

The Structs encode exactly as geth emits its JSON: same keys, same order (geth's struct order for
transactions and logs, alphabetical for blocks and receipts, which geth builds as Go maps), optional
keys left out when geth leaves them out (``UNSET``) and ``null`` where geth writes ``null``. They also
decode upstream nodes' answers.

The decoders turn already-parsed JSON params into Python values and raise :class:`ArgumentError`
with geth's reason text (``hex string without 0x prefix``, ``hex string has length 62, want 64 for
common.Hash``, ...); callers prefix it with ``invalid argument N:``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, TypeAlias

import msgspec
from msgspec import UNSET, UnsetType

# --------------------------------------------------------------------------------------------------
# Objects


class Log(msgspec.Struct, rename="camel", kw_only=True):
    """A log object (§2.4), geth's ``types.Log`` order."""

    address: str
    topics: list[str]
    data: str
    block_number: str | None
    transaction_hash: str | None
    transaction_index: str | None
    block_hash: str | None
    block_timestamp: str | UnsetType = UNSET
    log_index: str | None
    removed: bool = False


class AccessListEntry(msgspec.Struct, rename="camel"):
    address: str
    storage_keys: list[str]


class Authorization(msgspec.Struct, rename="camel", kw_only=True):
    """One EIP-7702 set-code authorization."""

    chain_id: str
    address: str
    nonce: str
    y_parity: str
    r: str
    s: str


class Transaction(msgspec.Struct, rename="camel", kw_only=True):
    """A transaction object (§2.7), geth's ``RPCTransaction`` order."""

    block_hash: str | None
    block_number: str | None
    from_: str = msgspec.field(name="from")
    gas: str
    gas_price: str
    max_fee_per_gas: str | UnsetType = UNSET
    max_priority_fee_per_gas: str | UnsetType = UNSET
    max_fee_per_blob_gas: str | UnsetType = UNSET
    hash: str
    input: str
    nonce: str
    to: str | None
    transaction_index: str | None
    value: str
    type: str
    access_list: list[AccessListEntry] | UnsetType = UNSET
    chain_id: str | UnsetType = UNSET
    blob_versioned_hashes: list[str] | UnsetType = UNSET
    authorization_list: list[Authorization] | UnsetType = UNSET
    v: str
    r: str
    s: str
    y_parity: str | UnsetType = UNSET


class Receipt(msgspec.Struct, rename="camel", kw_only=True):
    """A receipt object (§2.8); keys in alphabetical order as geth writes them."""

    blob_gas_price: str | UnsetType = UNSET
    blob_gas_used: str | UnsetType = UNSET
    block_hash: str
    block_number: str
    contract_address: str | None
    cumulative_gas_used: str
    effective_gas_price: str
    from_: str = msgspec.field(name="from")
    gas_used: str
    logs: list[Log]
    logs_bloom: str
    root: str | UnsetType = UNSET
    status: str | UnsetType = UNSET
    to: str | None
    transaction_hash: str
    transaction_index: str
    type: str


class Withdrawal(msgspec.Struct, rename="camel", kw_only=True):
    index: str
    validator_index: str
    address: str
    amount: str


class Block(msgspec.Struct, rename="camel", kw_only=True):
    """A block or uncle object (§2.6); keys in alphabetical order as geth writes them.

    ``transactions`` is kept as raw JSON (hashes or full objects, depending on the request);
    an uncle has none (``UNSET``).
    """

    base_fee_per_gas: str | UnsetType = UNSET
    blob_gas_used: str | UnsetType = UNSET
    difficulty: str
    excess_blob_gas: str | UnsetType = UNSET
    extra_data: str
    gas_limit: str
    gas_used: str
    hash: str
    logs_bloom: str
    miner: str
    mix_hash: str
    nonce: str
    number: str
    parent_beacon_block_root: str | UnsetType = UNSET
    parent_hash: str
    receipts_root: str
    requests_hash: str | UnsetType = UNSET
    sha3_uncles: str = msgspec.field(name="sha3Uncles")
    size: str
    state_root: str
    timestamp: str
    transactions: msgspec.Raw | UnsetType = UNSET
    transactions_root: str
    uncles: list[str]
    withdrawals: list[Withdrawal] | UnsetType = UNSET
    withdrawals_root: str | UnsetType = UNSET


class Header(msgspec.Struct, rename="camel", kw_only=True):
    """A header as geth sends it in ``newHeads`` notifications (``types.Header`` order).

    Fields of forks the header predates are ``null``, as geth writes them.
    """

    parent_hash: str
    sha3_uncles: str = msgspec.field(name="sha3Uncles")
    miner: str
    state_root: str
    transactions_root: str
    receipts_root: str
    logs_bloom: str
    difficulty: str
    number: str
    gas_limit: str
    gas_used: str
    timestamp: str
    extra_data: str
    mix_hash: str
    nonce: str
    base_fee_per_gas: str | None = None
    withdrawals_root: str | None = None
    blob_gas_used: str | None = None
    excess_blob_gas: str | None = None
    parent_beacon_block_root: str | None = None
    requests_hash: str | None = None
    hash: str


# --------------------------------------------------------------------------------------------------
# Param decoding

BlockTag: TypeAlias = Literal["latest", "earliest", "pending", "safe", "finalized"]
BLOCK_TAGS: Final[frozenset[str]] = frozenset(
    {"latest", "earliest", "pending", "safe", "finalized"}
)
BlockNumber: TypeAlias = int | BlockTag
"""A block number or one of the tags."""

HASH_TYPE: Final = "common.Hash"
ADDRESS_TYPE: Final = "common.Address"
BYTES_TYPE: Final = "hexutil.Bytes"
BIG_TYPE: Final = "hexutil.Big"
UINT64_TYPE: Final = "hexutil.Uint64"
UINT_TYPE: Final = "hexutil.Uint"

MAX_INT64: Final = 2**63 - 1
_HEX_DIGITS: Final = frozenset("0123456789abcdefABCDEF")


class ArgumentError(ValueError):
    """A param could not be decoded; ``str(error)`` is geth's reason."""


class BlockHashRef(msgspec.Struct, frozen=True):
    """EIP-1898 block reference by hash."""

    block_hash: bytes
    require_canonical: bool = False


BlockRef: TypeAlias = BlockNumber | BlockHashRef
"""What ``BlockNumberOrHash`` params decode to."""


MAX_FILTER_CRITERIA: Final = 5_000
"""SPEC §8: addresses plus topics in one log filter."""


class LogFilter(msgspec.Struct, frozen=True, kw_only=True):
    """A decoded ``eth_getLogs`` filter (§2.5); hex strings are lowercase, ``None`` = wildcard."""

    block_hash: bytes | None = None
    from_block: BlockNumber | None = None
    to_block: BlockNumber | None = None
    addresses: tuple[str, ...] = ()
    topics: tuple[tuple[str, ...] | None, ...] = ()

    def criteria_count(self) -> int:
        """How many addresses and topics the filter names, as given (duplicates count, as in
        geth's ``len(crit.Addresses)``): what ``MAX_FILTER_CRITERIA`` limits."""
        return len(self.addresses) + sum(len(t) for t in self.topics if t)


def json_kind(value: Any) -> str:
    """The word Go's json package uses for a JSON value's kind in type errors."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return "null"


def type_error(what: str, go_type: str) -> ArgumentError:
    """Go's json text for a JSON value of kind ``what`` where ``go_type`` was wanted."""
    return ArgumentError(f"json: cannot unmarshal {what} into Go value of type {go_type}")


def _check_text(text: str, *, want_prefix: bool) -> str:
    """hexutil's checkText: strip 0x, demand even length. Empty input is allowed."""
    if not text:
        return ""
    if text[:2] in ("0x", "0X"):
        text = text[2:]
    elif want_prefix:
        raise ArgumentError("hex string without 0x prefix")
    if len(text) % 2:
        raise ArgumentError("hex string of odd length")
    return text


def _check_number_text(text: str) -> str:
    """hexutil's checkNumberText: 0x prefix, at least one digit, no leading zeros."""
    if not text:
        return ""
    if text[:2] not in ("0x", "0X"):
        raise ArgumentError("hex string without 0x prefix")
    digits = text[2:]
    if not digits:
        raise ArgumentError('hex string "0x"')
    if len(digits) > 1 and digits[0] == "0":
        raise ArgumentError("hex number with leading zero digits")
    return digits


def _hex_digits_valid(digits: str) -> bool:
    return all(c in _HEX_DIGITS for c in digits)


def decode_fixed(value: Any, size: int, go_type: str) -> bytes:
    """A fixed-size byte string such as ``common.Hash`` (32) or ``common.Address`` (20)."""
    if not isinstance(value, str):
        raise type_error("non-string", go_type)
    try:
        digits = _check_text(value, want_prefix=True)
    except ArgumentError as exc:
        raise type_error(str(exc), go_type) from None
    if len(digits) != size * 2:
        raise ArgumentError(f"hex string has length {len(digits)}, want {size * 2} for {go_type}")
    if not _hex_digits_valid(digits):
        raise type_error("invalid hex string", go_type)
    return bytes.fromhex(digits)


def decode_hash(value: Any) -> bytes:
    """A 32-byte hash param."""
    return decode_fixed(value, 32, HASH_TYPE)


def decode_address(value: Any) -> bytes:
    """A 20-byte address param."""
    return decode_fixed(value, 20, ADDRESS_TYPE)


def decode_data(value: Any) -> bytes:
    """A variable-length ``hexutil.Bytes`` param."""
    if not isinstance(value, str):
        raise type_error("non-string", BYTES_TYPE)
    try:
        digits = _check_text(value, want_prefix=True)
    except ArgumentError as exc:
        raise type_error(str(exc), BYTES_TYPE) from None
    if not _hex_digits_valid(digits):
        raise type_error("invalid hex string", BYTES_TYPE)
    return bytes.fromhex(digits)


def decode_quantity(value: Any, go_type: str = BIG_TYPE) -> int:
    """A hex quantity param (``hexutil.Big`` up to 256 bits, ``Uint64``/``Uint`` up to 64)."""
    if not isinstance(value, str):
        raise type_error("non-string", go_type)
    try:
        digits = _check_number_text(value)
    except ArgumentError as exc:
        raise type_error(str(exc), go_type) from None
    limit = 64 if go_type == BIG_TYPE else 16
    if len(digits) > limit:
        raise type_error(f"hex number > {limit * 4} bits", go_type)
    if not _hex_digits_valid(digits):
        raise type_error("invalid hex string", go_type)
    return int(digits, 16) if digits else 0


def decode_uint64_text(text: str) -> int:
    """hexutil.DecodeUint64: errors are returned bare (not wrapped in a Go type error)."""
    if not text:
        raise ArgumentError("empty hex string")
    if text[:2] not in ("0x", "0X"):
        raise ArgumentError("hex string without 0x prefix")
    digits = text[2:]
    if not digits:
        raise ArgumentError('hex string "0x"')
    if len(digits) > 1 and digits[0] == "0":
        raise ArgumentError("hex number with leading zero digits")
    if not _hex_digits_valid(digits):
        raise ArgumentError("invalid hex string")
    if len(digits) > 16:
        raise ArgumentError("hex number > 64 bits")
    return int(digits, 16)


def _raw_text(value: Any) -> str:
    """What geth's BlockNumber.UnmarshalJSON sees: the string's content, or the JSON itself."""
    if isinstance(value, str):
        return value
    return msgspec.json.encode(value).decode()


def decode_block_number(value: Any) -> BlockNumber:
    """A block parameter: hex number or tag (geth's ``rpc.BlockNumber``).

    A plain JSON integer is taken as a block number too (SPEC §4.4 allows decimal integers).
    """
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_INT64:
        return value
    text = _raw_text(value).strip()
    if text in BLOCK_TAGS:
        return text  # type: ignore[return-value]
    number = decode_uint64_text(text)
    if number > MAX_INT64:
        raise ArgumentError("block number larger than int64")
    return number


def decode_block_ref(value: Any, *, allow_decimal: bool = False) -> BlockRef:
    """A block number, tag, hash or EIP-1898 object (geth's ``rpc.BlockNumberOrHash``).

    A JSON integer is a block number; ``allow_decimal`` also accepts a decimal string (SPEC §4.4
    for ``eth_getBlockReceipts``).
    """
    if isinstance(value, dict):
        return _decode_block_ref_object(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_INT64:
        return value
    if allow_decimal and isinstance(value, str) and value.isdecimal() and int(value) <= MAX_INT64:
        return int(value)
    if not isinstance(value, str):
        raise type_error(json_kind(value), "string")
    if value in BLOCK_TAGS:
        return value  # type: ignore[return-value]
    if len(value) == 66:
        digits = _check_text(value, want_prefix=True)
        if not _hex_digits_valid(digits):
            raise ArgumentError("invalid hex string")
        return BlockHashRef(bytes.fromhex(digits))
    number = decode_uint64_text(value)
    if number > MAX_INT64:
        raise ArgumentError("blocknumber too high")
    return number


def _decode_block_ref_object(value: dict[str, Any]) -> BlockRef:
    fields = fold_keys(value)
    number = fields.get("blocknumber")
    block_hash = fields.get("blockhash")
    if number is not None and block_hash is not None:
        raise ArgumentError(
            "cannot specify both BlockHash and BlockNumber, choose one or the other"
        )
    if block_hash is not None:
        canonical = fields.get("requirecanonical", False)
        if not isinstance(canonical, bool):
            raise type_error(json_kind(canonical), "bool")
        return BlockHashRef(decode_hash(block_hash), canonical)
    if number is not None:
        return decode_block_number(number)
    # geth treats an empty object as "no block given"; callers use latest.
    return "latest"


def decode_bool(value: Any) -> bool:
    """A boolean param; ``null`` is false as in Go."""
    if value is None:
        return False
    if not isinstance(value, bool):
        raise type_error(json_kind(value), "bool")
    return value


def fold_keys(obj: Mapping[str, Any]) -> dict[str, Any]:
    """An object's members by lowercase key: Go's json matches keys to fields case-insensitively.

    The one key-case rule of the EVM params (block references, filter objects); of two keys that
    differ only in case, the lowercase one wins.
    """
    folded: dict[str, Any] = {}
    for key, item in obj.items():
        lower = key.lower()
        if lower not in folded or key == lower:
            folded[lower] = item
    return folded


def _decode_topic(text: str) -> str:
    return _decode_filter_hex(text, 32, "topic")


def _decode_filter_address(text: str) -> str:
    return _decode_filter_hex(text, 20, "address")


def _decode_filter_hex(text: str, size: int, what: str) -> str:
    """A filter's topic or address: ``size`` bytes of hex, lowercase (geth's texts)."""
    digits = _decode_hex_value(text)
    if len(digits) != size * 2:
        raise ArgumentError(
            f"hex has invalid length {len(digits) // 2} after decoding; expected {size} for {what}"
        )
    return "0x" + digits.lower()


def _decode_hex_value(text: str) -> str:
    """hexutil.Decode: 0x-prefixed, even-length hex; returns the digits."""
    if not text:
        raise ArgumentError("empty hex string")
    if text[:2] not in ("0x", "0X"):
        raise ArgumentError("hex string without 0x prefix")
    digits = text[2:]
    if len(digits) % 2:
        raise ArgumentError("hex string of odd length")
    if not _hex_digits_valid(digits):
        raise ArgumentError("invalid hex string")
    return digits


MAX_TOPICS: Final = 4


def decode_filter_addresses(value: Any) -> tuple[str, ...]:
    """A filter's ``address`` (one address, a list, or absent), lowercase, as given."""
    if value is None:
        return ()
    if isinstance(value, str):
        try:
            return (_decode_filter_address(value),)
        except ArgumentError as exc:
            raise ArgumentError(f"invalid address: {exc}") from None
    if isinstance(value, list):
        addresses = []
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise ArgumentError(f"non-string address at index {i}")
            try:
                addresses.append(_decode_filter_address(item))
            except ArgumentError as exc:
                raise ArgumentError(f"invalid address at index {i}: {exc}") from None
        return tuple(addresses)
    raise ArgumentError("invalid addresses in query")


def decode_filter_topics(value: Any) -> tuple[tuple[str, ...] | None, ...]:
    """A filter's ``topics``: per position, the alternatives (lowercase) or None for any."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise type_error(json_kind(value), "[]interface {}")
    if len(value) > MAX_TOPICS:
        raise ArgumentError("exceed max topics")
    topics: list[tuple[str, ...] | None] = []
    for item in value:
        if item is None:
            topics.append(None)
        elif isinstance(item, str):
            topics.append((_decode_topic(item),))
        elif isinstance(item, list):
            alternatives: list[str] = []
            wildcard = False
            for alternative in item:
                if alternative is None:
                    wildcard = True  # a null alternative matches anything
                    break
                if not isinstance(alternative, str):
                    raise ArgumentError("invalid topic(s)")
                alternatives.append(_decode_topic(alternative))
            topics.append(None if wildcard or not alternatives else tuple(alternatives))
        else:
            raise ArgumentError("invalid topic(s)")
    return tuple(topics)


def decode_params(raw: bytes) -> list[Any]:
    """The positional params of a call: absent or ``null`` is ``[]``; anything but an array fails.

    Raises :class:`ArgumentError` with geth's ``non-array args``.
    """
    stripped = raw.strip()
    if not stripped or stripped == b"null":
        return []
    params = msgspec.json.decode(stripped)
    if not isinstance(params, list):
        raise ArgumentError("non-array args")
    return params
