"""The Solana family's events as bytes, so that they travel between processes (a worker appends
them to the chain's Redis Stream; every web process renders notifications from what it reads
back). MessagePack arrays, one tag per kind of event; transactions in their wire form, accounts
field by field. Version 1; a change of layout is a new version, and :meth:`decode` keeps reading
the old ones for as long as a release may still find them on a stream (the resume window).
"""

from __future__ import annotations

from typing import Any, ClassVar, Final

import msgspec
from solders.account import Account
from solders.pubkey import Pubkey
from solders.transaction import VersionedTransaction

from adapters.base import EventCodec

from ._events import (
    AccountEvent,
    ClosedSlot,
    InnerInstruction,
    SlotEvent,
    TransactionEvent,
    TransactionRecord,
)
from ._wire import transaction_error


class _Record(msgspec.Struct, array_like=True):
    signature: str
    slot: int
    block_time: int
    tx: bytes
    err: Any
    logs: tuple[str, ...]
    fee: int
    units: int
    accounts: tuple[str, ...]
    pre_balances: tuple[int, ...]
    post_balances: tuple[int, ...]
    pre_token_balances: tuple[dict[str, Any], ...]
    post_token_balances: tuple[dict[str, Any], ...]
    inner: tuple[tuple[int, tuple[InnerInstruction, ...]], ...]


class _Closed(msgspec.Struct, array_like=True):
    slot: int
    parent: int
    blockhash: str
    previous_blockhash: str
    block_time: int
    records: tuple[_Record, ...]
    timestamp_ms: int
    vote_account: str
    vote_signature: str


class _Account(msgspec.Struct, array_like=True):
    lamports: int
    data: bytes
    owner: bytes
    executable: bool
    rent_epoch: int


class _Slot(msgspec.Struct, array_like=True, tag=0):
    slot: int
    parent: int
    root: int
    closed: _Closed | None


class _AccountChange(msgspec.Struct, array_like=True, tag=1):
    address: str
    account: _Account | None
    slot: int
    decimals: int | None


class _Transaction(msgspec.Struct, array_like=True, tag=2):
    record: _Record


_Wire = _Slot | _AccountChange | _Transaction

_encoder: Final = msgspec.msgpack.Encoder()
_decoder: Final = msgspec.msgpack.Decoder(_Wire)


def _record(record: TransactionRecord) -> _Record:
    return _Record(
        record.signature,
        record.slot,
        record.block_time,
        bytes(record.tx),
        transaction_error(record.err),  # its JSON: renders as the original does
        record.logs,
        record.fee,
        record.units,
        record.accounts,
        record.pre_balances,
        record.post_balances,
        record.pre_token_balances,
        record.post_token_balances,
        record.inner,
    )


def _record_of(wire: _Record) -> TransactionRecord:
    return TransactionRecord(
        signature=wire.signature,
        slot=wire.slot,
        block_time=wire.block_time,
        tx=VersionedTransaction.from_bytes(wire.tx),
        err=wire.err,
        logs=wire.logs,
        fee=wire.fee,
        units=wire.units,
        accounts=wire.accounts,
        pre_balances=wire.pre_balances,
        post_balances=wire.post_balances,
        pre_token_balances=wire.pre_token_balances,
        post_token_balances=wire.post_token_balances,
        inner=wire.inner,
    )


def _wire(event: object) -> _Wire:
    if isinstance(event, SlotEvent):
        closed = event.closed
        return _Slot(
            event.slot,
            event.parent,
            event.root,
            None
            if closed is None
            else _Closed(
                closed.slot,
                closed.parent,
                closed.blockhash,
                closed.previous_blockhash,
                closed.block_time,
                tuple(_record(r) for r in closed.records),
                closed.timestamp_ms,
                closed.vote_account,
                closed.vote_signature,
            ),
        )
    if isinstance(event, AccountEvent):
        account = event.account
        return _AccountChange(
            event.address,
            None
            if account is None
            else _Account(
                account.lamports,
                bytes(account.data),
                bytes(account.owner),
                account.executable,
                account.rent_epoch,
            ),
            event.slot,
            event.decimals,
        )
    if isinstance(event, TransactionEvent):
        return _Transaction(_record(event.record))
    raise TypeError(f"not a Solana event: {type(event).__name__}")


def _event(wire: _Wire) -> object:
    if isinstance(wire, _Slot):
        closed = wire.closed
        return SlotEvent(
            wire.slot,
            wire.parent,
            wire.root,
            None
            if closed is None
            else ClosedSlot(
                slot=closed.slot,
                parent=closed.parent,
                blockhash=closed.blockhash,
                previous_blockhash=closed.previous_blockhash,
                block_time=closed.block_time,
                records=tuple(_record_of(r) for r in closed.records),
                timestamp_ms=closed.timestamp_ms,
                vote_account=closed.vote_account,
                vote_signature=closed.vote_signature,
            ),
        )
    if isinstance(wire, _AccountChange):
        found = wire.account
        account = (
            None
            if found is None
            else Account(
                lamports=found.lamports,
                data=found.data,
                owner=Pubkey.from_bytes(found.owner),
                executable=found.executable,
                rent_epoch=found.rent_epoch,
            )
        )
        return AccountEvent(wire.address, account, wire.slot, wire.decimals)
    return TransactionEvent(_record_of(wire.record))


class SolanaEventCodec(EventCodec):
    """Slots, account changes and transactions of the Solana family (version 1)."""

    version: ClassVar[int] = 1

    def encode(self, event: object) -> bytes:
        return _encoder.encode(_wire(event))

    def decode(self, data: bytes, version: int) -> object:
        if version != 1:
            raise ValueError(f"Solana events of encoding version {version} (this release reads 1)")
        try:
            return _event(_decoder.decode(data))
        except (msgspec.DecodeError, ValueError, TypeError) as exc:
            raise ValueError(f"not a Solana event of version 1: {exc}") from exc
