"""Solana's wire forms, sans-io: decoding params (pubkeys, hashes, configs, encoded transactions)
and encoding accounts and transaction errors the way ``solana-rpc`` does."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any, Final

from solders.account import Account
from solders.hash import Hash
from solders.pubkey import Pubkey
from solders.signature import Signature
from solders.system_program import ID as SYSTEM_PROGRAM
from solders.transaction import VersionedTransaction

from adapters._base58 import b58decode, b58encode

from ._errors import invalid_param, invalid_params, invalid_request
from ._token import DecimalsOf, parse_token

#: ``rentEpoch`` of every rent-exempt account, as Solana reports it (u64::MAX).
RENT_EXEMPT_EPOCH: Final = 2**64 - 1
#: Largest account data ``base58`` may encode (Solana's limit).
MAX_BASE58_BYTES: Final = 128
#: Largest wire transaction Solana accepts (its packet size), and its encoded lengths.
PACKET_DATA_SIZE: Final = 1232
MAX_BASE58_TRANSACTION: Final = 1683
MAX_BASE64_TRANSACTION: Final = 1644
ACCOUNT_ENCODINGS: Final = frozenset({"binary", "base58", "base64", "base64+zstd", "jsonParsed"})
_NONCE_ACCOUNT_SIZE: Final = 80

# -- params -----------------------------------------------------------------------------------------


def positional(params: Any, required: int, total: int) -> list[Any]:
    """``params`` as a list of ``total`` entries (missing optional ones None)."""
    if params is None:
        params = []
    if not isinstance(params, list):
        raise invalid_params("invalid type: map, expected a sequence")
    if len(params) < required:
        raise invalid_params(f"invalid length {len(params)}, expected at least {required}")
    if len(params) > total:
        raise invalid_params(f"invalid length {len(params)}, expected at most {total}")
    return [*params, *([None] * (total - len(params)))]


def _base58_bytes(value: Any, size: int, wrong_size: str) -> bytes:
    """A base58 string of ``size`` bytes; Solana's -32602 texts otherwise."""
    if not isinstance(value, str):
        raise invalid_params(f"invalid type: {_json_type(value)}, expected a string")
    try:
        raw = b58decode(value)
    except ValueError:
        raise invalid_param("Invalid") from None
    if len(raw) != size:
        raise invalid_param(wrong_size)
    return raw


def pubkey(value: Any) -> Pubkey:
    """An address (``Invalid param: WrongSize`` for a short one, as Solana)."""
    too_long = isinstance(value, str) and len(value) > 44
    return Pubkey.from_bytes(_base58_bytes(value, 32, "Invalid" if too_long else "WrongSize"))


def blockhash(value: Any) -> Hash:
    return Hash.from_bytes(_base58_bytes(value, 32, "WrongSize"))


def signature(value: Any) -> Signature:
    return Signature.from_bytes(_base58_bytes(value, 64, "Invalid"))


def bounded_list(value: Any, most: int) -> list[Any]:
    """An array param of at most ``most`` entries (Solana's "Too many inputs provided")."""
    if not isinstance(value, list):
        raise invalid_params(f"invalid type: {_json_type(value)}, expected a sequence")
    if len(value) > most:
        raise invalid_params(f"Too many inputs provided; max {most}")
    return value


