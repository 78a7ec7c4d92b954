"""The notifications made from a closed slot, sans-io: ``rootNotification`` (the new root),
``slotsUpdatesNotification`` (the slot's steps, several per slot), ``blockNotification`` (its
block, as ``getBlock`` gives it) and ``voteNotification`` (the node's vote on it)."""

from __future__ import annotations

from typing import Any, Final

import msgspec

from schemas.errors import RpcError

from ._events import SlotEvent
from ._transaction_view import BlockShape, block_json

_ENCODER: Final = msgspec.json.Encoder()


def root(event: SlotEvent) -> bytes | None:
    """The root, a bare slot number (Solana's ``rootNotification`` result)."""
    return _ENCODER.encode(event.root) if event.closed is not None else None


def slot_updates(event: SlotEvent) -> list[bytes]:
    """The closed slot frozen, optimistically confirmed and rooted at once (one node holds all
    the stake), then the new slot's bank created."""
    closed = event.closed
    if closed is None:
        return []
    failed = sum(1 for record in closed.records if record.err is not None)
    count = len(closed.records)
    at = closed.timestamp_ms
    updates: list[dict[str, Any]] = [
        {
            "type": "frozen",
            "slot": closed.slot,
            "timestamp": at,
            "stats": {
                # each transaction is an entry of its own here
                "numTransactionEntries": count,
                "numSuccessfulTransactions": count - failed,
                "numFailedTransactions": failed,
                "maxTransactionsPerEntry": 1 if count else 0,
            },
        },
        {"type": "optimisticConfirmation", "slot": closed.slot, "timestamp": at},
        {"type": "root", "slot": closed.slot, "timestamp": at},
        {"type": "createdBank", "slot": event.slot, "parent": closed.slot, "timestamp": at},
    ]
    return [_ENCODER.encode(update) for update in updates]


def block(event: SlotEvent, mentions: str | None, shape: BlockShape) -> bytes | None:
    """The closed block (with the transactions naming ``mentions`` only, when given; a block
    with none of them is not notified), or its error (a transaction version not supported)."""
    closed = event.closed
    if closed is None:
        return None
    records = closed.records
    if mentions is not None:
        records = tuple(record for record in records if mentions in record.accounts)
        if not records:
            return None
    value: dict[str, Any] = {"slot": closed.slot, "err": None}
    try:
        value["block"] = block_json(
            closed.slot,
            closed.parent,
            closed.blockhash,
            closed.previous_blockhash,
            closed.block_time,
            records,
            shape,
        )
    except RpcError as exc:
        value.update(block=None, err=exc.message)
    return _ENCODER.encode({"context": {"slot": closed.slot}, "value": value})


def vote(event: SlotEvent) -> bytes | None:
    """The node's vote on the closed slot, signed by its identity."""
    closed = event.closed
    if closed is None:
        return None
    return _ENCODER.encode(
        {
            "votePubkey": closed.vote_account,
            "slots": [closed.slot],
            "hash": closed.blockhash,
            "timestamp": closed.block_time,
            "signature": closed.vote_signature,
        }
    )
