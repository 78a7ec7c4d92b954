"""py-evm blocks, transactions and receipts rendered field for field as geth renders them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import msgspec
import rlp
from eth._utils.address import generate_contract_address
from eth._utils.calculations import fake_exponential

from adapters.evm.blocks import LogRecord
from schemas import eth as schema

from .records import BlockRecord, TxRecord

GAS_PER_BLOB: Final = 2**17
MIN_BLOB_BASE_FEE: Final = 1

_encode = msgspec.json.Encoder().encode


def quantity(value: int) -> str:
    """A hex quantity (``0x0``, ``0x1a``)."""
    return hex(value)


def data(value: bytes) -> str:
    """Hex data (``0x`` followed by two digits a byte)."""
    return "0x" + value.hex()


def word(value: int) -> str:
    """A 32-byte word given as an integer (topics, storage keys)."""
    return f"0x{value:064x}"


def bloom(value: int) -> str:
    return "0x" + value.to_bytes(256, "big").hex()


def address_or_none(value: bytes) -> str | None:
    """A recipient: py-evm's empty ``to`` (contract creation) is ``null``."""
    return data(value) if value else None


def blob_base_fee(excess_blob_gas: int, update_fraction: int) -> int:
    """EIP-4844's blob gas price for a block with ``excess_blob_gas``."""
    return int(fake_exponential(MIN_BLOB_BASE_FEE, excess_blob_gas, update_fraction))


def legacy_chain_id(v: int) -> int | None:
    """The EIP-155 chain id hidden in a legacy ``v`` (None when unprotected)."""
    return (v - 35) // 2 if v >= 35 else None


def effective_gas_price(tx: Any, base_fee: int | None) -> int:
    """What the sender paid per gas: the gas price, or min(fee cap, base fee + tip)."""
    if tx.type_id in (None, 1):
        return int(tx.gas_price)
    if base_fee is None:
        return int(tx.max_fee_per_gas)
    return min(int(tx.max_fee_per_gas), base_fee + int(tx.max_priority_fee_per_gas))


def _access_list(tx: Any) -> list[schema.AccessListEntry]:
    return [
        schema.AccessListEntry(address=data(address), storage_keys=[word(k) for k in keys])
        for address, keys in tx.access_list
    ]


def format_transaction(
    tx: Any,
    *,
    sender: str,
    block_hash: str | None,
    block_number: int | None,
    index: int | None,
    base_fee: int | None,
) -> schema.Transaction:
    """geth's ``newRPCTransaction`` for a transaction of any type."""
    type_id = tx.type_id or 0
    mined = block_hash is not None
    fields: dict[str, Any] = {
        "block_hash": block_hash,
        "block_number": quantity(block_number) if block_number is not None else None,
        "from_": sender,
        "gas": quantity(tx.gas),
        "hash": data(tx.hash),
        "input": data(tx.data),
        "nonce": quantity(tx.nonce),
        "to": address_or_none(tx.to),
        "transaction_index": quantity(index) if index is not None else None,
        "value": quantity(tx.value),
        "type": quantity(type_id),
        "r": quantity(tx.r),
        "s": quantity(tx.s),
    }
    if type_id == 0:
        fields["gas_price"] = quantity(tx.gas_price)
        fields["v"] = quantity(tx.v)
        chain_id = legacy_chain_id(tx.v)
        if chain_id:
            fields["chain_id"] = quantity(chain_id)
        return schema.Transaction(**fields)
    fields["v"] = quantity(tx.y_parity)
    fields["y_parity"] = quantity(tx.y_parity)
    fields["chain_id"] = quantity(tx.chain_id)
    fields["access_list"] = _access_list(tx)
    if type_id == 1:
        fields["gas_price"] = quantity(tx.gas_price)
        return schema.Transaction(**fields)
    fields["max_fee_per_gas"] = quantity(tx.max_fee_per_gas)
    fields["max_priority_fee_per_gas"] = quantity(tx.max_priority_fee_per_gas)
    price = effective_gas_price(tx, base_fee) if mined and base_fee is not None else None
    fields["gas_price"] = quantity(price if price is not None else tx.max_fee_per_gas)
    if type_id == 3:
        fields["max_fee_per_blob_gas"] = quantity(tx.max_fee_per_blob_gas)
        fields["blob_versioned_hashes"] = [data(h) for h in tx.blob_versioned_hashes]
    if type_id == 4:
        fields["authorization_list"] = [
            schema.Authorization(
                chain_id=quantity(auth.chain_id),
                address=data(auth.address),
                nonce=quantity(auth.nonce),
                y_parity=quantity(auth.y_parity),
                r=quantity(auth.r),
                s=quantity(auth.s),
            )
            for auth in tx.authorization_list
        ]
    return schema.Transaction(**fields)


def _receipt_outcome(receipt: Any) -> dict[str, str]:
    # Before Byzantium a receipt carries the post-state root; after, a status byte.
    outcome: bytes = receipt.state_root
    if len(outcome) == 32:
        return {"root": data(outcome)}
    return {"status": "0x1" if outcome == b"\x01" else "0x0"}


