"""The read methods of the dev chain: blocks, transactions, receipts, logs, state, calls and fees.

Lookups of existing blocks are dict reads returning pre-encoded JSON (``msgspec.Raw``). Work that can
take long (a large log scan, ``eth_call``, ``eth_estimateGas``) runs in a worker thread on data that
does not change under it.
"""

from __future__ import annotations

import platform
from collections.abc import Awaitable, Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Final

import msgspec
import trio
from eth.exceptions import (
    InvalidInstruction,
    InvalidJumpDestination,
    OutOfGas,
    Revert,
    StackDepthLimit,
    WriteProtection,
)
from eth_abi.abi import decode as abi_decode
from eth_typing import Address
from eth_utils.exceptions import ValidationError

from adapters.evm.log_filter import LogCriteria, decode_log_filter
from schemas import eth as schema
from schemas.errors import InvalidParams, LimitExceeded, ServerError, WireError, invalid_argument

from .chain import CallRequest, GasEstimateFailed, LocalChain, NotCanonical
from .formatting import blob_base_fee, data, format_transaction, quantity
from .log_index import MAX_SECONDS, BlockLogs, QueryTimeout, TooManyResults, scan
from .params import argument, optional_argument, positional
from .records import BlockRecord, json_array
from .txpool import TxPool

Handler = Callable[[msgspec.Raw], Awaitable[Any]]

INLINE_SCAN_LOGS: Final = 2_000  # larger scans go to a worker thread
PRIORITY_FEE: Final = 10**9
MAX_FEE_HISTORY: Final = 1024
REVERT_SELECTOR: Final = bytes.fromhex("08c379a0")


def _client_version() -> str:
    try:
        ours = version("scopecast")
    except PackageNotFoundError:  # pragma: no cover - running from a checkout
        ours = "dev"
    return (
        f"scopecast-devchain/v{ours}/py-evm-{version('py-evm')}/python{platform.python_version()}"
    )


CLIENT_VERSION: Final = _client_version()


def vm_error(computation: Any) -> ServerError | WireError:
    """geth's error for a failed call: code 3 with the revert data, or -32000 with the reason."""
    error = computation.error
    if isinstance(error, Revert):
        output: bytes = computation.output
        if not output:
            return ServerError("execution reverted")
        message = "execution reverted"
        if output[:4] == REVERT_SELECTOR:
            try:
                (reason,) = abi_decode(["string"], output[4:])
                message = f"execution reverted: {reason}"
            except Exception:  # a malformed reason is just not shown
                pass
        return WireError(3, message, data=data(output))
    texts = {
        OutOfGas: "out of gas",
        InvalidJumpDestination: "invalid jump destination",
        StackDepthLimit: "max call depth exceeded",
        WriteProtection: "write protection",
    }
    for kind, text in texts.items():
        if isinstance(error, kind):
            return ServerError(text)
    if isinstance(error, InvalidInstruction):
        return ServerError(f"invalid opcode: {error}")
    return ServerError(str(error) or type(error).__name__)


def _decode_call(value: Any) -> CallRequest:
    """geth's ``TransactionArgs`` (the fields a call needs)."""
    if not isinstance(value, dict):
        raise schema.ArgumentError(
            f"json: cannot unmarshal {schema.json_kind(value)} into Go value of type "
            "ethapi.TransactionArgs"
        )
    fields = {key.lower(): item for key, item in value.items()}
    payload = fields.get("input")
    if payload is None:
        payload = fields.get("data")
    elif fields.get("data") is not None and fields["data"] != payload:
        raise schema.ArgumentError(
            'both "data" and "input" are set and not equal. Please use "input" to pass '
            "transaction call data"
        )
    request: dict[str, Any] = {}
    if fields.get("from") is not None:
        request["sender"] = schema.decode_address(fields["from"])
    if fields.get("to") is not None:
        request["to"] = schema.decode_address(fields["to"])
    if fields.get("gas") is not None:
        request["gas"] = schema.decode_quantity(fields["gas"], schema.UINT64_TYPE)
    if fields.get("gasprice") is not None:
        request["gas_price"] = schema.decode_quantity(fields["gasprice"])
    if fields.get("value") is not None:
        request["value"] = schema.decode_quantity(fields["value"])
    if payload is not None:
        request["data"] = schema.decode_data(payload)
    return CallRequest(**request)


