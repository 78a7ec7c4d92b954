"""The dev chain adapter: an embedded py-evm chain served as a geth-like node.

Mining (on a timer, on ``evm_mine``, or at once for each submitted transaction when the block time is
0) happens under one lock, in a worker thread; the new head is adopted in the event loop and sent to
every ingestion task through a bounded memory channel.
"""

from __future__ import annotations

import functools
import logging
import time
from pathlib import Path
from typing import Any, ClassVar, Final

import msgspec
import trio
from eth_account import Account as EthAccount
from eth_utils.address import to_checksum_address

from adapters._options import decode_options
from adapters.base import CacheEpoch, DevOptions, NetworkChainAdapter, NetworkSpec
from adapters.devchain._dev_network import dev_network
from adapters.evm.blocks import BlockHandler, ChainBlock, PendingHandler, PendingTransaction
from adapters.evm.chain_adapter import EvmChainAdapter
from schemas import eth as schema
from schemas.errors import (
    ConfigError,
    InvalidParams,
    MethodNotFound,
    ServerError,
    invalid_argument,
)

from . import demo
from ._options import DevChainOptions
from .accounts import DevAccount, derive_accounts
from .bootstrap import StateDirMismatch, create_dev_chain, open_dev_chain
from .chain import LocalChain
from .formatting import data, format_transaction, quantity
from .genesis import read_geth_genesis
from .geth_import import ChainFileError, import_geth_chain
from .methods import READ_METHODS, Handler, ReadMethods
from .params import argument, optional_argument, positional
from .progress import TerminalProgress, summary_line
from .records import BlockRecord
from .txpool import Account, PooledTx, TxPool, TxRejected, check_transaction

log = logging.getLogger(__name__)

HEAD_BUFFER: Final = 64
DEMO_TRANSFERS: Final = 3
MAX_MINE_BLOCKS: Final = 10_000

#: RPC method name -> :class:`DevChainAdapter` handler attribute, for the methods that change the chain.
WRITE_METHODS: Final[dict[str, str]] = {
    "eth_sendRawTransaction": "_send_raw_transaction",
    "evm_mine": "_evm_mine",
    "evm_snapshot": "_evm_snapshot",
    "evm_revert": "_evm_revert",
    # What anvil and hardhat users expect of a dev node (the dev accounts' keys are public).
    "eth_accounts": "_eth_accounts",
    "eth_sendTransaction": "_send_transaction",
    "evm_increaseTime": "_increase_time",
    "evm_setNextBlockTimestamp": "_set_next_block_timestamp",
    "evm_setAutomine": "_set_automine",
    "anvil_setBalance": "_set_balance",
    "hardhat_setBalance": "_set_balance",
    "anvil_mine": "_mine_blocks",
    "hardhat_mine": "_mine_blocks",
}


_METHODS: Final = frozenset(READ_METHODS) | frozenset(WRITE_METHODS)


_ESTIMATE_FIELDS: Final = frozenset(
    {"from", "to", "value", "data", "input", "gasPrice", "maxFeePerGas", "maxPriorityFeePerGas"}
)


def _transaction_request(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict) or not isinstance(value.get("from"), str):
        raise schema.ArgumentError("transaction must be an object with a from address")
    for key, field in value.items():
        if key in ("accessList", "authorizationList", "type"):
            continue
        if field is not None and not isinstance(field, str):
            raise schema.ArgumentError(f"{key} must be a hex string")
    return value


