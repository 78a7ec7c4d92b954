"""A landed transaction as ``getTransaction`` and ``getBlock`` answer it, sans-io: ``json``
(account keys as strings, compiled instructions), ``jsonParsed`` (account keys as ``{pubkey,
writable, signer, source}``, instructions parsed by :mod:`._parsed_instructions`), ``base64`` /
``base58``, and the ``accounts`` detail of ``getBlock``; with the status meta Solana gives."""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from solders.transaction import VersionedTransaction

from adapters._base58 import b58encode

from . import _wire as wire
from ._errors import UnsupportedTransactionVersion, invalid_params
from ._events import TransactionRecord
from ._parsed_instructions import parse_instruction

TRANSACTION_ENCODINGS: Final = ("json", "jsonParsed", "base58", "base64")
BLOCK_DETAILS: Final = ("full", "accounts", "signatures", "none")
#: Keys the runtime never lets a transaction write (sysvars, builtin programs): Solana's
#: ``jsonParsed`` shows them read-only whatever the header says.
RESERVED_KEYS: Final = frozenset(
    {
        "11111111111111111111111111111111",
        "AddressLookupTab1e1111111111111111111111111",
        "BPFLoader1111111111111111111111111111111111",
        "BPFLoader2111111111111111111111111111111111",
        "BPFLoaderUpgradeab1e11111111111111111111111",
        "ComputeBudget111111111111111111111111111111",
        "Config1111111111111111111111111111111111111",
        "Ed25519SigVerify111111111111111111111111111",
        "KeccakSecp256k11111111111111111111111111111",
        "LoaderV411111111111111111111111111111111111",
        "NativeLoader1111111111111111111111111111111",
        "Secp256r1SigVerify1111111111111111111111111",
        "Stake11111111111111111111111111111111111111",
        "Vote111111111111111111111111111111111111111",
        "SysvarC1ock11111111111111111111111111111111",
        "SysvarEpochSchedu1e111111111111111111111111",
        "SysvarFees111111111111111111111111111111111",
        "SysvarRecentB1ockHashes11111111111111111111",
        "SysvarRent111111111111111111111111111111111",
        "SysvarRewards111111111111111111111111111111",
        "SysvarS1otHashes111111111111111111111111111",
        "SysvarS1otHistory11111111111111111111111111",
        "SysvarStakeHistory1111111111111111111111111",
        "Sysvar1nstructions1111111111111111111111111",
        "SysvarEpochRewards1111111111111111111111111",
        "SysvarLastRestartS1ot1111111111111111111111",
    }
)
_UPGRADEABLE_LOADER: Final = "BPFLoaderUpgradeab1e11111111111111111111111"
_COMPUTE_BUDGET: Final = "ComputeBudget111111111111111111111111111111"
#: The compute budget program's ``SetComputeUnitPrice`` (a u64 of micro-lamports follows).
_SET_COMPUTE_UNIT_PRICE: Final = 3


def compute_unit_price(tx: VersionedTransaction) -> int:
    """The compute-unit price (micro-lamports) ``tx`` sets, 0 if it sets none."""
    message = tx.message
    keys = message.account_keys
    for ix in message.instructions:
        data = bytes(ix.data)
        if (
            str(keys[ix.program_id_index]) == _COMPUTE_BUDGET
            and len(data) == 9
            and data[0] == _SET_COMPUTE_UNIT_PRICE
        ):
            return int.from_bytes(data[1:], "little")
    return 0


#: The memo programs whose instructions ``getSignaturesForAddress`` lists as ``memo`` (v1, v3).
_MEMO_PROGRAMS: Final = frozenset(
    {"Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo", "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr"}
)


def memo(tx: VersionedTransaction) -> str | None:
    """The memos of ``tx``'s memo instructions as Solana lists them: ``[<bytes>] <text>`` each
    (``(unparsable)`` for one that is not UTF-8), joined by ``; ``; None without any."""
    keys = tx.message.account_keys
    memos = []
    for ix in tx.message.instructions:
        if str(keys[ix.program_id_index]) not in _MEMO_PROGRAMS:
            continue
        data = bytes(ix.data)
        try:
            text = data.decode()
        except UnicodeDecodeError:
            text = "(unparsable)"
        memos.append(f"[{len(data)}] {text}")
    return "; ".join(memos) if memos else None


def version(tx: VersionedTransaction) -> Any:
    """``"legacy"`` or the message version number."""
    kind = tx.version()
    return "legacy" if "Legacy" in repr(kind) else int(kind)