def _scan_within_limits(blocks: list[BlockLogs], matcher: LogCriteria) -> list[bytes]:
    """The logs of ``blocks`` that ``matcher`` selects, within SPEC §8's bounds (10,000 results,
    ``MAX_SECONDS`` of scanning): past either, -32005 :class:`LimitExceeded` with geth's text.

    Runs inline or in a worker thread (the exception crosses back to the event loop as is).
    """
    try:
        return scan(blocks, matcher, timeout=MAX_SECONDS)
    except TooManyResults:
        raise LimitExceeded("query returned more than 10000 results") from None
    except QueryTimeout:
        raise LimitExceeded("query timeout exceeded") from None


READ_METHODS: Final[dict[str, str]] = {
    "web3_clientVersion": "client_version",
    "net_version": "net_version",
    "net_listening": "net_listening",
    "eth_chainId": "chain_id",
    "eth_syncing": "syncing",
    "eth_accounts": "accounts",
    "eth_blockNumber": "block_number",
    "eth_getBlockByHash": "block_by_hash",
    "eth_getBlockByNumber": "block_by_number",
    "eth_getBlockTransactionCountByHash": "tx_count_by_hash",
    "eth_getBlockTransactionCountByNumber": "tx_count_by_number",
    "eth_getUncleByBlockHashAndIndex": "uncle_by_hash",
    "eth_getUncleByBlockNumberAndIndex": "uncle_by_number",
    "eth_getUncleCountByBlockHash": "uncle_count_by_hash",
    "eth_getUncleCountByBlockNumber": "uncle_count_by_number",
    "eth_getTransactionByHash": "transaction_by_hash",
    "eth_getTransactionByBlockHashAndIndex": "transaction_by_hash_and_index",
    "eth_getTransactionByBlockNumberAndIndex": "transaction_by_number_and_index",
    "eth_getTransactionReceipt": "transaction_receipt",
    "eth_getBlockReceipts": "block_receipts",
    "eth_getLogs": "get_logs",
    "eth_getBalance": "balance",
    "eth_getCode": "code",
    "eth_getTransactionCount": "transaction_count",
    "eth_getStorageAt": "storage_at",
    "eth_call": "call",
    "eth_estimateGas": "estimate_gas",
    "eth_gasPrice": "gas_price",
    "eth_maxPriorityFeePerGas": "max_priority_fee",
    "eth_blobBaseFee": "blob_base_fee",
    "eth_feeHistory": "fee_history",
}
"""RPC method name -> :class:`ReadMethods` handler attribute."""


_block_object = msgspec.json.Decoder(dict[str, Any])


def pending_json(record: BlockRecord, full: bool) -> bytes:
    """The pending block as geth shows it: built like the next block, but with no ``hash``,
    ``nonce`` or ``miner`` (and its transactions in no block hash)."""
    block = _block_object.decode(record.json(full))
    block.update(hash=None, nonce=None, miner=None)
    if full:
        for tx in block["transactions"]:
            tx["blockHash"] = None
    return msgspec.json.encode(block)


