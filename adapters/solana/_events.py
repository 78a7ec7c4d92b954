"""What the Solana dev ledger reports as it changes, for PubSub notifications (see :mod:`._pubsub`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from solders.account import Account
from solders.transaction import VersionedTransaction


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


@dataclass(frozen=True, slots=True)
class SlotEvent:
    """A new slot opened (``slotNotification``): its parent is final at once (the root)."""

    slot: int
    parent: int
    root: int


@dataclass(frozen=True, slots=True)
class AccountEvent:
    """An account a transaction could write, as it is after it (None: closed)."""

    address: str
    account: Account | None
    slot: int


@dataclass(frozen=True, slots=True)
class TransactionEvent:
    """A transaction landed (``signatureNotification``, ``logsNotification``)."""

    record: TransactionRecord


SolanaEvent = SlotEvent | AccountEvent | TransactionEvent
