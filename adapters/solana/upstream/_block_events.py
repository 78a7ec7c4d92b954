"""From an upstream's blocks and accounts to the Solana family's events (sans-io).

A closed slot's block (``getBlock`` with base64 transactions) gives one :class:`TransactionEvent`
per transaction, in the block's order, and the accounts the transactions could write (static
writable keys, then the writable ones loaded from lookup tables) with each one's lamports at the
end of the slot (the ``postBalances`` of the last transaction naming it). Those accounts read
(``getMultipleAccounts``, base64) give one :class:`AccountEvent` each: one notification per account
and slot, as a Solana node's ``accountSubscribe`` sends. A node can only be asked for an account as
it is now, which may be a slot or two later: the lamports are the block's own, exact, so that every
transfer shows in its slot; the data is as read (README "Solana upstream nodes").
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec
from solders.account import Account
from solders.pubkey import Pubkey
from solders.transaction import VersionedTransaction

from .._events import AccountEvent, TransactionEvent, TransactionRecord
from .._ledger import writable_keys

#: ``getBlock``'s config: every transaction whole (base64), versioned ones too, no rewards.
BLOCK_CONFIG: Final = {
    "encoding": "base64",
    "transactionDetails": "full",
    "maxSupportedTransactionVersion": 0,
    "rewards": False,
    "commitment": "confirmed",
}
_decoder: Final = msgspec.json.Decoder()


class BadBlock(ValueError):
    """The upstream sent a block or an account that cannot be what it claims to be."""


@dataclass(frozen=True, slots=True)
class BlockEvents:
    """A block's transactions as events, and the accounts they could write (in order, once)."""

    slot: int
    transactions: tuple[TransactionEvent, ...]
    written: tuple[str, ...]
    #: Each written account's lamports at the end of the slot.
    lamports: Mapping[str, int] = field(default_factory=dict)


def _transaction(slot: int, block_time: int, item: Any) -> tuple[TransactionEvent, list[str]]:
    try:
        return _decoded_transaction(slot, block_time, item)
    except (AttributeError, TypeError, ValueError) as exc:
        if isinstance(exc, BadBlock):
            raise
        raise BadBlock(f"slot {slot}: a transaction's meta that does not decode: {exc}") from exc


def _decoded_transaction(
    slot: int, block_time: int, item: Any
) -> tuple[TransactionEvent, list[str]]:
    encoded, meta = item.get("transaction"), item.get("meta") or {}
    if not isinstance(encoded, list) or not encoded or not isinstance(encoded[0], str):
        raise BadBlock(f"slot {slot}: a transaction that is not base64")
    try:
        tx = VersionedTransaction.from_bytes(base64.b64decode(encoded[0], validate=True))
    except (ValueError, binascii.Error) as exc:
        raise BadBlock(f"slot {slot}: a transaction that does not decode: {exc}") from exc
    loaded = meta.get("loadedAddresses") or {}
    loaded_writable = [str(a) for a in loaded.get("writable") or ()]
    loaded_readonly = [str(a) for a in loaded.get("readonly") or ()]
    static = [str(key) for key in tx.message.account_keys]
    record = TransactionRecord(
        signature=str(tx.signatures[0]),
        slot=slot,
        block_time=block_time,
        tx=tx,
        err=meta.get("err"),
        logs=tuple(str(line) for line in meta.get("logMessages") or ()),
        fee=int(meta.get("fee") or 0),
        units=int(meta.get("computeUnitsConsumed") or 0),
        accounts=tuple(static + loaded_writable + loaded_readonly),
        pre_balances=tuple(int(b) for b in meta.get("preBalances") or ()),
        post_balances=tuple(int(b) for b in meta.get("postBalances") or ()),
    )
    written = [str(key) for key in writable_keys(tx)] + loaded_writable
    if len(record.post_balances) != len(record.accounts):
        raise BadBlock(f"slot {slot}: postBalances do not match the transaction's accounts")
    return TransactionEvent(record), written


def block_events(slot: int, data: bytes) -> BlockEvents:
    """The events of slot ``slot``'s block, from ``getBlock``'s ``result`` (:data:`BLOCK_CONFIG`);
    ``null`` (no block) gives none."""
    try:
        block = _decoder.decode(data)
    except msgspec.DecodeError as exc:
        raise BadBlock(f"slot {slot}: the block is not JSON: {exc}") from exc
    if block is None:
        return BlockEvents(slot, (), ())
    if not isinstance(block, dict) or not isinstance(block.get("transactions", []), list):
        raise BadBlock(f"slot {slot}: the block is not an object with transactions")
    block_time = block.get("blockTime")
    if not isinstance(block_time, int):
        block_time = 0  # null while the node has not estimated it
    events: list[TransactionEvent] = []
    written: dict[str, None] = {}
    lamports: dict[str, int] = {}
    for item in block.get("transactions", []):
        if not isinstance(item, dict):
            raise BadBlock(f"slot {slot}: a transaction entry that is not an object")
        event, keys = _transaction(slot, block_time, item)
        events.append(event)
        written.update(dict.fromkeys(keys))
        balances = dict(zip(event.record.accounts, event.record.post_balances, strict=True))
        lamports.update((key, balances[key]) for key in keys)
    return BlockEvents(slot, tuple(events), tuple(written), lamports)


def account_events(found: BlockEvents, addresses: list[str], data: bytes) -> list[AccountEvent]:
    """One event per address of ``found``'s block, from ``getMultipleAccounts``'s ``result``
    (base64 data) read at the block's slot or later, with the block's own lamports."""
    try:
        reply = _decoder.decode(data)
        read_at = int(reply["context"]["slot"])
        values = reply["value"]
    except (msgspec.DecodeError, KeyError, TypeError, ValueError) as exc:
        raise BadBlock(f"accounts: not a getMultipleAccounts result: {exc}") from exc
    if not isinstance(values, list) or len(values) != len(addresses):
        raise BadBlock(f"accounts: {len(addresses)} asked, another number answered")
    if read_at < found.slot:
        raise BadBlock(f"accounts: read at slot {read_at}, before the block's {found.slot}")
    events = []
    for address, value in zip(addresses, values, strict=True):
        account = _account(value)
        lamports = found.lamports.get(address)
        if lamports == 0:
            account = None  # closed by the end of the slot, whatever came later
        elif account is not None and lamports is not None:
            account = _with_lamports(account, lamports)
        events.append(AccountEvent(address, account, found.slot))
    return events


def _with_lamports(account: Account, lamports: int) -> Account:
    return Account(
        lamports=lamports,
        data=bytes(account.data),
        owner=account.owner,
        executable=account.executable,
        rent_epoch=account.rent_epoch,
    )


def _account(value: Any) -> Account | None:
    if value is None:
        return None
    try:
        data = value["data"]
        return Account(
            lamports=int(value["lamports"]),
            data=base64.b64decode(data[0], validate=True),
            owner=Pubkey.from_string(value["owner"]),
            executable=bool(value["executable"]),
            rent_epoch=int(value.get("rentEpoch", 0)),
        )
    except (KeyError, TypeError, IndexError, ValueError, binascii.Error) as exc:
        raise BadBlock(f"accounts: an account that does not decode: {exc}") from exc