class ReadMethods:
    """Handlers of the read-only node methods over one :class:`LocalChain`.

    Most never checkpoint: they read the chain in memory, in a call that has its own checkpoint
    (a WebSocket call's task, an HTTP request's read), and are async for the handler type."""

    def __init__(
        self,
        chain: LocalChain,
        pool: TxPool,
        *,
        pending_block: Callable[[], Awaitable[BlockRecord]] | None = None,
    ) -> None:
        self.chain = chain
        self.pool = pool
        self._pending_block = pending_block

    def table(self) -> dict[str, Handler]:
        """The handlers by RPC method name."""
        handlers: dict[str, Handler] = {
            name: getattr(self, attribute) for name, attribute in READ_METHODS.items()
        }
        return handlers

    # ----------------------------------------------------------------------------------------------
    # Chain identity

    async def client_version(self, raw: msgspec.Raw) -> str:
        positional(raw, 0)
        return CLIENT_VERSION

    async def net_version(self, raw: msgspec.Raw) -> str:
        positional(raw, 0)
        return str(self.chain.chain_id)

    async def net_listening(self, raw: msgspec.Raw) -> bool:
        positional(raw, 0)
        return True

    async def chain_id(self, raw: msgspec.Raw) -> str:
        positional(raw, 0)
        return quantity(self.chain.chain_id)

    async def syncing(self, raw: msgspec.Raw) -> bool:
        positional(raw, 0)
        return False

    async def accounts(self, raw: msgspec.Raw) -> list[str]:
        positional(raw, 0)
        return []  # the node holds no keys; the wallet (keyring adapter) does

    async def block_number(self, raw: msgspec.Raw) -> str:
        positional(raw, 0)
        return quantity(self.chain.head.number)

    # ----------------------------------------------------------------------------------------------
    # Blocks

    def _block_param(self, params: list[Any], index: int) -> BlockRecord | None:
        return self.chain.resolve(argument(params, index, schema.decode_block_number))

    def _hash_param(self, params: list[Any], index: int) -> str:
        return data(argument(params, index, schema.decode_hash))

    def _state_block(self, params: list[Any], index: int) -> BlockRecord:
        """The block a ``BlockNumberOrHash`` param names, for state reads (geth errors if none)."""
        ref = argument(params, index, schema.decode_block_ref)
        try:
            record = self.chain.resolve(ref)
        except NotCanonical as exc:
            raise ServerError(str(exc)) from None
        if record is None:
            raise ServerError("header not found")
        return record

    @staticmethod
    def _block_json(record: BlockRecord | None, full: bool) -> msgspec.Raw | None:
        if record is None:
            return None
        return msgspec.Raw(record.json(full))

    async def block_by_hash(self, raw: msgspec.Raw) -> msgspec.Raw | None:
        params = positional(raw, 2)
        record = self.chain.by_hash(self._hash_param(params, 0))
        return self._block_json(record, argument(params, 1, schema.decode_bool))

    async def block_by_number(self, raw: msgspec.Raw) -> msgspec.Raw | None:
        params = positional(raw, 2)
        ref = argument(params, 0, schema.decode_block_number)
        full = argument(params, 1, schema.decode_bool)
        if ref == "pending" and self._pending_block is not None:
            return msgspec.Raw(pending_json(await self._pending_block(), full))
        return self._block_json(self.chain.resolve(ref), full)

    async def tx_count_by_hash(self, raw: msgspec.Raw) -> str | None:
        params = positional(raw, 1)
        record = self.chain.by_hash(self._hash_param(params, 0))
        return None if record is None else quantity(len(record.txs))

    async def tx_count_by_number(self, raw: msgspec.Raw) -> str | None:
        params = positional(raw, 1)
        record = self._block_param(params, 0)
        return None if record is None else quantity(len(record.txs))

    @staticmethod
    def _uncle(record: BlockRecord | None, params: list[Any]) -> msgspec.Raw | None:
        index = argument(params, 1, schema.decode_quantity, go_type=schema.UINT_TYPE)
        if record is None or index >= len(record.uncles_json):
            return None
        return msgspec.Raw(record.uncles_json[index])

    async def uncle_by_hash(self, raw: msgspec.Raw) -> msgspec.Raw | None:
        params = positional(raw, 2)
        return self._uncle(self.chain.by_hash(self._hash_param(params, 0)), params)

    async def uncle_by_number(self, raw: msgspec.Raw) -> msgspec.Raw | None:
        params = positional(raw, 2)
        return self._uncle(self._block_param(params, 0), params)

    async def uncle_count_by_hash(self, raw: msgspec.Raw) -> str | None:
        params = positional(raw, 1)
        record = self.chain.by_hash(self._hash_param(params, 0))
        return None if record is None else quantity(len(record.uncles_json))

    async def uncle_count_by_number(self, raw: msgspec.Raw) -> str | None:
        params = positional(raw, 1)
        record = self._block_param(params, 0)
        return None if record is None else quantity(len(record.uncles_json))

    # ----------------------------------------------------------------------------------------------
    # Transactions and receipts

    async def transaction_by_hash(self, raw: msgspec.Raw) -> msgspec.Raw | None:
        params = positional(raw, 1)
        tx_hash = argument(params, 0, schema.decode_hash)
        record = self.chain.transactions.get(data(tx_hash))
        if record is not None:
            return msgspec.Raw(record.json)
        pending = self.pool.get(tx_hash)
        if pending is None:
            return None
        rendered = format_transaction(
            pending.tx,
            sender=data(pending.sender),
            block_hash=None,
            block_number=None,
            index=None,
            base_fee=None,
        )
        return msgspec.Raw(msgspec.json.encode(rendered))

    @staticmethod
    def _tx_at(record: BlockRecord | None, params: list[Any]) -> msgspec.Raw | None:
        index = argument(params, 1, schema.decode_quantity, go_type=schema.UINT_TYPE)
        if record is None or index >= len(record.txs):
            return None
        return msgspec.Raw(record.txs[index].json)

    async def transaction_by_hash_and_index(self, raw: msgspec.Raw) -> msgspec.Raw | None:
        params = positional(raw, 2)
        return self._tx_at(self.chain.by_hash(self._hash_param(params, 0)), params)

    async def transaction_by_number_and_index(self, raw: msgspec.Raw) -> msgspec.Raw | None:
        params = positional(raw, 2)
        return self._tx_at(self._block_param(params, 0), params)

    async def transaction_receipt(self, raw: msgspec.Raw) -> msgspec.Raw | None:
        params = positional(raw, 1)
        record = self.chain.transactions.get(self._hash_param(params, 0))
        return None if record is None else msgspec.Raw(record.receipt_json)

    async def block_receipts(self, raw: msgspec.Raw) -> msgspec.Raw | None:
        params = positional(raw, 1)
        ref = argument(params, 0, schema.decode_block_ref, allow_decimal=True)
        try:
            record = self.chain.resolve(ref)
        except NotCanonical as exc:
            raise ServerError(str(exc)) from None
        return None if record is None else msgspec.Raw(record.receipts_json())

    # ----------------------------------------------------------------------------------------------
    # Logs

    async def get_logs(self, raw: msgspec.Raw) -> msgspec.Raw:
        params = positional(raw, 1)
        criteria = argument(params, 0, decode_log_filter)
        matcher = LogCriteria.build(criteria.addresses, criteria.topics)
        if criteria.block_hash is not None:
            record = self.chain.by_hash(data(criteria.block_hash))
            if record is None:
                raise ServerError("unknown block")
            blocks = [
                BlockLogs(record.number, record.logs, record.log_addresses, record.log_topics)
            ]
            return json_array(_scan_within_limits(blocks, matcher))
        begin = criteria.from_block if criteria.from_block is not None else "latest"
        end = criteria.to_block if criteria.to_block is not None else "latest"
        first = begin if isinstance(begin, int) else self.chain.tag_number(begin)
        last = end if isinstance(end, int) else self.chain.tag_number(end)
        # As geth: both are invalid params, checked once the tags are resolved.
        if first > last:
            raise InvalidParams("invalid block range params")
        if last > self.chain.head.number:
            raise InvalidParams("block range extends beyond current head block")
        index = self.chain.logs
        blocks = index.blocks(first, last)
        if index.count(first, last) <= INLINE_SCAN_LOGS:
            return json_array(_scan_within_limits(blocks, matcher))
        return json_array(await trio.to_thread.run_sync(_scan_within_limits, blocks, matcher))

    # ----------------------------------------------------------------------------------------------
    # State

    async def balance(self, raw: msgspec.Raw) -> str:
        params = positional(raw, 2)
        address = argument(params, 0, schema.decode_address)
        record = self._state_block(params, 1)
        return quantity(self.chain.state(record).get_balance(Address(address)))

    async def code(self, raw: msgspec.Raw) -> str:
        params = positional(raw, 2)
        address = argument(params, 0, schema.decode_address)
        record = self._state_block(params, 1)
        return data(self.chain.state(record).get_code(Address(address)))

    async def transaction_count(self, raw: msgspec.Raw) -> str:
        params = positional(raw, 2)
        address = argument(params, 0, schema.decode_address)
        record = self._state_block(params, 1)
        nonce = self.chain.state(record).get_nonce(Address(address))
        if params[1] == "pending":
            nonce = self.pool.pending_nonce(address, nonce)
        return quantity(nonce)

    async def storage_at(self, raw: msgspec.Raw) -> str:
        params = positional(raw, 3)
        address = argument(params, 0, schema.decode_address)
        slot = _storage_key(params[1])
        record = self._state_block(params, 2)
        value = self.chain.state(record).get_storage(Address(address), slot)
        return f"0x{value:064x}"

    async def call(self, raw: msgspec.Raw) -> str:
        params = positional(raw, 1, 3)
        request = argument(params, 0, _decode_call)
        record = self._optional_state_block(params, 1)
        computation = await trio.to_thread.run_sync(self._run_call, record, request)
        if computation.is_error:
            raise vm_error(computation)
        return data(computation.output)

    def _run_call(self, record: BlockRecord, request: CallRequest) -> Any:
        try:
            return self.chain.call(record, request)
        except ValidationError as exc:
            raise ServerError(_validation_text(str(exc))) from None

    async def estimate_gas(self, raw: msgspec.Raw) -> str:
        params = positional(raw, 1, 2)
        request = argument(params, 0, _decode_call)
        record = self._optional_state_block(params, 1)
        try:
            gas = await trio.to_thread.run_sync(self.chain.estimate_gas, record, request)
        except GasEstimateFailed as exc:
            if exc.computation is not None and isinstance(exc.computation.error, Revert):
                raise vm_error(exc.computation) from None
            raise ServerError(_validation_text(str(exc))) from None
        return quantity(gas)

    def _optional_state_block(self, params: list[Any], index: int) -> BlockRecord:
        if params[index] is None:
            return self.chain.head
        return self._state_block(params, index)

    # ----------------------------------------------------------------------------------------------
    # Fees

    async def gas_price(self, raw: msgspec.Raw) -> str:
        positional(raw, 0)
        return quantity((self.chain.head.base_fee or 0) + PRIORITY_FEE)

    async def max_priority_fee(self, raw: msgspec.Raw) -> str:
        positional(raw, 0)
        return quantity(PRIORITY_FEE)

    async def blob_base_fee(self, raw: msgspec.Raw) -> str:
        positional(raw, 0)
        return quantity(self._next_blob_fee() or 0)

    def _next_blob_fee(self) -> int | None:
        header = self.chain.child_header(self.chain.head, self.chain.head.timestamp + 1)
        excess = getattr(header, "excess_blob_gas", None)
        vm_class = self.chain.vm_class(header.block_number)
        fraction = self.chain.schedule.blob_fee_fraction(vm_class)
        if excess is None or fraction is None:
            return None
        return blob_base_fee(excess, fraction)

    async def fee_history(self, raw: msgspec.Raw) -> dict[str, Any]:
        params = positional(raw, 2, 1)
        count = argument(params, 0, _decode_decimal_or_hex)
        newest = self.chain.resolve(argument(params, 1, schema.decode_block_number))
        no_percentiles: list[float] = []
        percentiles = optional_argument(params, 2, _decode_percentiles, no_percentiles)
        if newest is None:
            raise ServerError("header not found")
        count = min(count, MAX_FEE_HISTORY, newest.number + 1)
        if count == 0:
            return {"oldestBlock": "0x0"}
        blocks = self.chain.canonical[newest.number - count + 1 : newest.number + 1]
        history: dict[str, Any] = {"oldestBlock": quantity(blocks[0].number)}
        if percentiles:
            history["reward"] = [
                [quantity(r) for r in _rewards(block, percentiles)] for block in blocks
            ]
        if newest.base_fee is not None:
            next_fee = self.chain.child_header(newest, newest.timestamp + 1).base_fee_per_gas or 0
            fees = [b.base_fee or 0 for b in blocks] + [next_fee]
            history["baseFeePerGas"] = [quantity(f) for f in fees]
        history["gasUsedRatio"] = [b.gas_used / b.gas_limit for b in blocks]
        if newest.excess_blob_gas is not None:
            fraction = self.chain.schedule.blob_fee_fraction(self.chain.vm_class(newest.number))
            assert fraction is not None
            blob_fees = [blob_base_fee(b.excess_blob_gas or 0, fraction) for b in blocks]
            history["baseFeePerBlobGas"] = [quantity(f) for f in [*blob_fees, blob_fees[-1]]]
            history["blobGasUsedRatio"] = [(b.blob_gas_used or 0) / 1_179_648 for b in blocks]
        return history


