"""The EVM profile's blocks and chain events: a block as ingestion sees it (number, hash, parent
hash, the ``newHeads`` header JSON, its logs, and its transactions while some ``activity``
subscription wants them), and the two events the broker's head tracking makes of blocks (a new
canonical head; a block's logs and transactions, ``removed`` when a reorganisation orphaned it).

The events travel through the broker's bus (in memory, or a Redis Stream per chain), so they are
plain msgspec-encodable values.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

import msgspec

_encode = msgspec.json.Encoder().encode


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One log of a canonical block, as geth returns it from ``eth_getLogs``.

    ``address`` and ``topics`` are lowercase ``0x`` hex, kept apart from the encoded JSON so the
    broker can match subscriptions without decoding. ``json`` is the whole log object encoded once,
    with ``"removed":false``.
    """

    address: str
    topics: tuple[str, ...]
    json: bytes


@dataclass(frozen=True, slots=True)
class TransactionRecord:
    """One transaction of a canonical block, as ``eth_getBlockByHash`` with whole transactions
    returns it: ``sender`` and ``recipient`` (None: a contract creation) lowercase ``0x`` hex, kept
    apart so the broker matches ``activity`` subscriptions without decoding; ``json`` the whole
    transaction encoded once."""

    sender: str
    recipient: str | None
    json: bytes


@dataclass(frozen=True, slots=True)
class ChainBlock:
    """A block as the ingestion side sees it: identity, the ``newHeads`` header JSON, its logs;
    its transactions only when the ingestion was asked for them (:func:`with_transactions`,
    while an ``activity`` subscription follows the chain), else none."""

    number: int
    hash: str
    parent_hash: str
    header_json: bytes
    logs: tuple[LogRecord, ...] = ()
    transactions: tuple[TransactionRecord, ...] = ()

    @property
    def has_activity(self) -> bool:
        """Whether the block has logs or transactions (then a :class:`LogsEvent` carries them)."""
        return bool(self.logs or self.transactions)


def with_transactions(block: ChainBlock, answer: Any) -> ChainBlock:
    """``block`` with the transactions of ``answer`` (``eth_getBlockByHash [hash, true]``, decoded);
    ``block`` as it is when the answer is not that block with whole transactions (None: the
    node lost it to a reorganisation; the head tracking sees that on its own)."""
    if not isinstance(answer, dict) or answer.get("hash") != block.hash:
        return block
    found = answer.get("transactions")
    if not isinstance(found, list):
        return block
    records = []
    for tx in found:
        if not isinstance(tx, dict) or not isinstance(tx.get("from"), str):
            return block  # hashes only: the node ignored "whole transactions"
        to = tx.get("to")
        records.append(
            TransactionRecord(
                tx["from"].lower(), to.lower() if isinstance(to, str) else None, _encode(tx)
            )
        )
    return replace(block, transactions=tuple(records))


BlockHandler = Callable[[ChainBlock], Awaitable[None]]
"""Called by an adapter's ingestion task for every new head block it sees (gaps and reorgs allowed:
the broker's head tracker fills gaps with :meth:`~adapters.evm.chain_adapter.BlockSource.fetch_block`)."""


@dataclass(frozen=True, slots=True)
class HeadEvent:
    """A new canonical head of ``chain``."""

    chain: str
    block: ChainBlock


@dataclass(frozen=True, slots=True)
class LogsEvent:
    """The logs of a block of ``chain`` (and its transactions, when the ingestion fetched them):
    now canonical, or ``removed`` by a reorganisation."""

    chain: str
    block: ChainBlock
    removed: bool


ChainEvent = HeadEvent | LogsEvent
"""What a chain's block ingestion publishes (through the bus, in memory or Redis)."""


@dataclass(frozen=True, slots=True)
class PendingTransaction:
    """A transaction the node accepted into its pool (``eth_subscribe newPendingTransactions``):
    its hash, and the whole transaction as ``eth_getTransactionByHash`` gives a pending one
    (``blockHash``, ``blockNumber``, ``transactionIndex`` null), each encoded once.

    Unlike heads and logs it does not travel through the bus: each serving process follows its
    adapter's pool, and a pending transaction is not replayed on resume (geth keeps none either).
    """

    hash_json: bytes
    #: None when the node announced the hash alone (whole-transaction subscribers get nothing).
    json: bytes | None


PendingHandler = Callable[[PendingTransaction], None]
"""Called, without awaiting, for each transaction that enters the pool."""
