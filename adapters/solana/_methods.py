"""Solana's JSON-RPC methods over a :class:`~._ledger.Ledger`, sans-io: each handler takes the
decoded params and ``now`` and returns the JSON value Solana answers (or raises its error).

Shapes follow the Solana RPC documentation: ``{context: {slot, apiVersion}, value}`` where Solana
wraps its answer, base58 (the default) / base64 / ``jsonParsed`` account data, and transactions in
``json`` / ``base64`` / ``base58``.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from typing import Any, Final

from solders.message import from_bytes_versioned
from solders.pubkey import Pubkey
from solders.transaction import VersionedTransaction

from adapters._base58 import b58encode

from . import _wire as wire
from ._cluster_methods import CLUSTER_HANDLERS, ClusterMethods
from ._errors import (
    BlockCleanedUp,
    BlockNotAvailable,
    MinContextSlotNotReached,
    SignatureVerificationFailure,
    UnsupportedTransactionVersion,
    invalid_param,
    invalid_params,
    preflight_failure,
)
from ._events import TransactionRecord
from ._ledger import LAMPORTS_PER_SIGNATURE, SLOTS_PER_EPOCH, Ledger, Simulation, SlotRecord
from ._token_methods import TOKEN_HANDLERS, TokenMethods
from ._transaction_view import (
    block_json,
    block_shape,
    memo,
    transaction_encoding,
    transaction_json,
    version,
)

#: The Solana RPC API this node speaks (``getVersion``, ``context.apiVersion``).
SOLANA_CORE_VERSION: Final = "2.2.16"
FEATURE_SET: Final = 3_294_202_862
MAX_MULTIPLE_ACCOUNTS: Final = 100
MAX_SIGNATURE_STATUSES: Final = 256
MAX_SIGNATURES_FOR_ADDRESS: Final = 1000
MAX_BLOCKS_RANGE: Final = 500_000
MAX_AIRDROP_LAMPORTS: Final = 1_000_000 * 1_000_000_000
COMMITMENTS: Final = frozenset({"processed", "confirmed", "finalized"})

Handler = Callable[[list[Any], float], Any]

#: RPC methods answering one number of the ledger -> its :class:`Ledger` attribute.
READINGS: Final[dict[str, str]] = {
    "getSlot": "slot",
    "getBlockHeight": "block_height",
    "getTransactionCount": "transaction_count",
}
#: RPC method name -> :class:`SolanaMethods` handler attribute.
HANDLERS: Final[dict[str, str]] = {
    "getVersion": "get_version",
    "getHealth": "get_health",
    "getGenesisHash": "get_genesis_hash",
    "getEpochInfo": "get_epoch_info",
    "getLatestBlockhash": "get_latest_blockhash",
    "isBlockhashValid": "is_blockhash_valid",
    "getBalance": "get_balance",
    "getAccountInfo": "get_account_info",
    "getMultipleAccounts": "get_multiple_accounts",
    "getProgramAccounts": "get_program_accounts",
    "getMinimumBalanceForRentExemption": "get_minimum_balance_for_rent_exemption",
    "getFeeForMessage": "get_fee_for_message",
    "getSignatureStatuses": "get_signature_statuses",
    "getSignaturesForAddress": "get_signatures_for_address",
    "getTransaction": "get_transaction",
    "getBlock": "get_block",
    "getBlockTime": "get_block_time",
    "getBlocks": "get_blocks",
    "getFirstAvailableBlock": "get_first_available_block",
    "sendTransaction": "send_transaction",
    "simulateTransaction": "simulate_transaction",
    "requestAirdrop": "request_airdrop",
    "scopecast_advanceSlots": "advance_slots",
}


class SolanaMethods:
    """The handlers, by method name (:meth:`table`). ``automine``: each accepted transaction
    lands in a new slot."""

    def __init__(
        self,
        ledger: Ledger,
        *,
        automine: bool,
        sent: Callable[[str, int, int], None] | None = None,
    ) -> None:
        self.ledger = ledger
        self.automine = automine
        #: Told ``(signature, last valid block height, block height)`` of every transaction
        #: ``sendTransaction`` accepts (:class:`._signature_life.SentTransactions`).
        self.sent = sent
        self.tokens = TokenMethods(ledger, self._config, self._wrap)
        self.cluster = ClusterMethods(
            ledger, self._config, self._wrap, SOLANA_CORE_VERSION, FEATURE_SET
        )
        self._decimals_of = self.tokens.decimals_of

    METHODS: Final = (
        frozenset(HANDLERS)
        | frozenset(READINGS)
        | frozenset(TOKEN_HANDLERS)
        | frozenset(CLUSTER_HANDLERS)
    )

    def table(self) -> dict[str, Handler]:
        table: dict[str, Handler] = {
            name: getattr(self, attribute) for name, attribute in HANDLERS.items()
        }
        for name, attribute in TOKEN_HANDLERS.items():
            table[name] = getattr(self.tokens, attribute)
        for name, attribute in CLUSTER_HANDLERS.items():
            table[name] = getattr(self.cluster, attribute)
        for name, attribute in READINGS.items():
            table[name] = self._reading(attribute)
        return table

    def _reading(self, attribute: str) -> Handler:
        """A method answering one number of the ledger, with an optional config."""

        def read(params: list[Any], now: float) -> Any:
            self._commitment_only(params)
            return getattr(self.ledger, attribute)

        return read

    # -- shared -------------------------------------------------------------------------------

    def _context(self) -> dict[str, Any]:
        return {"slot": self.ledger.slot, "apiVersion": SOLANA_CORE_VERSION}

    def _wrap(self, value: Any) -> dict[str, Any]:
        return {"context": self._context(), "value": value}

    def _config(self, value: Any) -> Mapping[str, Any]:
        """A config object, its ``commitment`` and ``minContextSlot`` checked."""
        options = wire.config(value)
        commitment = options.get("commitment")
        if commitment is not None and (
            not isinstance(commitment, str) or commitment not in COMMITMENTS
        ):
            raise invalid_params(
                f"unknown variant `{commitment}`, expected one of `processed`, `confirmed`, "
                "`finalized`"
            )
        floor = wire.optional_u64(options, "minContextSlot")
        if floor is not None and floor > self.ledger.slot:
            raise MinContextSlotNotReached(self.ledger.slot)
        return options

    def _commitment_only(self, params: Any, total: int = 1) -> None:
        args = wire.positional(params, 0, total)
        self._config(args[-1])

    # -- node ---------------------------------------------------------------------------------

    def get_version(self, params: list[Any], now: float) -> Any:
        wire.positional(params, 0, 0)
        return {"solana-core": SOLANA_CORE_VERSION, "feature-set": FEATURE_SET}

    def get_health(self, params: list[Any], now: float) -> Any:
        wire.positional(params, 0, 0)
        return "ok"

    def get_genesis_hash(self, params: list[Any], now: float) -> Any:
        wire.positional(params, 0, 0)
        return self.ledger.genesis

    def get_epoch_info(self, params: list[Any], now: float) -> Any:
        self._commitment_only(params)
        slot = self.ledger.slot
        return {
            "absoluteSlot": slot,
            "blockHeight": self.ledger.block_height,
            "epoch": slot // SLOTS_PER_EPOCH,
            "slotIndex": slot % SLOTS_PER_EPOCH,
            "slotsInEpoch": SLOTS_PER_EPOCH,
            "transactionCount": self.ledger.transaction_count,
        }

    def get_latest_blockhash(self, params: list[Any], now: float) -> Any:
        self._commitment_only(params)
        return self._wrap(
            {
                "blockhash": b58encode(self.ledger.blockhash),
                "lastValidBlockHeight": self.ledger.last_valid_block_height(),
            }
        )

    def is_blockhash_valid(self, params: list[Any], now: float) -> Any:
        value, options = wire.positional(params, 1, 2)
        wanted = wire.blockhash(value)
        self._config(options)
        return self._wrap(self.ledger.blockhash_valid(bytes(wanted)))

    def get_minimum_balance_for_rent_exemption(self, params: list[Any], now: float) -> Any:
        size, options = wire.positional(params, 1, 2)
        self._config(options)
        return self.ledger.svm.minimum_balance_for_rent_exemption(wire.u64(size, "data length"))

    def get_fee_for_message(self, params: list[Any], now: float) -> Any:
        value, options = wire.positional(params, 1, 2)
        self._config(options)
        if not isinstance(value, str):
            raise invalid_params("invalid type, expected a base64 encoded message")
        try:
            message = from_bytes_versioned(base64.b64decode(value, validate=True))
        except Exception:
            raise invalid_param("invalid message") from None
        if not self.ledger.blockhash_valid(bytes(message.recent_blockhash)):
            return self._wrap(None)
        fee = LAMPORTS_PER_SIGNATURE * message.header.num_required_signatures
        return self._wrap(fee)

    # -- accounts -----------------------------------------------------------------------------

    def get_balance(self, params: list[Any], now: float) -> Any:
        address, options = wire.positional(params, 1, 2)
        key = wire.pubkey(address)
        self._config(options)
        return self._wrap(self.ledger.balance(key))

    def _account(self, key: Pubkey, encoding: str, window: tuple[int, int] | None) -> Any:
        account = self.ledger.account(key)
        if account is None:
            return None
        return wire.encode_account(account, encoding, window, self._decimals_of)

    def get_account_info(self, params: list[Any], now: float) -> Any:
        address, value = wire.positional(params, 1, 2)
        key = wire.pubkey(address)
        options = self._config(value)
        encoding = wire.account_encoding(options, "binary")
        return self._wrap(self._account(key, encoding, wire.data_slice(options)))

    def get_multiple_accounts(self, params: list[Any], now: float) -> Any:
        addresses, value = wire.positional(params, 1, 2)
        keys = [wire.pubkey(a) for a in wire.bounded_list(addresses, MAX_MULTIPLE_ACCOUNTS)]
        options = self._config(value)
        encoding = wire.account_encoding(options, "base64")
        window = wire.data_slice(options)
        return self._wrap([self._account(key, encoding, window) for key in keys])

    def get_program_accounts(self, params: list[Any], now: float) -> Any:
        program, value = wire.positional(params, 1, 2)
        key = wire.pubkey(program)
        options = self._config(value)
        encoding = wire.account_encoding(options, "binary")
        window = wire.data_slice(options)
        filters = wire.program_filters(options.get("filters"))
        found = [
            {
                "pubkey": str(address),
                "account": wire.encode_account(account, encoding, window, self._decimals_of),
            }
            for address, account in self.ledger.program_accounts(key)
            if wire.matches_filters(account, filters)
        ]
        return self._wrap(found) if options.get("withContext") else found

    # -- transactions -------------------------------------------------------------------------

    def get_signature_statuses(self, params: list[Any], now: float) -> Any:
        signatures, value = wire.positional(params, 1, 2)
        listed = wire.bounded_list(signatures, MAX_SIGNATURE_STATUSES)
        wanted = [str(wire.signature(s)) for s in listed]
        wire.config(value)
        return self._wrap([self._status(self.ledger.transactions.get(s)) for s in wanted])

    @staticmethod
    def _status(record: TransactionRecord | None) -> Any:
        if record is None:
            return None
        err = wire.transaction_error(record.err)
        return {
            "slot": record.slot,
            "confirmations": None,  # rooted: every slot is final at once
            "err": err,
            "status": {"Ok": None} if err is None else {"Err": err},
            "confirmationStatus": "finalized",
        }

    def get_signatures_for_address(self, params: list[Any], now: float) -> Any:
        address, value = wire.positional(params, 1, 2)
        key = wire.pubkey(address)
        options = self._config(value)
        limit = wire.optional_u64(options, "limit") or MAX_SIGNATURES_FOR_ADDRESS
        if limit > MAX_SIGNATURES_FOR_ADDRESS:
            raise invalid_params(f"Invalid limit; max {MAX_SIGNATURES_FOR_ADDRESS}")
        before = options.get("before")
        until = options.get("until")
        newest_first = list(reversed(self.ledger.signatures_for(str(key))))
        if before is not None:
            marker = str(wire.signature(before))
            newest_first = (
                newest_first[newest_first.index(marker) + 1 :] if marker in newest_first else []
            )
        if until is not None:
            marker = str(wire.signature(until))
            if marker in newest_first:
                newest_first = newest_first[: newest_first.index(marker)]
        found = []
        for signature in newest_first[:limit]:
            record = self.ledger.transactions[signature]
            found.append(
                {
                    "signature": signature,
                    "slot": record.slot,
                    "err": wire.transaction_error(record.err),
                    "memo": memo(record.tx),
                    "blockTime": record.block_time,
                    "confirmationStatus": "finalized",
                }
            )
        return found

    def get_transaction(self, params: list[Any], now: float) -> Any:
        value, raw_options = wire.positional(params, 1, 2)
        wanted = str(wire.signature(value))
        if isinstance(raw_options, str):  # the deprecated form: an encoding alone
            raw_options = {"encoding": raw_options}
        options = self._config(raw_options)
        encoding = transaction_encoding(options)
        if options.get("commitment") == "processed":
            raise invalid_params("processed commitment is not supported")
        record = self.ledger.transactions.get(wanted)
        if record is None:
            return None
        max_version = wire.optional_u64(options, "maxSupportedTransactionVersion")
        landed = version(record.tx)
        if landed != "legacy" and (max_version is None or landed > max_version):
            raise UnsupportedTransactionVersion(landed)
        return transaction_json(record, encoding, max_version is not None)

    # -- blocks (one a slot: no slot is ever skipped) ---------------------------------------------

    def _block(self, slot: int) -> SlotRecord:
        record = self.ledger.block(slot)
        if record is not None:
            return record
        if slot > self.ledger.slot:
            raise BlockNotAvailable(slot)
        raise BlockCleanedUp(slot, self.ledger.first_available)

    def get_block(self, params: list[Any], now: float) -> Any:
        value, raw_options = wire.positional(params, 1, 2)
        block = self._block(wire.u64(value, "slot"))
        options = self._config(raw_options)
        shape = block_shape(options)
        previous = self.ledger.block(block.parent) if block.slot else block
        records = [
            self.ledger.transactions[s] for s in block.signatures if s in self.ledger.transactions
        ]
        return block_json(
            block.slot,
            block.parent,
            block.blockhash,
            previous.blockhash if previous else block.blockhash,
            block.block_time,
            records,
            shape,
        )

    def get_block_time(self, params: list[Any], now: float) -> Any:
        (value,) = wire.positional(params, 1, 1)
        return self._block(wire.u64(value, "slot")).block_time

    def get_blocks(self, params: list[Any], now: float) -> Any:
        start_value, end_value, raw_options = wire.positional(params, 1, 3)
        if isinstance(end_value, dict):  # [start, config]
            end_value, raw_options = None, end_value
        self._config(raw_options)
        start = wire.u64(start_value, "start slot")
        end = self.ledger.slot if end_value is None else wire.u64(end_value, "end slot")
        if end - start > MAX_BLOCKS_RANGE:
            raise invalid_params(f"Slot range too large; max {MAX_BLOCKS_RANGE}")
        first = max(start, self.ledger.first_available)
        return list(range(first, min(end, self.ledger.slot) + 1))

    def get_first_available_block(self, params: list[Any], now: float) -> Any:
        wire.positional(params, 0, 0)
        return self.ledger.first_available

    def send_transaction(self, params: list[Any], now: float) -> Any:
        value, raw_options = wire.positional(params, 1, 2)
        options = self._config(raw_options)
        tx = wire.transaction(value, options)
        if not all(tx.verify_with_results()):
            raise SignatureVerificationFailure()
        signature = str(tx.signatures[0])
        last_valid = self.ledger.last_valid_height_of(bytes(tx.message.recent_blockhash))
        if not options.get("skipPreflight"):
            simulation = self.ledger.simulate(tx)
            if simulation.err is not None:
                raise preflight_failure(
                    wire.error_message(simulation.err), _simulation_json(simulation, None)
                )
        elif not self.ledger.blockhash_valid(bytes(tx.message.recent_blockhash)) or (
            signature in self.ledger.transactions
        ):
            self._sent(signature, last_valid)
            return signature  # as Solana: accepted, then dropped by the leader
        self._sent(signature, last_valid)
        self._land(tx, now)
        return signature

    def _sent(self, signature: str, last_valid: int) -> None:
        if self.sent is not None:
            self.sent(signature, last_valid, self.ledger.block_height)

    def _land(self, tx: VersionedTransaction, now: float) -> TransactionRecord:
        if self.automine:
            self.ledger.advance(now)
        return self.ledger.execute(tx)

    def simulate_transaction(self, params: list[Any], now: float) -> Any:
        value, raw_options = wire.positional(params, 1, 2)
        options = self._config(raw_options)
        tx = wire.transaction(value, options)
        replace = bool(options.get("replaceRecentBlockhash"))
        if replace and options.get("sigVerify"):
            raise invalid_params("sigVerify may not be used with replaceRecentBlockhash")
        if options.get("sigVerify") and not all(tx.verify_with_results()):
            raise SignatureVerificationFailure()
        replacement = None
        if replace:
            tx = _with_blockhash(tx, self.ledger.blockhash)
            replacement = {
                "blockhash": b58encode(self.ledger.blockhash),
                "lastValidBlockHeight": self.ledger.last_valid_block_height(),
            }
        wanted = options.get("accounts")
        addresses: list[Pubkey] | None = None
        encoding = "base64"
        if wanted is not None:
            if not isinstance(wanted, dict) or not isinstance(wanted.get("addresses"), list):
                raise invalid_params("accounts must be {addresses: [...], encoding?}")
            addresses = [wire.pubkey(a) for a in wanted["addresses"]]
            encoding = wire.account_encoding(wanted, "base64")
            if encoding in ("binary", "base58"):
                raise invalid_params("base58 encoding not supported for simulation accounts")
        simulation = self.ledger.simulate(tx, addresses or ())
        result = _simulation_json(simulation, replacement)
        if addresses is not None:
            post = dict(simulation.accounts)
            after = [post.get(a) or self.ledger.account(a) for a in addresses]
            result["accounts"] = [
                None
                if account is None
                else wire.encode_account(account, encoding, None, self._decimals_of)
                for account in after
            ]
        return self._wrap(result)

    def request_airdrop(self, params: list[Any], now: float) -> Any:
        address, lamports, options = wire.positional(params, 2, 3)
        key = wire.pubkey(address)
        amount = wire.u64(lamports, "lamports")
        self._config(options)
        if not 0 < amount <= MAX_AIRDROP_LAMPORTS:
            raise invalid_params(f"airdrop between 1 and {MAX_AIRDROP_LAMPORTS} lamports")
        return self._land(self.ledger.airdrop(key, amount), now).signature

    # -- dev ----------------------------------------------------------------------------------

    def advance_slots(self, params: list[Any], now: float) -> Any:
        """``scopecast_advanceSlots [count?]``: produce ``count`` (default 1, at most 10,000)
        empty slots now; answers the new current slot."""
        (count,) = wire.positional(params, 0, 1)
        slots = 1 if count is None else wire.u64(count, "count")
        if not 1 <= slots <= 10_000:
            raise invalid_params("advance between 1 and 10000 slots")
        for _ in range(slots):
            self.ledger.advance(now)
        return self.ledger.slot


def _with_blockhash(tx: VersionedTransaction, blockhash: bytes) -> VersionedTransaction:
    """``tx`` with its recent blockhash replaced (signatures kept: simulation does not check)."""
    raw = bytearray(bytes(tx))
    message = bytes(tx.message)
    start = raw.index(message)
    offset = start + message.index(bytes(tx.message.recent_blockhash))
    raw[offset : offset + 32] = blockhash
    return VersionedTransaction.from_bytes(bytes(raw))


def _simulation_json(simulation: Simulation, replacement: Any) -> dict[str, Any]:
    return {
        "err": wire.transaction_error(simulation.err),
        "logs": list(simulation.logs),
        "accounts": None,
        "unitsConsumed": simulation.units,
        "returnData": None,
        "innerInstructions": None,
        "replacementBlockhash": replacement,
        "fee": simulation.fee if simulation.err is None else None,
        "loadedAccountsDataSize": 0,
    }