def config(value: Any) -> Mapping[str, Any]:
    """An optional config object (None: empty)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise invalid_params(f"invalid type: {_json_type(value)}, expected a config object")
    return value


def u64(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**64:
        raise invalid_params(f"invalid type: {_json_type(value)}, expected u64 for {name}")
    return value


def optional_u64(options: Mapping[str, Any], key: str) -> int | None:
    value = options.get(key)
    return None if value is None else u64(value, key)


def account_encoding(options: Mapping[str, Any], default: str) -> str:
    encoding = options.get("encoding", default)
    if encoding is None:
        return default
    if not isinstance(encoding, str) or encoding not in ACCOUNT_ENCODINGS:
        raise invalid_params(
            f"unknown variant `{encoding}`, expected one of `binary`, `base58`, `base64`, "
            "`jsonParsed`, `base64+zstd`"
        )
    if encoding == "base64+zstd":
        raise invalid_param("base64+zstd encoding is not supported by this node; use base64")
    return str(encoding)


def data_slice(options: Mapping[str, Any]) -> tuple[int, int] | None:
    value = options.get("dataSlice")
    if value is None:
        return None
    if not isinstance(value, dict):
        raise invalid_params("invalid type for dataSlice, expected {offset, length}")
    return u64(value.get("offset"), "offset"), u64(value.get("length"), "length")


def transaction(value: Any, options: Mapping[str, Any]) -> VersionedTransaction:
    """A wire transaction, as ``sendTransaction`` and ``simulateTransaction`` take it."""
    if not isinstance(value, str):
        raise invalid_params(f"invalid type: {_json_type(value)}, expected a string")
    encoding = options.get("encoding") or "base58"
    if encoding == "base58":
        if len(value) > MAX_BASE58_TRANSACTION:
            raise invalid_param(
                f"base58 encoded solana_transaction::versioned::VersionedTransaction too large: "
                f"{len(value)} bytes (max: encoded/raw {MAX_BASE58_TRANSACTION}/{PACKET_DATA_SIZE})"
            )
        try:
            raw = b58decode(value)
        except ValueError as exc:
            raise invalid_param(f"invalid base58 encoding: {exc}") from None
    elif encoding == "base64":
        if len(value) > MAX_BASE64_TRANSACTION:
            raise invalid_param(
                f"base64 encoded solana_transaction::versioned::VersionedTransaction too large: "
                f"{len(value)} bytes (max: encoded/raw {MAX_BASE64_TRANSACTION}/{PACKET_DATA_SIZE})"
            )
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise invalid_param(f"invalid base64 encoding: {exc}") from None
    else:
        raise invalid_param(
            f"unsupported encoding: {encoding}. Supported encodings: base58, base64"
        )
    try:
        tx = VersionedTransaction.from_bytes(raw)
    except Exception as exc:  # any malformed byte string is the caller's
        raise invalid_param(
            f"failed to deserialize solana_transaction::versioned::VersionedTransaction: {exc}"
        ) from None
    try:
        tx.sanitize()
    except Exception:
        raise invalid_param(
            "invalid transaction: Transaction failed to sanitize accounts offsets correctly"
        ) from None
    return tx


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean `{str(value).lower()}`"
    if isinstance(value, int):
        return f"integer `{value}`"
    if isinstance(value, str):
        return f'string "{value}"'
    return "sequence" if isinstance(value, list) else "map"


# -- accounts ---------------------------------------------------------------------------------------


def encode_account(
    account: Account,
    encoding: str,
    window: tuple[int, int] | None,
    decimals_of: DecimalsOf | None = None,
) -> dict[str, Any]:
    """An account as ``getAccountInfo`` answers it (``decimals_of`` finds a token account's mint
    for ``jsonParsed``)."""
    data = bytes(account.data)
    return {
        "data": encode_data(account.owner, data, encoding, window, decimals_of),
        "executable": account.executable,
        "lamports": account.lamports,
        "owner": str(account.owner),
        "rentEpoch": RENT_EXEMPT_EPOCH,
        "space": len(data),
    }


def encode_data(
    owner: Pubkey | None,
    data: bytes,
    encoding: str,
    window: tuple[int, int] | None,
    decimals_of: DecimalsOf | None = None,
) -> Any:
    """Account data in ``encoding`` (``jsonParsed`` needs the ``owner`` to pick a parser)."""
    if encoding == "jsonParsed":
        parsed = None
        if owner is not None:
            parsed = parse_system_account(owner, data) or parse_token(owner, data, decimals_of)
        if parsed is not None:
            return parsed
        encoding = "base64"  # as Solana: an account no parser knows falls back to base64
    if window is not None:
        offset, length = window
        data = data[offset : offset + length]
    if encoding in ("binary", "base58") and len(data) > MAX_BASE58_BYTES:
        raise invalid_request(
            "Encoded binary (base 58) data should be less than 128 bytes, please use Base64 "
            "encoding."
        )
    if encoding == "binary":
        return b58encode(data)
    if encoding == "base58":
        return [b58encode(data), "base58"]
    return [base64.b64encode(data).decode(), "base64"]


def parse_system_account(owner: Pubkey, data: bytes) -> dict[str, Any] | None:
    """``jsonParsed`` for the system program's accounts: nonce accounts (the only system accounts
    with data); None for what Solana does not parse either."""
    if owner != SYSTEM_PROGRAM or len(data) != _NONCE_ACCOUNT_SIZE:
        return None
    state = int.from_bytes(data[4:8], "little")
    if state == 0:
        parsed: dict[str, Any] = {"type": "uninitialized"}
    else:
        parsed = {
            "type": "initialized",
            "info": {
                "authority": b58encode(data[8:40]),
                "blockhash": b58encode(data[40:72]),
                "feeCalculator": {
                    "lamportsPerSignature": str(int.from_bytes(data[72:80], "little"))
                },
            },
        }
    return {"program": "nonce", "parsed": parsed, "space": len(data)}


def matches_filters(account: Account, filters: list[Any]) -> bool:
    """``getProgramAccounts``'s ``filters`` (``dataSize``, ``memcmp``); validated by the caller."""
    data = bytes(account.data)
    for item in filters:
        if "dataSize" in item and len(data) != item["dataSize"]:
            return False
        if "memcmp" in item:
            offset, wanted = item["memcmp"]
            if data[offset : offset + len(wanted)] != wanted:
                return False
    return True


