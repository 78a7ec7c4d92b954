"""The EVM profile's blocks and chain events: a block as ingestion sees it (number, hash, parent
hash, the ``newHeads`` header JSON, its logs), and the two events the broker's head tracking makes
of blocks (a new canonical head; a block's logs, ``removed`` when a reorganisation orphaned it).

The events travel through the broker's bus (in memory, or a Redis Stream per chain), so they are
plain msgspec-encodable values.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass


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
class ChainBlock:
    """A block as the ingestion side sees it: identity, the ``newHeads`` header JSON, its logs."""

    number: int
    hash: str
    parent_hash: str
    header_json: bytes
    logs: tuple[LogRecord, ...] = ()


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
    """The logs of a block of ``chain``: now canonical, or ``removed`` by a reorganisation."""

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