def _header_fields(header: Any) -> dict[str, Any]:
    """The header keys shared by blocks and uncles (geth's ``RPCMarshalHeader``)."""
    fields: dict[str, Any] = {
        "difficulty": quantity(header.difficulty),
        "extra_data": data(header.extra_data),
        "gas_limit": quantity(header.gas_limit),
        "gas_used": quantity(header.gas_used),
        "hash": data(header.hash),
        "logs_bloom": bloom(header.bloom),
        "miner": data(header.coinbase),
        "mix_hash": data(header.mix_hash),
        "nonce": data(header.nonce),
        "number": quantity(header.block_number),
        "parent_hash": data(header.parent_hash),
        "receipts_root": data(header.receipt_root),
        "sha3_uncles": data(header.uncles_hash),
        "state_root": data(header.state_root),
        "timestamp": quantity(header.timestamp),
        "transactions_root": data(header.transaction_root),
    }
    # Fields of later forks exist only on headers of those forks.
    for name in ("base_fee_per_gas", "blob_gas_used", "excess_blob_gas"):
        number = getattr(header, name, None)
        if number is not None:
            fields[name] = quantity(number)
    for name in ("withdrawals_root", "parent_beacon_block_root", "requests_hash"):
        digest = getattr(header, name, None)
        if digest is not None:
            fields[name] = data(digest)
    return fields


def format_header(header: Any) -> schema.Header:
    """The ``newHeads`` rendering of a header."""
    return schema.Header(**_header_fields(header))


def format_uncle(header: Any) -> bytes:
    """An uncle as ``eth_getUncleByBlockNumberAndIndex`` returns it: a block with no body."""
    size = len(rlp.encode([header, [], []]))
    return _encode(schema.Block(**_header_fields(header), size=quantity(size), uncles=[]))


def format_block(
    block: Any, receipts: Sequence[Any], *, blob_fee_fraction: int | None
) -> BlockRecord:
    """Render a block and its receipts once, for every later query and notification."""
    header = block.header
    block_hash = data(header.hash)
    number = header.block_number
    base_fee: int | None = getattr(header, "base_fee_per_gas", None)
    excess_blob_gas: int | None = getattr(header, "excess_blob_gas", None)
    blob_price = (
        blob_base_fee(excess_blob_gas, blob_fee_fraction)
        if excess_blob_gas is not None and blob_fee_fraction is not None
        else None
    )
    timestamp_hex = quantity(header.timestamp)
    number_hex = quantity(number)

    txs: list[TxRecord] = []
    logs: list[LogRecord] = []
    previous_cumulative = 0
    for index, (tx, receipt) in enumerate(zip(block.transactions, receipts, strict=True)):
        sender = data(tx.sender)
        tx_hash = data(tx.hash)
        tx_json = _encode(
            format_transaction(
                tx,
                sender=sender,
                block_hash=block_hash,
                block_number=number,
                index=index,
                base_fee=base_fee,
            )
        )
        gas_used = receipt.gas_used - previous_cumulative
        previous_cumulative = receipt.gas_used
        index_hex = quantity(index)
        receipt_logs: list[schema.Log] = []
        for log in receipt.logs:
            log_struct = schema.Log(
                address=data(log.address),
                topics=[word(t) for t in log.topics],
                data=data(log.data),
                block_number=number_hex,
                transaction_hash=tx_hash,
                transaction_index=index_hex,
                block_hash=block_hash,
                block_timestamp=timestamp_hex,
                log_index=quantity(len(logs)),
            )
            receipt_logs.append(log_struct)
            logs.append(
                LogRecord(
                    address=log_struct.address,
                    topics=tuple(log_struct.topics),
                    json=_encode(log_struct),
                )
            )
        price = effective_gas_price(tx, base_fee)
        fields: dict[str, Any] = {
            "block_hash": block_hash,
            "block_number": number_hex,
            "contract_address": (
                None if tx.to else data(generate_contract_address(tx.sender, tx.nonce))
            ),
            "cumulative_gas_used": quantity(receipt.gas_used),
            "effective_gas_price": quantity(price),
            "from_": sender,
            "gas_used": quantity(gas_used),
            "logs": receipt_logs,
            "logs_bloom": bloom(receipt.bloom),
            "to": address_or_none(tx.to),
            "transaction_hash": tx_hash,
            "transaction_index": index_hex,
            "type": quantity(tx.type_id or 0),
            **_receipt_outcome(receipt),
        }
        if tx.type_id == 3:
            fields["blob_gas_used"] = quantity(len(tx.blob_versioned_hashes) * GAS_PER_BLOB)
            fields["blob_gas_price"] = quantity(blob_price or 0)
        txs.append(
            TxRecord(
                hash=tx_hash,
                index=index,
                block_hash=block_hash,
                block_number=number,
                sender=sender,
                json=tx_json,
                receipt_json=_encode(schema.Receipt(**fields)),
                gas_used=gas_used,
                effective_tip=price - (base_fee or 0),
            )
        )

    base_fields = _header_fields(header)
    withdrawals = getattr(block, "withdrawals", None)
    if withdrawals is not None:
        base_fields["withdrawals"] = [
            schema.Withdrawal(
                index=quantity(w.index),
                validator_index=quantity(w.validator_index),
                address=data(w.address),
                amount=quantity(w.amount),
            )
            for w in withdrawals
        ]
    base_fields["size"] = quantity(len(rlp.encode(block)))
    base_fields["uncles"] = [data(uncle.hash) for uncle in block.uncles]
    hashes = msgspec.Raw(_encode([t.hash for t in txs]))
    return BlockRecord(
        number=number,
        hash=block_hash,
        parent_hash=data(header.parent_hash),
        timestamp=header.timestamp,
        gas_limit=header.gas_limit,
        gas_used=header.gas_used,
        base_fee=base_fee,
        blob_gas_used=getattr(header, "blob_gas_used", None),
        excess_blob_gas=excess_blob_gas,
        json_hashes=_encode(schema.Block(**base_fields, transactions=hashes)),
        header_json=_encode(format_header(header)),
        txs=tuple(txs),
        uncles_json=tuple(format_uncle(uncle) for uncle in block.uncles),
        logs=tuple(logs),
        log_addresses=frozenset(log.address for log in logs),
        log_topics=frozenset(topic for log in logs for topic in log.topics),
    )
