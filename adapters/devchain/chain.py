"""A py-evm chain with geth-shaped read indexes (synchronous; the adapter decides threading).

Two kinds of work happen here. *Building* (``build_block``, ``import_evm_block``) executes blocks
with py-evm and renders them into immutable :class:`BlockRecord` objects; it may run in a worker
thread. *Adopting* (``adopt``, ``rewind``) moves the canonical chain and its indexes (by number, by
transaction hash, logs) and is cheap, done by the owner of the chain between builds. Every record
ever built stays reachable by hash, so orphaned blocks can still be fetched.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import rlp
from eth.abc import BlockHeaderAPI, StateAPI, VirtualMachineAPI
from eth.chains.base import Chain
from eth.constants import ZERO_ADDRESS, ZERO_HASH32
from eth.vm.forks.cancun import CancunVM
from eth.vm.forks.shanghai import ShanghaiVM
from eth.vm.spoof import SpoofTransaction
from eth_typing import Address, BlockNumber, Hash32
from eth_utils.exceptions import ValidationError

from adapters.base import CacheEpoch
from schemas.eth import BlockHashRef, BlockRef

from .forks import ForkSchedule
from .formatting import format_block
from .log_index import LogIndex
from .records import BlockRecord, TxRecord
from .store import ChainStore

BLOB_TX_TYPE: Final = b"\x03"

DEFAULT_CALL_GAS: Final = 50_000_000  # geth's RPCGasCap


class NotCanonical(LookupError):
    """An EIP-1898 reference with ``requireCanonical`` to a block off the canonical chain."""


@dataclass(frozen=True, slots=True)
class CallRequest:
    """An ``eth_call`` / ``eth_estimateGas`` transaction, already decoded."""

    sender: bytes = ZERO_ADDRESS
    to: bytes = b""
    gas: int | None = None
    gas_price: int = 0
    value: int = 0
    data: bytes = b""


class LocalChain:
    """The chain, its rendered blocks and the canonical indexes."""

    def __init__(self, evm: Chain, schedule: ForkSchedule) -> None:
        self.evm = evm
        self.schedule = schedule
        self.chain_id: int = evm.chain_id
        self.records: dict[str, BlockRecord] = {}
        self.canonical: list[BlockRecord] = []
        self.transactions: dict[str, TxRecord] = {}
        self.logs = LogIndex()
        self.safe_hash: str | None = None
        self.finalized_hash: str | None = None
        self._last_timestamp = 0
        #: Bumped by every change of what the chain serves (see :meth:`epoch`); ``reorgs`` by
        #: every rewind that removed blocks.
        self.version = 0
        self.reorgs = 0
        self._epoch: tuple[int, CacheEpoch] | None = None
        #: Head states changed by dev methods (anvil_setBalance): block hash → state root.
        self._state_roots: dict[str, bytes] = {}
        #: Seconds added to the wall clock for new blocks (evm_increaseTime), and the exact
        #: timestamp of the next block, if set (evm_setNextBlockTimestamp).
        self.time_offset = 0
        self.next_block_timestamp: int | None = None
        #: Where every adopted or rewound head is committed (``state_dir``), or None (in memory).
        self.store: ChainStore | None = None
        genesis = evm.get_canonical_block_by_number(BlockNumber(0))
        self.adopt(self._render(genesis))

    # ----------------------------------------------------------------------------------------------
    # Reads of rendered blocks (cheap, no py-evm)

    @property
    def head(self) -> BlockRecord:
        return self.canonical[-1]

    def by_number(self, number: int) -> BlockRecord | None:
        if 0 <= number < len(self.canonical):
            return self.canonical[number]
        return None

    def by_hash(self, block_hash: str) -> BlockRecord | None:
        """Any block built or imported so far, canonical or orphaned."""
        return self.records.get(block_hash)

    def is_canonical(self, record: BlockRecord) -> bool:
        return self.by_number(record.number) is record

    def tag_number(self, tag: str) -> int:
        """The block number a tag stands for (``pending`` reads as ``latest``)."""
        if tag == "earliest":
            return 0
        if tag in ("safe", "finalized"):
            chosen = self.safe_hash if tag == "safe" else self.finalized_hash
            record = self.records.get(chosen) if chosen else None
            if record is not None and self.is_canonical(record):
                return record.number
        return self.head.number

    def resolve(self, ref: BlockRef) -> BlockRecord | None:
        """The block a number, tag or hash reference names, or None."""
        if isinstance(ref, BlockHashRef):
            record = self.records.get("0x" + ref.block_hash.hex())
            if record is not None and ref.require_canonical and not self.is_canonical(record):
                raise NotCanonical("hash is not currently canonical")
            return record
        if isinstance(ref, str):
            return self.by_number(self.tag_number(ref))
        return self.by_number(ref)

    # ----------------------------------------------------------------------------------------------
    # Moving the canonical chain

    def adopt(self, record: BlockRecord) -> list[BlockRecord]:
        """Make ``record`` the head; returns the blocks it orphans (a reorganisation)."""
        orphaned: list[BlockRecord] = []
        if self.canonical and record.parent_hash != self.head.hash:
            parent = self.records.get(record.parent_hash)
            if parent is None or not self.is_canonical(parent):
                raise ValueError(f"block {record.hash} does not build on the canonical chain")
            orphaned = self.rewind(parent.number)
        if record.number != len(self.canonical):
            raise ValueError(f"block {record.number} does not extend height {len(self.canonical)}")
        self.records[record.hash] = record
        self.canonical.append(record)
        for tx in record.txs:
            self.transactions[tx.hash] = tx
        self.logs.append(record.number, record.logs)
        self._last_timestamp = max(self._last_timestamp, record.timestamp)
        if self.next_block_timestamp is not None and record.timestamp >= self.next_block_timestamp:
            # Time goes on from the timestamp asked for, as in hardhat and anvil.
            self.time_offset = record.timestamp - int(time.time())
            self.next_block_timestamp = None
        self.version += 1
        self._save()
        return orphaned

    def rewind(self, number: int) -> list[BlockRecord]:
        """Make the canonical block ``number`` the head; returns the blocks removed."""
        removed = self.canonical[number + 1 :]
        del self.canonical[number + 1 :]
        for record in removed:
            for tx in record.txs:
                if self.transactions.get(tx.hash) is tx:
                    del self.transactions[tx.hash]
        self.logs.truncate(number + 1)
        self.version += 1
        if removed:
            self.reorgs += 1
        self._save()
        return removed

    def saved_state(self) -> dict[str, Any]:
        """What a restart needs beside py-evm's database (see :mod:`.store`)."""
        return {
            "chain_id": self.chain_id,
            "head": self.head.hash,
            "state_roots": {h: root.hex() for h, root in self._state_roots.items()},
            "time_offset": self.time_offset,
            "next_block_timestamp": self.next_block_timestamp,
        }

    def _save(self) -> None:
        if self.store is not None:
            self.store.commit(self.saved_state())

    def restore(self, saved: dict[str, Any]) -> None:
        """Adopt again the canonical chain ending at the saved head, from py-evm's database (a
        chain opened from a :class:`ChainStore`; blocks orphaned before are not read back)."""
        headers = []
        header = self.evm.get_block_header_by_hash(Hash32(bytes.fromhex(saved["head"][2:])))
        while header.block_number > 0:
            headers.append(header)
            header = self.evm.get_block_header_by_hash(header.parent_hash)
        for header in reversed(headers):
            self.adopt(self._render(self.evm.get_block_by_header(header)))
        self._state_roots = {h: bytes.fromhex(r) for h, r in saved["state_roots"].items()}
        self.time_offset = saved["time_offset"]
        self.next_block_timestamp = saved["next_block_timestamp"]
        self.state_changed()

    def state_changed(self) -> None:
        """Record a change of served state made without a new block (a dev method's)."""
        self.version += 1

    def epoch(self) -> CacheEpoch:
        """What the chain serves now, for the broker's response cache."""
        epoch = self._epoch
        if epoch is None or epoch[0] != self.version:
            head = self.head
            epoch = self._epoch = (
                self.version,
                CacheEpoch(head.number, f"{head.hash}/{self.version}", self.reorgs),
            )
        return epoch[1]

    # ----------------------------------------------------------------------------------------------
    # Building blocks (py-evm work)

    def vm_class(self, number: int) -> type[VirtualMachineAPI]:
        """The VM that runs block ``number``."""
        return self.evm.get_vm_class_for_block_number(BlockNumber(number))

    def header(self, record: BlockRecord) -> BlockHeaderAPI:
        """The block's header, with the state a dev method set since it was mined, if any (its
        state root is then that state's: reads and the next block start from it)."""
        header = self.evm.get_block_header_by_hash(Hash32(bytes.fromhex(record.hash[2:])))
        root = self._state_roots.get(record.hash)
        return header if root is None else header.copy(state_root=root)

    def set_balance(self, address: bytes, balance: int) -> None:
        """Give ``address`` ``balance`` wei in the head's state, at once (anvil_setBalance)."""
        head = self.head
        state = self.state(head)
        state.set_balance(Address(address), balance)
        state.persist()
        self._state_roots[head.hash] = state.state_root
        self.state_changed()
        self._save()

    def next_timestamp(self, parent: BlockRecord, requested: int | None = None) -> int:
        """A timestamp for a child of ``parent``: now, but later than any block built so far, so
        that a block rebuilt at the same height after a rewind never repeats an old hash."""
        if requested is None:
            requested = self.next_block_timestamp
        if requested is not None:
            return max(requested, parent.timestamp + 1)
        now = int(time.time()) + self.time_offset
        return max(now, parent.timestamp + 1, self._last_timestamp + 1)

    def child_header(self, parent: BlockRecord, timestamp: int) -> BlockHeaderAPI:
        """The header template of the next block on ``parent``."""
        parent_header = self.evm.get_block_header_by_hash(Hash32(bytes.fromhex(parent.hash[2:])))
        vm_class = self.vm_class(parent.number + 1)
        params: dict[str, Any] = {
            "timestamp": timestamp,
            "gas_limit": parent_header.gas_limit,
            "coinbase": ZERO_ADDRESS,
            "mix_hash": os.urandom(32),  # prevrandao; also keeps rebuilt blocks distinct
        }
        if parent.hash in self._state_roots:  # a dev method changed the parent's state
            params["state_root"] = self._state_roots[parent.hash]
        if issubclass(vm_class, CancunVM):
            params["parent_beacon_block_root"] = ZERO_HASH32
        return self.evm.create_header_from_parent(parent_header, **params)

    def decode_transaction(self, raw: bytes) -> Any:
        """A signed transaction as the next block's VM reads it.

        A blob transaction may come in its network form (blobs, commitments and proofs, EIP-4844 or
        EIP-7594 wrapper); the
        sidecar is dropped, as it never enters a block. Its proofs are not verified here.
        """
        builder = self.vm_class(self.head.number + 1).get_transaction_builder()
        if raw[:1] == BLOB_TX_TYPE:
            fields = rlp.decode(raw[1:])
            if len(fields) in (4, 5) and isinstance(fields[0], list):
                raw = BLOB_TX_TYPE + rlp.encode(fields[0])
        return builder.decode(raw)

    def _assemble(self, header: BlockHeaderAPI, txs: Sequence[Any]) -> Any:
        vm = self.evm.get_vm(header)
        fields: dict[str, Any] = {"header": header, "transactions": list(txs), "uncles": []}
        if isinstance(vm, ShanghaiVM):
            fields["withdrawals"] = []
        template = vm.get_block_class()(**fields)
        return vm.import_block(template).block

    def build_block(
        self, parent: BlockRecord, txs: Sequence[Any], *, timestamp: int
    ) -> tuple[BlockRecord, list[Any]]:
        """Execute ``txs`` in a new block on ``parent`` and persist it (not yet adopted).

        Returns the rendered block and the transactions left out because they failed validation
        against the block (wrong nonce, funds gone, ...).
        """
        block, rejected = self._execute(parent, txs, timestamp)
        self.evm.persist_block(block)
        return self._render(block), rejected

    def pending_block(
        self, parent: BlockRecord, txs: Sequence[Any], *, timestamp: int
    ) -> BlockRecord:
        """The block ``txs`` would make on ``parent``, executed but neither persisted nor adopted
        (geth's pending block)."""
        block, _ = self._execute(parent, txs, timestamp)
        return self._render(block)

    def _execute(
        self, parent: BlockRecord, txs: Sequence[Any], timestamp: int
    ) -> tuple[Any, list[Any]]:
        header = self.child_header(parent, timestamp)
        try:
            block = self._assemble(header, txs)
            rejected: list[Any] = []
        except ValidationError:
            included: list[Any] = []
            rejected = []
            for tx in txs:  # rare: find the offenders one by one
                try:
                    self._assemble(header, [*included, tx])
                except ValidationError:
                    rejected.append(tx)
                else:
                    included.append(tx)
            block = self._assemble(header, included)
        return block, rejected

    def import_evm_block(self, block: Any) -> BlockRecord:
        """Execute and persist an externally produced block, every check on but the seal."""
        result = self.evm.import_block(block, perform_validation=True)
        return self._render(result.imported_block)

    def _render(self, block: Any) -> BlockRecord:
        receipts = block.get_receipts(self.evm.chaindb) if block.transactions else ()
        vm_class = self.vm_class(block.number)
        return format_block(
            block, receipts, blob_fee_fraction=self.schedule.blob_fee_fraction(vm_class)
        )

    # ----------------------------------------------------------------------------------------------
    # State reads and calls (py-evm work on immutable state)

    def state(self, record: BlockRecord) -> StateAPI:
        """The state after ``record``."""
        return self.evm.get_vm(self.header(record)).state

    def _call_state(self, record: BlockRecord) -> StateAPI:
        header = self.header(record)
        if getattr(header, "base_fee_per_gas", None) is not None:
            header = header.copy(base_fee_per_gas=0)  # calls may pay nothing, as in geth
        return self.evm.get_vm(header).state

    def _call_transaction(self, state: StateAPI, request: CallRequest, gas: int) -> Any:
        vm_class = self.vm_class(state.block_number)
        unsigned = vm_class.create_unsigned_transaction(
            nonce=state.get_nonce(Address(request.sender)),
            gas_price=request.gas_price,
            gas=gas,
            to=Address(request.to),
            value=request.value,
            data=request.data,
        )
        return SpoofTransaction(unsigned, from_=request.sender)

    def call(self, record: BlockRecord, request: CallRequest) -> Any:
        """Run ``request`` on the state after ``record`` and return py-evm's computation."""
        state = self._call_state(record)
        gas = request.gas if request.gas is not None else min(state.gas_limit, DEFAULT_CALL_GAS)
        tx = self._call_transaction(state, request, gas)
        snapshot = state.snapshot()
        try:
            return state.apply_transaction(tx)
        finally:
            state.revert(snapshot)

    def estimate_gas(self, record: BlockRecord, request: CallRequest) -> int:
        """The least gas with which ``request`` succeeds (binary search, as geth).

        Raises :class:`GasEstimateFailed` holding the failing computation when it fails even with
        the cap.
        """
        state = self._call_state(record)
        cap = request.gas if request.gas is not None else state.gas_limit

        def attempt(gas: int) -> Any:
            snapshot = state.snapshot()
            try:
                return state.apply_transaction(self._call_transaction(state, request, gas))
            finally:
                state.revert(snapshot)

        low = int(self._call_transaction(state, request, cap).intrinsic_gas) - 1
        try:
            full = attempt(cap)
        except ValidationError as exc:
            raise GasEstimateFailed(None, str(exc)) from None
        if full.is_error:
            raise GasEstimateFailed(full, f"gas required exceeds allowance ({cap})")
        high = cap
        # geth's first guess: what the call used plus its refund, with the 1/64 kept back by calls.
        guess = (full.get_gas_used() + full.get_gas_refund()) * 64 // 63
        if low < guess < high:
            if _fails(attempt, guess):
                low = guess
            else:
                high = guess
        while high - low > 1:
            middle = (low + high) // 2
            if _fails(attempt, middle):
                low = middle
            else:
                high = middle
        return high

    def account(self, record: BlockRecord, address: bytes) -> tuple[int, int]:
        """(nonce, balance) of ``address`` after ``record``."""
        state = self.state(record)
        return state.get_nonce(Address(address)), state.get_balance(Address(address))


class GasEstimateFailed(Exception):
    """The transaction fails even with all the gas allowed."""

    def __init__(self, computation: Any, message: str) -> None:
        super().__init__(message)
        self.computation = computation


def _fails(attempt: Any, gas: int) -> bool:
    try:
        return bool(attempt(gas).is_error)
    except ValidationError:
        return True
