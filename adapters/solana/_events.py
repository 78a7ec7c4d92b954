"""What the Solana dev ledger reports as it changes, for PubSub notifications (see :mod:`._pubsub`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from solders.account import Account
from solders.transaction import VersionedTransaction

#: ``(program id index, account indexes, data, stack height)`` of an inner instruction.
InnerInstruction = tuple[int, tuple[int, ...], bytes, int | None]


@dataclass(frozen=True, slots=True)
class TransactionRecord:
    """A transaction that landed in a slot (failed or not), with what ``getTransaction`` shows."""

    signature: str
    slot: int
    block_time: int
    tx: VersionedTransaction
    err: Any
    logs: tuple[str, ...]
    fee: int
    units: int
    accounts: tuple[str, ...]
    pre_balances: tuple[int, ...]
    post_balances: tuple[int, ...]
    #: ``preTokenBalances`` / ``postTokenBalances``: the token accounts among its keys, as JSON.
    pre_token_balances: tuple[dict[str, Any], ...] = ()
    post_token_balances: tuple[dict[str, Any], ...] = ()
    #: The instructions the programs invoked (CPIs), per top-level instruction that made any:
    #: ``(its index, ((program id index, account indexes, data, stack height), ...))``.
    inner: tuple[tuple[int, tuple[InnerInstruction, ...]], ...] = ()


@dataclass(frozen=True, slots=True)
class ClosedSlot:
    """A slot as it closed: its block (``blockSubscribe``), the node's vote on it
    (``voteSubscribe``) and its life's steps (``slotsUpdatesSubscribe``) are rendered from it."""

    slot: int
    parent: int
    blockhash: str
    previous_blockhash: str
    block_time: int
    records: tuple[TransactionRecord, ...]
    #: When it closed (unix milliseconds), as slot updates carry it.
    timestamp_ms: int
    vote_account: str
    #: The node's vote on it, signed by its identity (base-58): made once, when it closed, so
    #: that the event carries no key and travels between processes as it is.
    vote_signature: str


@dataclass(frozen=True, slots=True)
class SlotEvent:
    """A new slot opened (``slotNotification``): its parent is final at once (the root), and
    ``closed`` is that parent (None for the event made before any slot closed)."""

    slot: int
    parent: int
    root: int
    closed: ClosedSlot | None = None


@dataclass(frozen=True, slots=True)
class AccountEvent:
    """An account a transaction could write, as it is after it (None: closed)."""

    address: str
    account: Account | None
    slot: int
    #: The decimals of its mint, for a token account (its ``jsonParsed`` form needs them).
    decimals: int | None = None

    def decimals_of(self, mint: bytes) -> int | None:
        return self.decimals


@dataclass(frozen=True, slots=True)
class TransactionEvent:
    """A transaction landed (``signatureNotification``, ``logsNotification``)."""

    record: TransactionRecord


SolanaEvent = SlotEvent | AccountEvent | TransactionEvent
