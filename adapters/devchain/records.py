"""Immutable, already-encoded views of blocks and transactions, built once per block.

Every answer about an existing block (block, transaction, receipt, logs, the ``newHeads`` header) is
served from these records: a dict lookup and a slice of pre-encoded JSON bytes, with no py-evm
access and no re-encoding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import msgspec

from adapters.evm.blocks import ChainBlock, LogRecord

_TRANSACTIONS_KEY: Final = b'"transactions":['


@dataclass(frozen=True, slots=True)
class TxRecord:
    """One transaction of a block with its receipt."""

    hash: str
    index: int
    block_hash: str
    block_number: int
    sender: str
    json: bytes
    receipt_json: bytes
    gas_used: int
    effective_tip: int


@dataclass(frozen=True, slots=True)
class BlockRecord:
    """One block, formatted as geth formats it."""

    number: int
    hash: str
    parent_hash: str
    timestamp: int
    gas_limit: int
    gas_used: int
    base_fee: int | None
    blob_gas_used: int | None
    excess_blob_gas: int | None
    json_hashes: bytes
    header_json: bytes
    txs: tuple[TxRecord, ...]
    uncles_json: tuple[bytes, ...]
    logs: tuple[LogRecord, ...]
    log_addresses: frozenset[str]
    log_topics: frozenset[str]

    def json(self, full: bool) -> bytes:
        """The block as ``eth_getBlockBy*`` returns it, with hashes or full transactions.

        Only the hashes form is stored; the full form splices the transactions' own JSON into it
        (the hashes array holds no brackets, so its end is the first ``]`` after its start).
        """
        if not full or not self.txs:
            return self.json_hashes
        start = self.json_hashes.index(_TRANSACTIONS_KEY) + len(_TRANSACTIONS_KEY)
        end = self.json_hashes.index(b"]", start)
        full_txs = b",".join(tx.json for tx in self.txs)
        return self.json_hashes[:start] + full_txs + self.json_hashes[end:]

    def receipts_json(self) -> bytes:
        """The ``eth_getBlockReceipts`` array."""
        return b"[" + b",".join(tx.receipt_json for tx in self.txs) + b"]"

    def chain_block(self) -> ChainBlock:
        """The ingestion view of this block."""
        return ChainBlock(
            number=self.number,
            hash=self.hash,
            parent_hash=self.parent_hash,
            header_json=self.header_json,
            logs=self.logs,
        )


def json_array(items: tuple[bytes, ...] | list[bytes]) -> msgspec.Raw:
    """Pre-encoded JSON items as one JSON array."""
    return msgspec.Raw(b"[" + b",".join(items) + b"]")