def parsed_account_keys(tx: VersionedTransaction) -> list[dict[str, Any]]:
    """The static account keys as ``jsonParsed`` lists them: writable as the runtime lets the
    transaction write (a called program or a reserved key is read-only), all from the
    transaction itself (no lookup-table keys are loaded here)."""
    message = tx.message
    keys = [str(key) for key in message.account_keys]
    header = message.header
    signed = header.num_required_signatures
    writable_signed = signed - header.num_readonly_signed_accounts
    writable_unsigned_end = len(keys) - header.num_readonly_unsigned_accounts
    called = {message.instructions[i].program_id_index for i in range(len(message.instructions))}
    # A called program stays writable only with the upgradeable loader in the message (Solana's
    # demote_program_id), so a program's own upgrade can write it.
    demote_called = _UPGRADEABLE_LOADER not in keys
    accounts = []
    for index, key in enumerate(keys):
        writable = index < writable_signed or signed <= index < writable_unsigned_end
        if key in RESERVED_KEYS or (demote_called and index in called):
            writable = False
        accounts.append(
            {"pubkey": key, "writable": writable, "signer": index < signed, "source": "transaction"}
        )
    return accounts


def _message_json(tx: VersionedTransaction, parsed: bool) -> dict[str, Any]:
    message = tx.message
    keys = [str(key) for key in message.account_keys]
    body: dict[str, Any]
    if parsed:
        body = {
            "accountKeys": parsed_account_keys(tx),
            "recentBlockhash": str(message.recent_blockhash),
            "instructions": [
                parse_instruction(
                    keys[ix.program_id_index],
                    [keys[i] for i in ix.accounts if i < len(keys)],
                    bytes(ix.data),
                    None,
                )
                for ix in message.instructions
            ],
        }
    else:
        header = message.header
        body = {
            "accountKeys": keys,
            "header": {
                "numRequiredSignatures": header.num_required_signatures,
                "numReadonlySignedAccounts": header.num_readonly_signed_accounts,
                "numReadonlyUnsignedAccounts": header.num_readonly_unsigned_accounts,
            },
            "recentBlockhash": str(message.recent_blockhash),
            "instructions": [
                {
                    "programIdIndex": ix.program_id_index,
                    "accounts": list(ix.accounts),
                    "data": b58encode(bytes(ix.data)),
                    "stackHeight": None,
                }
                for ix in message.instructions
            ],
        }
    lookups = getattr(message, "address_table_lookups", None)
    if lookups is not None:
        body["addressTableLookups"] = [
            {
                "accountKey": str(lookup.account_key),
                "writableIndexes": list(lookup.writable_indexes),
                "readonlyIndexes": list(lookup.readonly_indexes),
            }
            for lookup in lookups
        ]
    return body


def _inner_json(record: TransactionRecord, parsed: bool) -> list[dict[str, Any]]:
    """``innerInstructions``: the instructions programs invoked, per top-level instruction,
    compiled (``json``) or parsed like the top-level ones (``jsonParsed``)."""
    keys = list(record.accounts)
    listed = []
    for index, inner in record.inner:
        instructions = []
        for program_index, accounts, data, stack_height in inner:
            if parsed:
                instructions.append(
                    parse_instruction(
                        keys[program_index] if program_index < len(keys) else "",
                        [keys[i] for i in accounts if i < len(keys)],
                        data,
                        stack_height,
                    )
                )
            else:
                instructions.append(
                    {
                        "programIdIndex": program_index,
                        "accounts": list(accounts),
                        "data": b58encode(data),
                        "stackHeight": stack_height,
                    }
                )
        listed.append({"index": index, "instructions": instructions})
    return listed


def _meta(
    record: TransactionRecord, *, accounts_only: bool = False, parsed: bool = False
) -> dict[str, Any]:
    err = wire.transaction_error(record.err)
    meta: dict[str, Any] = {
        "err": err,
        "status": {"Ok": None} if err is None else {"Err": err},
        "fee": record.fee,
        "preBalances": list(record.pre_balances),
        "postBalances": list(record.post_balances),
    }
    if accounts_only:
        meta["preTokenBalances"] = list(record.pre_token_balances)
        meta["postTokenBalances"] = list(record.post_token_balances)
        return meta
    meta.update(
        {
            "innerInstructions": _inner_json(record, parsed),
            "logMessages": list(record.logs),
            "preTokenBalances": list(record.pre_token_balances),
            "postTokenBalances": list(record.post_token_balances),
            "rewards": [],
            "loadedAddresses": {"writable": [], "readonly": []},
            "computeUnitsConsumed": record.units,
        }
    )
    return meta