def program_filters(value: Any) -> list[dict[str, Any]]:
    """``filters`` checked and decoded: ``{dataSize: n}`` and ``{memcmp: {offset, bytes,
    encoding?}}`` (at most 4, as Solana)."""
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > 4:
        raise invalid_params("filters must be an array of at most 4 filters")
    decoded: list[dict[str, Any]] = []
    for item in value:
        if isinstance(item, dict) and "dataSize" in item:
            decoded.append({"dataSize": u64(item["dataSize"], "dataSize")})
        elif isinstance(item, dict) and isinstance(item.get("memcmp"), dict):
            memcmp = item["memcmp"]
            offset = u64(memcmp.get("offset"), "offset")
            text = memcmp.get("bytes")
            if not isinstance(text, str):
                raise invalid_params("memcmp.bytes must be a string")
            try:
                if memcmp.get("encoding", "base58") == "base64":
                    wanted = base64.b64decode(text, validate=True)
                else:
                    wanted = b58decode(text)
            except (ValueError, binascii.Error):
                raise invalid_param(f"Invalid filter: encoded binary data {text!r}") from None
            decoded.append({"memcmp": (offset, wanted)})
        else:
            raise invalid_params("unknown filter: expected dataSize or memcmp")
    return decoded


# -- transaction errors -----------------------------------------------------------------------------


def _variant(value: Any) -> str:
    """The variant name of a fieldless solders enum (``TransactionErrorFieldless.X`` -> ``X``)."""
    return repr(value).rsplit(".", 1)[-1]


def transaction_error(err: Any) -> Any:
    """A solders ``TransactionError`` in Solana's JSON (``{"InstructionError":[0,{"Custom":1}]}``)."""
    if err is None or isinstance(err, str | dict):
        # None, a fieldless error the ledger names itself, or one in JSON already (as a node's
        # block carries it, and as a transaction's error travels between processes).
        return err
    name = type(err).__name__
    if name == "TransactionErrorInstructionError":
        return {"InstructionError": [err.index, _instruction_error(err.err)]}
    if name == "TransactionErrorDuplicateInstruction":
        return {"DuplicateInstruction": err.index}
    if name == "TransactionErrorInsufficientFundsForRent":
        return {"InsufficientFundsForRent": {"account_index": err.account_index}}
    if name == "TransactionErrorProgramExecutionTemporarilyRestricted":
        return {"ProgramExecutionTemporarilyRestricted": {"account_index": err.account_index}}
    return _variant(err)


def _instruction_error(err: Any) -> Any:
    name = type(err).__name__
    if name == "InstructionErrorCustom":
        return {"Custom": err.code}
    if name == "InstructionErrorBorshIO":
        return {"BorshIoError": err.value}
    return _variant(err)


_MESSAGES: Final = {
    "AccountNotFound": "Attempt to debit an account but found no record of a prior credit.",
    "AlreadyProcessed": "This transaction has already been processed",
    "BlockhashNotFound": "Blockhash not found",
    "InsufficientFundsForFee": "Insufficient funds for fee",
    "InvalidAccountForFee": "This account may not be used to pay transaction fees",
    "SignatureFailure": "Transaction did not pass signature verification",
    "SanitizeFailure": "Transaction failed to sanitize accounts offsets correctly",
    "ProgramAccountNotFound": "Attempt to load a program that does not exist",
    "InvalidProgramForExecution": "Attempt to load a program that does not exist",
    "AccountInUse": "Account in use",
}


def error_message(err: Any) -> str:
    """The text Solana's ``Display`` gives a transaction error (as in ``-32002`` messages)."""
    encoded = transaction_error(err)
    if isinstance(encoded, str):
        return _MESSAGES.get(encoded, encoded)
    if "InstructionError" in encoded:
        index, inner = encoded["InstructionError"]
        if isinstance(inner, dict) and "Custom" in inner:
            detail = f"custom program error: {inner['Custom']:#x}"
        else:
            detail = str(inner)
        return f"Error processing Instruction {index}: {detail}"
    if "InsufficientFundsForRent" in encoded:
        index = encoded["InsufficientFundsForRent"]["account_index"]
        return f"Transaction results in an account ({index}) with insufficient funds for rent"
    return str(encoded)