def _rewards(block: BlockRecord, percentiles: list[float]) -> list[int]:
    """geth's reward percentiles: effective tips weighted by gas used."""
    if not block.txs:
        return [0] * len(percentiles)
    ordered = sorted(block.txs, key=lambda tx: tx.effective_tip)
    rewards = []
    position, cumulative = 0, ordered[0].gas_used
    for percentile in percentiles:
        threshold = block.gas_used * percentile / 100
        while cumulative < threshold and position < len(ordered) - 1:
            position += 1
            cumulative += ordered[position].gas_used
        rewards.append(ordered[position].effective_tip)
    return rewards


def _decode_decimal_or_hex(value: Any) -> int:
    text = value if isinstance(value, str) else msgspec.json.encode(value).decode()
    if text.isdecimal():
        return int(text)
    return schema.decode_uint64_text(text)


def _decode_percentiles(value: Any) -> list[float]:
    if not isinstance(value, list) or not all(
        isinstance(p, int | float) and not isinstance(p, bool) for p in value
    ):
        raise schema.ArgumentError(
            f"json: cannot unmarshal {schema.json_kind(value)} into Go value of type []float64"
        )
    for i, percentile in enumerate(value):
        if not 0 <= percentile <= 100:
            raise schema.ArgumentError(f"invalid reward percentile: {percentile}")
        if i and percentile <= value[i - 1]:
            raise schema.ArgumentError(
                f"invalid reward percentile: #{i - 1}:{value[i - 1]} >= #{i}:{percentile}"
            )
    return [float(p) for p in value]


def _storage_key(value: Any) -> int:
    """geth's ``decodeHash`` for storage keys: short hex allowed, errors as -32000."""
    if not isinstance(value, str):
        raise invalid_argument(
            1, f"json: cannot unmarshal {schema.json_kind(value)} into Go value of type string"
        )
    text = value[2:] if value[:2] in ("0x", "0X") else value
    if len(text) % 2:
        text = "0" + text
    if len(text) > 64:
        raise ServerError(
            "unable to decode storage key: hex string too long, want at most 32 bytes"
        )
    try:
        return int.from_bytes(bytes.fromhex(text), "big")
    except ValueError:
        raise ServerError("unable to decode storage key: hex string invalid") from None


def _validation_text(message: str) -> str:
    """py-evm's validation failures, in geth's words where the meaning is the same."""
    lowered = message.lower()
    if "enough balance" in lowered or "cannot afford" in lowered:
        return "insufficient funds for gas * price + value"
    if "intrinsic" in lowered or "insufficient gas" in lowered:
        return "intrinsic gas too low"
    return message
