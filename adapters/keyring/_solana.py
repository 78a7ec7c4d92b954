"""Solana account methods: ed25519 signatures by the keyring's Solana keys.

In MetaMask's form (``signMessage``, ``signTransaction``, ``signAndSendTransaction``, ``signIn``:
one params object, see MetaMask/accounts ``keyring-api/docs/sol-methods.md`` and the wallet-standard
features) and under the names WalletConnect uses (``solana_signMessage``, ``solana_signTransaction``,
``solana_signAndSendTransaction``, ``solana_signAllTransactions``). Messages and transactions travel
in base64 (WalletConnect's ``solana_signMessage``: base58), signatures in base58 as everywhere on
Solana. The operator's summary shows the message text, or each instruction's program and accounts
(with the lamports of a system transfer).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from solders.keypair import Keypair
from solders.message import to_bytes_versioned
from solders.system_program import ID as SYSTEM_PROGRAM
from solders.transaction import VersionedTransaction

from adapters._base58 import b58decode, b58encode
from adapters._ed25519 import derive_keypairs
from adapters.base import ChainReader, MethodDoc, ParamDoc, SigningRequest
from adapters.keyring._keys import KeyLoadError
from adapters.keyring._wallet import Prepared, account_of, payload_of
from schemas.errors import InvalidParams, Unauthorized

_SYSTEM_TRANSFER: Final = 2
#: A ``solana-keygen`` keypair file: the secret key's 32 bytes, then the public key's.
KEYPAIR_FILE_BYTES: Final = 64
MAX_TRANSACTIONS: Final = 32


class SolanaKeys:
    """The keyring's ed25519 keys, by base58 address (the mnemonic's, at m/44'/501'/i'/0')."""

    def __init__(self) -> None:
        self._keys: dict[str, Keypair] = {}

    def add_mnemonic(self, mnemonic: str, count: int) -> None:
        for keypair in derive_keypairs(mnemonic, count):
            self._keys.setdefault(str(keypair.pubkey()), keypair)

    def add_keypair_files(self, directory: Path) -> None:
        """The keypair files of ``directory`` (``solana-keygen``'s: a JSON array of the 64 bytes
        of secret and public key), by name; other files (EVM keystores, a README) are skipped."""
        for path in sorted(directory.iterdir()) if directory.is_dir() else ():
            try:
                document = json.loads(path.read_bytes()) if path.is_file() else None
            except (OSError, ValueError):
                continue
            if not (
                isinstance(document, list)
                and len(document) == KEYPAIR_FILE_BYTES
                and all(isinstance(b, int) and 0 <= b < 256 for b in document)
            ):
                continue
            try:
                keypair = Keypair.from_bytes(bytes(document))
            except ValueError:
                raise KeyLoadError(f"{path.name}: not a valid Solana keypair") from None
            self._keys.setdefault(str(keypair.pubkey()), keypair)

    @property
    def addresses(self) -> list[str]:
        return list(self._keys)

    def signer(self, address: Any, permitted: Sequence[str]) -> str:
        """``address`` if the caller may use it and a key is held, else 4100 (base58 is
        case-sensitive: compared exactly)."""
        if not isinstance(address, str) or address not in permitted or address not in self._keys:
            raise Unauthorized()
        return address

    def sign(self, address: str, message: bytes) -> bytes:
        return bytes(self._keys[address].sign_message(message))

    def sign_transaction(self, address: str, tx: VersionedTransaction) -> VersionedTransaction:
        """``tx`` with ``address``'s signature in its slot (other signatures kept)."""
        message = tx.message
        keys = list(message.account_keys)[: message.header.num_required_signatures]
        signers = [str(key) for key in keys]
        if address not in signers:
            raise InvalidParams(f"{address} is not a signer of the transaction")
        signatures = list(tx.signatures)
        signatures[signers.index(address)] = self._keys[address].sign_message(
            to_bytes_versioned(message)
        )
        return VersionedTransaction.populate(message, signatures)


@dataclass(frozen=True, slots=True)
class SolanaHandler:
    prepare: Callable[[SolanaKeys, str, Any, Sequence[str]], Prepared]
    execute: Callable[[SolanaKeys, SigningRequest, ChainReader], Awaitable[Any]]


# -- params -----------------------------------------------------------------------------------------


def _object(params: Any) -> Mapping[str, Any]:
    """The params object (also accepted as the one element of an array)."""
    if isinstance(params, list) and len(params) == 1:
        params = params[0]
    if not isinstance(params, dict):
        raise InvalidParams("want one params object")
    return params


