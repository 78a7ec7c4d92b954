"""A landed transaction as ``getTransaction`` and ``getBlock`` answer it, sans-io: ``json``
(account keys as strings, compiled instructions), ``jsonParsed`` (account keys as ``{pubkey,
writable, signer, source}``, instructions parsed by :mod:`._parsed_instructions`), ``base64`` /
``base58``, and the ``accounts`` detail of ``getBlock``; with the status meta Solana gives."""

from __future__ import annotations

import base64
from typing import Any, Final

from solders.transaction import VersionedTransaction

from adapters._base58 import b58encode

from . import _wire as wire
from ._events import TransactionRecord
from ._parsed_instructions import parse_instruction

TRANSACTION_ENCODINGS: Final = ("json", "jsonParsed", "base58", "base64")
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


def _meta(record: TransactionRecord, *, accounts_only: bool = False) -> dict[str, Any]:
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
            "innerInstructions": [],
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
        "meta": _meta(record),
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