def _seconds(value: Any) -> int:
    """A number of seconds, as a JSON number (hardhat) or a hex quantity (viem, anvil)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return schema.decode_quantity(value)


class _NonceReader:
    """Account nonces at ``parent``, each read from the state once."""

    def __init__(self, chain: LocalChain, parent: BlockRecord) -> None:
        self.nonces: dict[bytes, int] = {}
        self._chain = chain
        self._parent = parent

    def __call__(self, sender: bytes) -> int:
        if sender not in self.nonces:
            self.nonces[sender] = self._chain.account(self._parent, sender)[0]
        return self.nonces[sender]


def chain_id_of(caip2: str) -> int:
    """The numeric chain id of an ``eip155:<id>`` CAIP-2 id."""
    namespace, _, reference = caip2.partition(":")
    if namespace != "eip155" or not reference.isdecimal():
        raise ValueError(f"not an eip155 chain id: {caip2!r}")
    return int(reference)


class DevChainAdapter(NetworkChainAdapter, EvmChainAdapter):
    """An embedded py-evm chain (the dev chain, or a geth genesis + chain file import).

    Options: ``block_time`` (seconds between blocks, with demo traffic on the dev chain; 0 mines on
    demand only), ``mnemonic``, ``accounts``; or a geth ``genesis`` file, optionally with a
    ``chain_file`` (RLP blocks to import) and a ``forkchoice`` request naming head/safe/finalized.
    """

    name: ClassVar[str] = "devchain"
    embedded: ClassVar[bool] = True

    @classmethod
    def dev_network(cls, options: DevOptions) -> NetworkSpec:
        """The dev chain (``dev``, ``eip155:1337``), or a geth genesis file's chain."""
        return dev_network(options)

    def __init__(self, spec: NetworkSpec) -> None:
        super().__init__(spec)
        self.options = decode_options(spec, DevChainOptions, self.name)
        self.chain_id = chain_id_of(spec.chain)
        self._chain: LocalChain | None = None
        self._accounts: tuple[DevAccount, ...] = ()
        self._token: bytes | None = None
        self._demo: demo.DemoTraffic | None = None
        self._pool = TxPool()
        self._lock = trio.Lock()
        self._handlers: dict[str, Handler] = {}
        self._subscribers: set[trio.MemorySendChannel[ChainBlock]] = set()
        #: Told of each transaction the pool accepts (``newPendingTransactions``).
        self._pending_handlers: list[PendingHandler] = []
        self._miner_running = False
        self._snapshots: dict[int, str] = {}
        self._pending: tuple[tuple[str, tuple[bytes, ...]], BlockRecord] | None = None
        self._next_snapshot = 1
        self._automine = self.options.block_time == 0

    # ----------------------------------------------------------------------------------------------
    # Lifecycle

    @property
    def chain(self) -> LocalChain:
        if self._chain is None:
            raise RuntimeError("DevChainAdapter.start() has not run")
        return self._chain

    @property
    def accounts(self) -> tuple[DevAccount, ...]:
        """The funded dev accounts (empty for an imported chain)."""
        return self._accounts

    @property
    def token_address(self) -> str | None:
        """The demo token's address on the dev chain."""
        return data(self._token) if self._token else None

    async def start(self) -> None:
        if self._chain is not None:
            return
        options = self.options
        if options.genesis is not None:
            try:
                genesis_chain_id = int(
                    read_geth_genesis(Path(options.genesis)).config.get("chainId", 1)
                )
            except OSError as exc:
                raise ConfigError(f"--genesis {options.genesis}: {exc.strerror}") from None
            except ValueError as exc:
                raise ConfigError(f"--genesis {options.genesis}: {exc}") from None
            if genesis_chain_id != self.chain_id:
                raise ValueError(
                    f"{self.spec.chain} does not match the genesis chain id {genesis_chain_id}"
                )
            try:
                started = time.monotonic()
                chain = await trio.to_thread.run_sync(
                    functools.partial(
                        import_geth_chain,
                        Path(options.genesis),
                        Path(options.chain_file) if options.chain_file else None,
                        Path(options.forkchoice) if options.forkchoice else None,
                        progress=TerminalProgress(),
                    )
                )
                log.debug(summary_line(chain.head.number, time.monotonic() - started))
            except OSError as exc:
                raise ConfigError(f"{exc.filename}: {exc.strerror}") from None
            except ChainFileError as exc:
                raise ConfigError(f"--chain-file {options.chain_file}: {exc}") from None
            self._chain = chain
        else:
            self._chain = await trio.to_thread.run_sync(self._create_dev_chain)
        reads = ReadMethods(self.chain, self._pool, pending_block=self.pending_block)
        self._handlers = {**reads.table(), **self._write_methods()}

    async def aclose(self) -> None:
        # No checkpoint: closing the journal is one local call, at the end (shielded there).
        if self._chain is not None and self._chain.store is not None:
            self._chain.store.close()

    def _create_dev_chain(self) -> LocalChain:
        self._accounts = derive_accounts(self.options.mnemonic, self.options.accounts)
        if self.options.state_dir is None:
            chain, fresh = create_dev_chain(self.chain_id, self._accounts), True
        else:
            try:
                chain, fresh = open_dev_chain(
                    Path(self.options.state_dir), self.chain_id, self._accounts
                )
            except (OSError, StateDirMismatch) as exc:
                raise ConfigError(f"state_dir {self.options.state_dir}: {exc}") from None
        if len(self._accounts) < 2:
            return chain
        if fresh:
            self._deploy_token(chain)
        else:
            self._token = _deployed_token(chain)
            self._demo = demo.DemoTraffic(self._accounts)
        return chain

    def _deploy_token(self, chain: LocalChain) -> None:
        """Block 1 deploys the token, block 2 hands each account some of it."""
        owner = self._accounts[0]
        parent = chain.head
        vm_class = chain.vm_class(parent.number + 1)
        deployment = demo.sign_deployment(
            vm_class, owner, chain_id=self.chain_id, nonce=0, base_fee=parent.base_fee or 0
        )
        record, _ = chain.build_block(parent, [deployment], timestamp=chain.next_timestamp(parent))
        chain.adopt(record)
        receipt = msgspec.json.decode(record.txs[0].receipt_json)
        self._token = bytes.fromhex(receipt["contractAddress"][2:])
        parent = chain.head
        transfers = [
            demo.sign_transfer(
                vm_class,
                transfer,
                self._token,
                chain_id=self.chain_id,
                nonce=1 + i,
                base_fee=parent.base_fee or 0,
            )
            for i, transfer in enumerate(demo.seed_plan(self._accounts))
        ]
        record, _ = chain.build_block(parent, transfers, timestamp=chain.next_timestamp(parent))
        chain.adopt(record)
        self._demo = demo.DemoTraffic(self._accounts)

    def methods(self, chain: str) -> frozenset[str]:
        self._check_chain(chain)
        return _METHODS

    def cache_epoch(self, chain: str) -> CacheEpoch | None:
        return self.chain.epoch() if chain == self.spec.chain and self._chain is not None else None

    # ----------------------------------------------------------------------------------------------
    # Calls

    async def call(self, chain: str, method: str, params: msgspec.Raw) -> Any:
        self._check_chain(chain)
        handler = self._handlers.get(method)
        if handler is None:
            raise MethodNotFound(method)
        return await handler(params)

    def _write_methods(self) -> dict[str, Handler]:
        return {name: getattr(self, attribute) for name, attribute in WRITE_METHODS.items()}

    async def _send_raw_transaction(self, raw: msgspec.Raw) -> str:
        params = positional(raw, 1)
        payload = argument(params, 0, schema.decode_data)
        chain = self.chain
        try:
            tx = chain.decode_transaction(payload)
        except Exception as exc:  # any decoding failure is the caller's
            raise ServerError(f"invalid transaction: {exc}") from None
        try:
            sender: bytes = tx.sender
        except Exception:  # a signature py-evm cannot recover
            raise ServerError("invalid sender") from None
        async with self._lock:
            head = chain.head
            nonce, balance = chain.account(head, sender)
            next_base_fee = getattr(
                chain.child_header(head, chain.next_timestamp(head)), "base_fee_per_gas", None
            )
            try:
                check_transaction(
                    tx,
                    sender,
                    Account(nonce, balance),
                    chain_id=self.chain_id,
                    base_fee=next_base_fee,
                    gas_limit=chain.header(head).gas_limit,
                )
                self._pool.add(tx, sender)
            except TxRejected as exc:
                raise ServerError(str(exc)) from None
            # Announced as pending before it is mined, even at once (anvil's automine does so).
            self._announce_pending(tx, sender)
            if self._automine:
                await self._mine_locked()
                if self._pool.get(tx.hash) is None and data(tx.hash) not in chain.transactions:
                    raise ServerError("transaction rejected while building the block")
        return data(tx.hash)

    def _announce_pending(self, tx: Any, sender: bytes) -> None:
        if not self._pending_handlers:
            return
        rendered = format_transaction(
            tx, sender=data(sender), block_hash=None, block_number=None, index=None, base_fee=None
        )
        pending = PendingTransaction(
            msgspec.json.encode(data(tx.hash)), msgspec.json.encode(rendered)
        )
        for handler in list(self._pending_handlers):
            try:
                handler(pending)
            except Exception:  # a subscriber's failure must never refuse the transaction
                log.exception("%s: a pending-transaction handler failed", self.spec.name)

    def follows_pending_transactions(self, chain: str) -> bool:
        return True

    async def serve_pending_transactions(
        self,
        chain: str,
        on_transaction: PendingHandler,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        self._check_chain(chain)
        self._pending_handlers.append(on_transaction)
        try:
            task_status.started()
            await trio.sleep_forever()
        finally:
            self._pending_handlers.remove(on_transaction)

    # -- what anvil and hardhat offer ---------------------------------------------------------

    async def _eth_accounts(self, raw: msgspec.Raw) -> list[str]:
        # No checkpoint (as ReadMethods'): answered from memory in a call that has one.
        positional(raw, 0)
        return [account.hex_address for account in self._accounts]

    async def _send_transaction(self, raw: msgspec.Raw) -> str:
        """Fill in, sign with the dev account named ``from``, and submit (as anvil does)."""
        params = positional(raw, 1)
        request = argument(params, 0, _transaction_request)
        sender = next((a for a in self._accounts if a.hex_address == request["from"].lower()), None)
        if sender is None:
            raise ServerError("unknown account")
        fields = await self._fill_transaction(request)
        signed = EthAccount.sign_transaction(fields, sender.key.to_bytes()).raw_transaction
        return await self._send_raw_transaction(
            msgspec.Raw(msgspec.json.encode(["0x" + bytes(signed).hex()]))
        )

    async def _fill_transaction(self, request: dict[str, Any]) -> dict[str, Any]:
        async def read(method: str, *args: Any) -> Any:
            result = await self._handlers[method](msgspec.Raw(msgspec.json.encode(list(args))))
            return msgspec.json.decode(result) if isinstance(result, msgspec.Raw) else result

        fields: dict[str, Any] = {
            "chainId": self.chain_id,
            "value": int(request.get("value", "0x0"), 16),
            "data": request.get("data", request.get("input", "0x")),
        }
        if request.get("to") is not None:
            fields["to"] = to_checksum_address(request["to"])
        nonce = request.get("nonce") or await read(
            "eth_getTransactionCount", request["from"], "pending"
        )
        fields["nonce"] = int(nonce, 16)
        if "gasPrice" in request:
            fields["gasPrice"] = int(request["gasPrice"], 16)
        else:
            base_fee = int(
                (await read("eth_getBlockByNumber", "latest", False))["baseFeePerGas"], 16
            )
            priority = int(request.get("maxPriorityFeePerGas", hex(10**9)), 16)
            fields["maxPriorityFeePerGas"] = priority
            fields["maxFeePerGas"] = int(
                request.get("maxFeePerGas", hex(2 * base_fee + priority)), 16
            )
        gas = request.get("gas") or request.get("gasLimit")
        if gas is None:
            estimate = {k: v for k, v in request.items() if k in _ESTIMATE_FIELDS}
            gas = await read("eth_estimateGas", estimate, "pending")
        fields["gas"] = int(gas, 16)
        return fields

    async def _increase_time(self, raw: msgspec.Raw) -> int:
        params = positional(raw, 1)
        seconds = argument(params, 0, _seconds)
        async with self._lock:
            self.chain.time_offset += seconds
            return self.chain.time_offset

    async def _set_next_block_timestamp(self, raw: msgspec.Raw) -> None:
        params = positional(raw, 1)
        timestamp = argument(params, 0, _seconds)
        async with self._lock:
            latest = self.chain.head.timestamp
            if timestamp <= latest:
                raise ServerError(
                    f"timestamp {timestamp} is not after the latest block's ({latest})"
                )
            self.chain.next_block_timestamp = timestamp

    async def _set_automine(self, raw: msgspec.Raw) -> None:
        # No checkpoint (as ReadMethods'): a flag set in memory in a call that has one.
        params = positional(raw, 1)
        self._automine = argument(params, 0, schema.decode_bool)

    async def _mine_blocks(self, raw: msgspec.Raw) -> None:
        """``[blocks, interval]``: mine ``blocks`` (default 1), ``interval`` seconds apart."""
        params = positional(raw, 0, 2)
        blocks = optional_argument(params, 0, _seconds, 1)
        interval = optional_argument(params, 1, _seconds, 1)
        if not 1 <= blocks <= MAX_MINE_BLOCKS:
            raise invalid_argument(0, f"mine between 1 and {MAX_MINE_BLOCKS} blocks")
        async with self._lock:
            record = await self._mine_locked()
            for _ in range(blocks - 1):
                record = await self._mine_locked(timestamp=record.timestamp + max(interval, 1))

    async def _set_balance(self, raw: msgspec.Raw) -> None:
        params = positional(raw, 2)
        address = argument(params, 0, schema.decode_address)
        balance = argument(params, 1, schema.decode_quantity)
        async with self._lock:
            self.chain.set_balance(address, balance)

    async def _evm_mine(self, raw: msgspec.Raw) -> str:
        params = positional(raw, 0, 1)
        timestamp, blocks = _mine_options(params[0])
        async with self._lock:
            for i in range(blocks):
                await self._mine_locked(timestamp=None if timestamp is None else timestamp + i)
        return "0x0"

    async def _evm_snapshot(self, raw: msgspec.Raw) -> str:
        positional(raw, 0)
        async with self._lock:
            snapshot = self._next_snapshot
            self._next_snapshot += 1
            self._snapshots[snapshot] = self.chain.head.hash
        return quantity(snapshot)

    async def _evm_revert(self, raw: msgspec.Raw) -> bool:
        params = positional(raw, 1)
        snapshot = argument(params, 0, schema.decode_quantity, go_type=schema.UINT64_TYPE)
        async with self._lock:
            block_hash = self._snapshots.get(snapshot)
            record = self.chain.by_hash(block_hash) if block_hash else None
            if record is None or not self.chain.is_canonical(record):
                return False
            # As hardhat and anvil: the snapshot and every later one are used up.
            for later in [s for s in self._snapshots if s >= snapshot]:
                del self._snapshots[later]
            self.chain.rewind(record.number)
            self._pool.clear()
        return True

    # ----------------------------------------------------------------------------------------------
    # Mining

    async def pending_block(self) -> BlockRecord:
        """The block the pool's executable transactions would make on the head, not kept: the
        same block while the head and the pool stay the same (as geth's pending block)."""
        async with self._lock:
            chain = self.chain
            parent = chain.head
            txs = [entry.tx for entry in self._pool.executable(_NonceReader(chain, parent))]
            key = (parent.hash, tuple(bytes(tx.hash) for tx in txs))
            if self._pending is not None and self._pending[0] == key:
                return self._pending[1]
            timestamp = chain.next_timestamp(parent)
            record = await trio.to_thread.run_sync(
                lambda: chain.pending_block(parent, txs, timestamp=timestamp)
            )
            self._pending = (key, record)
            return record

    async def mine(self, *, timestamp: int | None = None, demo_transfers: int = 0) -> BlockRecord:
        """Mine one block now (with ``demo_transfers`` random token transfers)."""
        async with self._lock:
            return await self._mine_locked(timestamp=timestamp, demo_transfers=demo_transfers)

    async def _mine_locked(
        self, *, timestamp: int | None = None, demo_transfers: int = 0
    ) -> BlockRecord:
        chain = self.chain
        parent = chain.head
        nonce_of = _NonceReader(chain, parent)
        nonces = nonce_of.nonces
        self._pool.prune(nonce_of)
        entries = self._pool.executable(nonce_of)
        plan = self._demo.plan(demo_transfers) if self._demo and demo_transfers else []
        for transfer in plan:
            nonce_of(transfer.sender.address)
        record, _ = await trio.to_thread.run_sync(
            self._build, parent, entries, plan, nonces, chain.next_timestamp(parent, timestamp)
        )
        chain.adopt(record)
        self._pool.discard(entries)
        await self._publish(record.chain_block())
        return record

    def _build(
        self,
        parent: BlockRecord,
        entries: list[PooledTx],
        plan: list[demo.TokenTransfer],
        nonces: dict[bytes, int],
        timestamp: int,
    ) -> tuple[BlockRecord, list[Any]]:
        chain = self.chain
        txs = [entry.tx for entry in entries]
        if plan and self._token is not None:
            next_nonce = dict(nonces)
            for entry in entries:
                next_nonce[entry.sender] = max(next_nonce.get(entry.sender, 0), entry.tx.nonce + 1)
            vm_class = chain.vm_class(parent.number + 1)
            for transfer in plan:
                sender = transfer.sender.address
                txs.append(
                    demo.sign_transfer(
                        vm_class,
                        transfer,
                        self._token,
                        chain_id=self.chain_id,
                        nonce=next_nonce[sender],
                        base_fee=parent.base_fee or 0,
                    )
                )
                next_nonce[sender] += 1
        return chain.build_block(parent, txs, timestamp=timestamp)

    async def _mine_every(self, interval: float) -> None:
        deadline = trio.current_time()
        while True:
            deadline += interval
            await trio.sleep_until(deadline)
            try:
                await self.mine(demo_transfers=DEMO_TRANSFERS)
            except Exception:
                log.exception("%s: mining a block failed", self.spec.name)

    # ----------------------------------------------------------------------------------------------
    # Ingestion

    # fetch_block and fetch_head read the chain in memory (no checkpoint): the head tracker that
    # calls them waits on the chain's blocks between two calls.
    async def fetch_block(
        self, chain: str, *, number: int | None = None, block_hash: str | None = None
    ) -> ChainBlock | None:
        self._check_chain(chain)
        if block_hash is not None:
            record = self.chain.by_hash(block_hash.lower())
        elif number is not None:
            record = self.chain.by_number(number)
        else:
            raise ValueError("fetch_block needs number or block_hash")
        return None if record is None else record.chain_block()

    async def fetch_head(self, chain: str) -> ChainBlock | None:
        self._check_chain(chain)
        return self.chain.head.chain_block()

    async def serve_ingestion(
        self,
        chain: str,
        on_block: BlockHandler,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Report the current head, then every new head; mines on the timer when
        ``block_time`` > 0 (one timer however many ingestion tasks run)."""
        self._check_chain(chain)
        send, receive = trio.open_memory_channel[ChainBlock](HEAD_BUFFER)
        async with trio.open_nursery() as nursery:
            self._subscribers.add(send)
            try:
                if self.options.block_time > 0 and not self._miner_running:
                    self._miner_running = True
                    nursery.start_soon(self._run_miner)
                send.send_nowait(self.chain.head.chain_block())
                task_status.started()
                async with receive:
                    async for block in receive:
                        await on_block(block)
            finally:
                self._subscribers.discard(send)
                nursery.cancel_scope.cancel()

    async def _run_miner(self) -> None:
        try:
            await self._mine_every(self.options.block_time)
        finally:
            self._miner_running = False

    async def _publish(self, block: ChainBlock) -> None:
        for send in list(self._subscribers):
            try:
                await send.send(block)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self._subscribers.discard(send)


def _deployed_token(chain: LocalChain) -> bytes | None:
    """The demo token of a dev chain read back from a state dir: block 1 deployed it."""
    first = chain.by_number(1)
    if first is None or not first.txs:
        return None
    address = msgspec.json.decode(first.txs[0].receipt_json).get("contractAddress")
    return bytes.fromhex(address[2:]) if isinstance(address, str) else None


def _mine_options(value: Any) -> tuple[int | None, int]:
    """``evm_mine``'s optional param: a timestamp, or ``{"timestamp": ..., "blocks": ...}``."""
    if value is None:
        return None, 1
    try:
        if isinstance(value, dict):
            timestamp = value.get("timestamp")
            blocks = value.get("blocks")
            stamp = None if timestamp is None else _int_or_quantity(timestamp)
            count = 1 if blocks is None else _int_or_quantity(blocks)
        else:
            stamp, count = _int_or_quantity(value), 1
    except schema.ArgumentError as exc:
        raise InvalidParams(f"invalid argument 0: {exc}") from None
    if not 1 <= count <= MAX_MINE_BLOCKS:
        raise InvalidParams(f"invalid argument 0: blocks must be 1 to {MAX_MINE_BLOCKS}")
    return stamp, count


def _int_or_quantity(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return schema.decode_quantity(value, schema.UINT64_TYPE)