def _account_address(params: Mapping[str, Any]) -> Any:
    account = params.get("account")
    if not isinstance(account, dict) or not isinstance(account.get("address"), str):
        raise InvalidParams("account: want {address: <base58 address>}")
    return account["address"]


def _base64(value: Any, name: str) -> bytes:
    if not isinstance(value, str):
        raise InvalidParams(f"{name}: want a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidParams(f"{name}: not base64") from None


def _transaction(value: Any, name: str = "transaction") -> VersionedTransaction:
    raw = _base64(value, name)
    try:
        tx = VersionedTransaction.from_bytes(raw)
        tx.sanitize()
    except Exception:  # any malformed transaction is the caller's
        raise InvalidParams(f"{name}: not a serialized Solana transaction") from None
    return tx


def _scope(params: Mapping[str, Any], chain: str) -> None:
    scope = params.get("scope", chain)
    if scope != chain:
        raise InvalidParams(f"scope: {scope!r} is not this request's chain {chain}")


def _transaction_intent(
    signer: str, tx: VersionedTransaction, body: Mapping[str, Any], options_key: str
) -> Prepared:
    """A transaction to sign by ``signer``, with the send options ``body[options_key]``."""
    options = body.get(options_key) or {}
    if not isinstance(options, dict):
        raise InvalidParams(f"{options_key}: want an object")
    return Prepared(signer, {"account": signer, **describe_transaction(tx)}, (tx, options))


# -- summaries --------------------------------------------------------------------------------------


def readable_message(message: bytes) -> dict[str, Any]:
    try:
        return {"message": message.decode("utf-8"), "encoding": "utf-8"}
    except UnicodeDecodeError:
        return {"message": base64.b64encode(message).decode(), "encoding": "base64"}


def describe_transaction(tx: VersionedTransaction) -> dict[str, Any]:
    """Fee payer and instructions (program, accounts; lamports of system transfers)."""
    message = tx.message
    keys = [str(key) for key in message.account_keys]
    instructions = []
    for ix in message.instructions:
        program = keys[ix.program_id_index] if ix.program_id_index < len(keys) else None
        accounts = [keys[i] if i < len(keys) else f"#{i}" for i in ix.accounts]
        entry: dict[str, Any] = {"program": program, "accounts": accounts}
        data = bytes(ix.data)
        if (
            program == str(SYSTEM_PROGRAM)
            and len(data) == 12
            and int.from_bytes(data[:4], "little") == _SYSTEM_TRANSFER
        ):
            lamports = int.from_bytes(data[4:12], "little")
            entry["transfer"] = {
                "from": accounts[0] if accounts else None,
                "to": accounts[1] if len(accounts) > 1 else None,
                "lamports": str(lamports),
                "sol": f"{lamports / 1_000_000_000:.9f}".rstrip("0").rstrip("."),
            }
        instructions.append(entry)
    return {"feePayer": keys[0] if keys else None, "instructions": instructions}


# -- MetaMask's methods -----------------------------------------------------------------------------


def _prepare_sign_message(
    keys: SolanaKeys, chain: str, params: Any, permitted: Sequence[str]
) -> Prepared:
    body = _object(params)
    signer = keys.signer(_account_address(body), permitted)
    message = _base64(body.get("message"), "message")
    return Prepared(signer, {"account": signer, **readable_message(message)}, message)


# The signers below do not checkpoint: they sign in memory, after the approval their caller awaited.
async def _sign_message(keys: SolanaKeys, request: SigningRequest, read: ChainReader) -> Any:
    message = payload_of(request, bytes)
    signature = keys.sign(account_of(request), message)
    return {
        "signature": b58encode(signature),
        "signedMessage": base64.b64encode(message).decode(),
        "signatureType": "ed25519",
    }


def _prepare_sign_transaction(
    keys: SolanaKeys, chain: str, params: Any, permitted: Sequence[str]
) -> Prepared:
    body = _object(params)
    _scope(body, chain)
    signer = keys.signer(_account_address(body), permitted)
    return _transaction_intent(signer, _transaction(body.get("transaction")), body, "options")


async def _sign_transaction(keys: SolanaKeys, request: SigningRequest, read: ChainReader) -> Any:
    tx, _options = payload_of(request, tuple)
    signed = keys.sign_transaction(account_of(request), tx)
    return {"signedTransaction": base64.b64encode(bytes(signed)).decode()}


async def _send(read: ChainReader, signed: VersionedTransaction, options: Mapping[str, Any]) -> str:
    config: dict[str, Any] = {"encoding": "base64"}
    skip = options.get("skipPreflight")
    if skip is not None:
        config["skipPreflight"] = skip in (True, "true")
    for key in ("preflightCommitment", "maxRetries", "minContextSlot"):
        if options.get(key) is not None:
            config[key] = options[key]
    signature = await read("sendTransaction", [base64.b64encode(bytes(signed)).decode(), config])
    return str(signature)


async def _sign_and_send(keys: SolanaKeys, request: SigningRequest, read: ChainReader) -> Any:
    tx, options = payload_of(request, tuple)
    signed = keys.sign_transaction(account_of(request), tx)
    return {"signature": await _send(read, signed, options)}


_SIGN_IN_FIELDS: Final = (
    ("uri", "URI"),
    ("version", "Version"),
    ("chainId", "Chain ID"),
    ("nonce", "Nonce"),
    ("issuedAt", "Issued At"),
    ("expirationTime", "Expiration Time"),
    ("notBefore", "Not Before"),
    ("requestId", "Request ID"),
)


def sign_in_message(domain: str, address: str, fields: Mapping[str, Any]) -> str:
    """The Sign In With Solana message (the EIP-4361 text, "your Solana account")."""
    lines = [f"{domain} wants you to sign in with your Solana account:", address]
    if fields.get("statement"):
        lines += ["", str(fields["statement"])]
    advanced = [f"{label}: {fields[key]}" for key, label in _SIGN_IN_FIELDS if fields.get(key)]
    resources = fields.get("resources") or []
    if resources:
        advanced += ["Resources:", *(f"- {resource}" for resource in resources)]
    if advanced:
        lines += ["", *advanced]
    return "\n".join(lines)


def _prepare_sign_in(
    keys: SolanaKeys, chain: str, params: Any, permitted: Sequence[str]
) -> Prepared:
    body = _object(params)
    for key, value in body.items():
        if key == "resources":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise InvalidParams("resources: want an array of strings")
        elif not isinstance(value, str):
            raise InvalidParams(f"{key}: want a string")
    domain = body.get("domain")
    if not domain:
        raise InvalidParams("domain: required (scopecast cannot tell which site asks)")
    held = [address for address in permitted if address in keys.addresses]
    address = body.get("address") or (held[0] if held else None)
    signer = keys.signer(address, permitted)
    text = sign_in_message(domain, signer, body)
    return Prepared(
        signer, {"account": signer, "message": text, "encoding": "utf-8"}, text.encode()
    )


async def _sign_in(keys: SolanaKeys, request: SigningRequest, read: ChainReader) -> Any:
    message = payload_of(request, bytes)
    signer = account_of(request)
    return {
        "account": {"address": signer},
        "signedMessage": base64.b64encode(message).decode(),
        "signature": b58encode(keys.sign(signer, message)),
        "signatureType": "ed25519",
    }


# -- WalletConnect's methods ------------------------------------------------------------------------


def _prepare_wc_sign_message(
    keys: SolanaKeys, chain: str, params: Any, permitted: Sequence[str]
) -> Prepared:
    body = _object(params)
    text = body.get("message")
    if not isinstance(text, str):
        raise InvalidParams("message: want a base58 string")
    try:
        message = b58decode(text)
    except ValueError:
        raise InvalidParams("message: not base58") from None
    signer = keys.signer(body.get("pubkey"), permitted)
    return Prepared(signer, {"account": signer, **readable_message(message)}, message)


async def _wc_sign_message(keys: SolanaKeys, request: SigningRequest, read: ChainReader) -> Any:
    return {"signature": b58encode(keys.sign(account_of(request), payload_of(request, bytes)))}


def _fee_payer(tx: VersionedTransaction, keys: SolanaKeys, permitted: Sequence[str]) -> str:
    signers = list(tx.message.account_keys)[: tx.message.header.num_required_signatures]
    for key in signers:
        if str(key) in permitted and str(key) in keys.addresses:
            return str(key)
    raise Unauthorized()


def _prepare_wc_transaction(
    keys: SolanaKeys, chain: str, params: Any, permitted: Sequence[str]
) -> Prepared:
    body = _object(params)
    tx = _transaction(body.get("transaction"))
    return _transaction_intent(_fee_payer(tx, keys, permitted), tx, body, "sendOptions")


async def _wc_sign_transaction(keys: SolanaKeys, request: SigningRequest, read: ChainReader) -> Any:
    tx, _options = payload_of(request, tuple)
    signed = keys.sign_transaction(account_of(request), tx)
    return {
        "signature": str(signed.signatures[0]),
        "transaction": base64.b64encode(bytes(signed)).decode(),
    }


async def _wc_sign_and_send(keys: SolanaKeys, request: SigningRequest, read: ChainReader) -> Any:
    tx, options = payload_of(request, tuple)
    signed = keys.sign_transaction(account_of(request), tx)
    return {"signature": await _send(read, signed, options)}


def _prepare_wc_all(
    keys: SolanaKeys, chain: str, params: Any, permitted: Sequence[str]
) -> Prepared:
    body = _object(params)
    encoded = body.get("transactions")
    if not isinstance(encoded, list) or not 1 <= len(encoded) <= MAX_TRANSACTIONS:
        raise InvalidParams(f"transactions: want 1 to {MAX_TRANSACTIONS} base64 transactions")
    txs = [_transaction(item, f"transactions[{i}]") for i, item in enumerate(encoded)]
    signers = [_fee_payer(tx, keys, permitted) for tx in txs]
    if len(set(signers)) != 1:
        raise InvalidParams("transactions: all must be paid by the same account")
    summary = {"account": signers[0], "transactions": [describe_transaction(tx) for tx in txs]}
    return Prepared(signers[0], summary, tuple(txs))


async def _wc_sign_all(keys: SolanaKeys, request: SigningRequest, read: ChainReader) -> Any:
    txs = payload_of(request, tuple)
    signer = account_of(request)
    return {
        "transactions": [
            base64.b64encode(bytes(keys.sign_transaction(signer, tx))).decode() for tx in txs
        ]
    }


HANDLERS: Final[Mapping[str, SolanaHandler]] = {
    "signMessage": SolanaHandler(_prepare_sign_message, _sign_message),
    "signTransaction": SolanaHandler(_prepare_sign_transaction, _sign_transaction),
    "signAndSendTransaction": SolanaHandler(_prepare_sign_transaction, _sign_and_send),
    "signIn": SolanaHandler(_prepare_sign_in, _sign_in),
    "solana_signMessage": SolanaHandler(_prepare_wc_sign_message, _wc_sign_message),
    "solana_signTransaction": SolanaHandler(_prepare_wc_transaction, _wc_sign_transaction),
    "solana_signAndSendTransaction": SolanaHandler(_prepare_wc_transaction, _wc_sign_and_send),
    "solana_signAllTransactions": SolanaHandler(_prepare_wc_all, _wc_sign_all),
}
METHODS: Final = frozenset(HANDLERS)


def _params(*fields: tuple[str, dict[str, Any], bool]) -> tuple[ParamDoc, ...]:
    return tuple(ParamDoc(name, schema, required) for name, schema, required in fields)


_STRING: Final = {"type": "string"}
_ACCOUNT: Final = {
    "type": "object",
    "properties": {"address": _STRING},
    "required": ["address"],
}
_OBJECT: Final = {"type": "object"}
_SIGN_ERRORS: Final = ((-32602, "Invalid params"), (4100, "Unauthorized"), (4001, "Rejected"))
_TRANSACTION_PARAMS: Final = _params(
    ("account", _ACCOUNT, True),
    ("transaction", _STRING, True),
    ("scope", _STRING, True),
    ("options", _OBJECT, False),
)


def _by_name(summary: str, params: tuple[ParamDoc, ...]) -> MethodDoc:
    return MethodDoc(summary, params, _OBJECT, _SIGN_ERRORS, by_name=True)


METHOD_DOCS: Final[Mapping[str, MethodDoc]] = {
    "signMessage": _by_name(
        "ed25519 signature of a base64 message",
        _params(("account", _ACCOUNT, True), ("message", _STRING, True)),
    ),
    "signTransaction": _by_name("Sign a base64 transaction", _TRANSACTION_PARAMS),
    "signAndSendTransaction": _by_name("Sign and send a base64 transaction", _TRANSACTION_PARAMS),
    "signIn": _by_name(
        "Sign In With Solana",
        _params(("domain", _STRING, True), ("address", _STRING, False), ("nonce", _STRING, False)),
    ),
    "solana_signMessage": _by_name(
        "ed25519 signature of a base58 message",
        _params(("message", _STRING, True), ("pubkey", _STRING, True)),
    ),
    "solana_signTransaction": _by_name(
        "Sign a base64 transaction as its fee payer", _params(("transaction", _STRING, True))
    ),
    "solana_signAndSendTransaction": _by_name(
        "Sign and send a base64 transaction as its fee payer",
        _params(("transaction", _STRING, True), ("sendOptions", _OBJECT, False)),
    ),
    "solana_signAllTransactions": _by_name(
        "Sign up to 32 base64 transactions of one fee payer",
        _params(("transactions", {"type": "array", "items": _STRING}, True)),
    ),
}