def transaction_json(record: TransactionRecord, encoding: str, versioned: bool) -> dict[str, Any]:
    """``getTransaction``'s answer (``getBlock``'s entries are this without slot and time)."""
    tx = record.tx
    if encoding == "base64":
        transaction: Any = [base64.b64encode(bytes(tx)).decode(), "base64"]
    elif encoding == "base58":
        transaction = [b58encode(bytes(tx)), "base58"]
    else:
        transaction = {
            "signatures": [str(s) for s in tx.signatures],
            "message": _message_json(tx, encoding == "jsonParsed"),
        }
    result: dict[str, Any] = {
        "slot": record.slot,
        "blockTime": record.block_time,
        "transaction": transaction,
        "meta": _meta(record, parsed=encoding == "jsonParsed"),
    }
    if versioned:
        result["version"] = version(tx)
    return result


def transaction_accounts(record: TransactionRecord, versioned: bool) -> dict[str, Any]:
    """A ``getBlock`` entry with ``transactionDetails: "accounts"``: signatures, parsed account
    keys, and the meta without logs or instructions."""
    tx = record.tx
    result: dict[str, Any] = {
        "transaction": {
            "signatures": [str(s) for s in tx.signatures],
            "accountKeys": parsed_account_keys(tx),
        },
        "meta": _meta(record, accounts_only=True),
    }
    if versioned:
        result["version"] = version(tx)
    return result


def transaction_encoding(options: Mapping[str, Any]) -> str:
    """The ``encoding`` of a transaction read (default ``json``)."""
    encoding = options.get("encoding") or "json"
    if encoding not in TRANSACTION_ENCODINGS:
        raise invalid_params(
            f"unknown variant `{encoding}`, expected one of `binary`, `base64`, `base58`, "
            "`json`, `jsonParsed`"
        )
    return str(encoding)


@dataclass(frozen=True, slots=True)
class BlockShape:
    """How a block is asked for (``getBlock``'s config, ``blockSubscribe``'s)."""

    encoding: str
    details: str
    rewards: bool
    max_version: int | None


def block_shape(options: Mapping[str, Any], *, rewards_key: str = "rewards") -> BlockShape:
    """A block config checked: ``encoding``, ``transactionDetails``, whether to show rewards
    (``rewards``; ``showRewards`` for ``blockSubscribe``), ``maxSupportedTransactionVersion``."""
    details = options.get("transactionDetails") or "full"
    if details not in BLOCK_DETAILS:
        raise invalid_params(
            f"unknown variant `{details}`, expected one of `full`, `signatures`, `none`, `accounts`"
        )
    return BlockShape(
        transaction_encoding(options),
        str(details),
        bool(options.get(rewards_key, True)),
        wire.optional_u64(options, "maxSupportedTransactionVersion"),
    )


def block_json(
    slot: int,
    parent: int,
    blockhash: str,
    previous_blockhash: str,
    block_time: int,
    records: Sequence[TransactionRecord],
    shape: BlockShape,
) -> dict[str, Any]:
    """A block as ``getBlock`` answers it (and ``blockNotification`` carries it); -32015 for a
    versioned transaction the caller did not say it supports."""
    answer: dict[str, Any] = {
        "blockHeight": slot,  # no slot is ever skipped
        "blockTime": block_time,
        "blockhash": blockhash,
        "parentSlot": parent,
        "previousBlockhash": previous_blockhash,
    }
    if shape.details == "signatures":
        answer["signatures"] = [record.signature for record in records]
    elif shape.details != "none":
        versioned = shape.max_version is not None
        for record in records:
            landed = version(record.tx)
            if landed != "legacy" and (shape.max_version is None or landed > shape.max_version):
                raise UnsupportedTransactionVersion(landed)
        if shape.details == "accounts":
            answer["transactions"] = [transaction_accounts(r, versioned) for r in records]
        else:
            answer["transactions"] = [
                {
                    key: item
                    for key, item in transaction_json(record, shape.encoding, versioned).items()
                    if key not in ("slot", "blockTime")
                }
                for record in records
            ]
    if shape.rewards:
        answer["rewards"] = []
    return answer
