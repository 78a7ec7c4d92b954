"""From an upstream's JSON to the ingestion's :class:`ChainBlock` (sans-io).

A head's ``header_json`` is what ``newHeads`` subscribers receive. Heads reach the adapter two ways:
as a ``newHeads`` notification, or as a block object (polling, and the parents the head tracker
asks for). Both are projected the same way, onto geth's ``newHeads`` header: geth's fields in geth's
order (a fork field the node left out becomes ``null``, as geth writes it), then any other field the
node sent except the block-only ones (transactions, uncles, size, ...). Values are kept byte for
byte. So a height looks the same to subscribers whichever way it arrived, and for a geth upstream
the projection of its own notification is that notification.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from adapters.evm.blocks import ChainBlock, LogRecord

#: geth's ``types.Header`` JSON fields, in its order (the ``newHeads`` shape).
HEADER_FIELDS: Final = (
    "parentHash",
    "sha3Uncles",
    "miner",
    "stateRoot",
    "transactionsRoot",
    "receiptsRoot",
    "logsBloom",
    "difficulty",
    "number",
    "gasLimit",
    "gasUsed",
    "timestamp",
    "extraData",
    "mixHash",
    "nonce",
    "baseFeePerGas",
    "withdrawalsRoot",
    "blobGasUsed",
    "excessBlobGas",
    "parentBeaconBlockRoot",
    "requestsHash",
    "hash",
)

#: Fields of a block object that are not part of its header.
BLOCK_ONLY_FIELDS: Final = frozenset(
    {"transactions", "uncles", "size", "totalDifficulty", "withdrawals"}
)

_NULL: Final = msgspec.Raw(b"null")
_fields_decoder: Final = msgspec.json.Decoder(dict[str, msgspec.Raw])
_logs_decoder: Final = msgspec.json.Decoder(list[dict[str, Any]])
_encode: Final = msgspec.json.Encoder().encode
_str_decoder: Final = msgspec.json.Decoder(str)


class BadUpstreamData(ValueError):
    """The upstream sent a header or logs that cannot be what it claims to be."""


def _hex_int(raw: msgspec.Raw | None, name: str) -> int:
    if raw is None:
        raise BadUpstreamData(f"header without {name}")
    try:
        return int(_str_decoder.decode(raw), 16)
    except (msgspec.DecodeError, ValueError) as exc:
        raise BadUpstreamData(f"header {name} is not a hex quantity: {bytes(raw)[:80]!r}") from exc


def _hash(raw: msgspec.Raw | None, name: str) -> str:
    try:
        value = _str_decoder.decode(raw) if raw is not None else ""
    except msgspec.DecodeError:
        value = ""
    if len(value) != 66 or not value.startswith("0x"):
        raise BadUpstreamData(f"header {name} is not a 32-byte hash")
    return value.lower()


class Header:
    """A head as the broker reports it: number, hash, parent hash and the ``newHeads`` JSON."""

    __slots__ = ("hash", "json", "number", "parent_hash")

    def __init__(self, number: int, block_hash: str, parent_hash: str, json: bytes) -> None:
        self.number = number
        self.hash = block_hash
        self.parent_hash = parent_hash
        self.json = json

    @classmethod
    def from_json(cls, data: bytes) -> Header:
        """Project a ``newHeads`` header or a block object (see the module docstring)."""
        try:
            fields = _fields_decoder.decode(data)
        except msgspec.DecodeError as exc:
            raise BadUpstreamData(f"header is not a JSON object: {exc}") from exc
        projected = {name: fields.get(name, _NULL) for name in HEADER_FIELDS}
        for name, value in fields.items():
            if name not in projected and name not in BLOCK_ONLY_FIELDS:
                projected[name] = value
        return cls(
            _hex_int(fields.get("number"), "number"),
            _hash(fields.get("hash"), "hash"),
            _hash(fields.get("parentHash"), "parentHash"),
            _encode(projected),
        )

    def chain_block(self, logs: tuple[LogRecord, ...]) -> ChainBlock:
        return ChainBlock(self.number, self.hash, self.parent_hash, self.json, logs)


def log_records(data: bytes, block_hash: str) -> tuple[LogRecord, ...]:
    """The logs of one block (an ``eth_getLogs`` ``{blockHash}`` result), ready for fan-out.

    Each log is re-encoded compactly with ``"removed":false`` (in its place if the node sent it,
    last otherwise); quotes inside JSON strings are escaped, so those bytes occur exactly once.
    """
    try:
        logs = _logs_decoder.decode(data)
    except msgspec.DecodeError as exc:
        raise BadUpstreamData(f"logs are not an array of objects: {exc}") from exc
    records = []
    for log in logs:
        address = log.get("address")
        topics = log.get("topics")
        if not isinstance(address, str) or not isinstance(topics, list):
            raise BadUpstreamData("a log without address or topics")
        if str(log.get("blockHash", "")).lower() != block_hash:
            raise BadUpstreamData(f"a log of block {log.get('blockHash')} in block {block_hash}")
        log["removed"] = False
        records.append(
            LogRecord(address.lower(), tuple(str(t).lower() for t in topics), _encode(log))
        )
    return tuple(records)
