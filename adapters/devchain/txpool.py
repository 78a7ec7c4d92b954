"""Submitted transactions waiting for a block, and their admission checks (sans-io).

Texts follow geth's transaction pool so clients recognise them. The pool keeps, per sender, the
transactions by nonce; a block takes each sender's run of consecutive nonces starting at the
account's nonce, senders in the order they first submitted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

PRICE_BUMP_PERCENT: Final = 10


class TxRejected(Exception):
    """A transaction the pool does not take; ``str()`` is geth's reason."""


@dataclass(frozen=True, slots=True)
class Account:
    """The sender's account as the next block will see it."""

    nonce: int
    balance: int


def max_cost(tx: Any) -> int:
    """Upper bound of what ``tx`` can cost its sender (geth's ``tx.Cost()``)."""
    if tx.type_id in (None, 0, 1):
        cost = int(tx.gas) * int(tx.gas_price)
    else:
        cost = int(tx.gas) * int(tx.max_fee_per_gas)
    if tx.type_id == 3:
        cost += len(tx.blob_versioned_hashes) * 2**17 * int(tx.max_fee_per_blob_gas)
    return cost + int(tx.value)


def fee_cap(tx: Any) -> int:
    return int(tx.gas_price) if tx.type_id in (None, 0, 1) else int(tx.max_fee_per_gas)


def tip_cap(tx: Any) -> int:
    return int(tx.gas_price) if tx.type_id in (None, 0, 1) else int(tx.max_priority_fee_per_gas)


def tx_chain_id(tx: Any) -> int | None:
    if tx.type_id in (None, 0):
        return (int(tx.v) - 35) // 2 if int(tx.v) >= 35 else None
    return int(tx.chain_id)


def check_transaction(
    tx: Any,
    sender: bytes,
    account: Account,
    *,
    chain_id: int,
    base_fee: int | None,
    gas_limit: int,
) -> None:
    """Raise :class:`TxRejected` unless ``tx`` may enter the pool."""
    own_chain = tx_chain_id(tx)
    if own_chain is not None and own_chain != chain_id:
        raise TxRejected(f"invalid chain id for signer: have {own_chain} want {chain_id}")
    if tx.gas > gas_limit:
        raise TxRejected("exceeds block gas limit")
    if tip_cap(tx) > fee_cap(tx):
        raise TxRejected(
            "max priority fee per gas higher than max fee per gas: "
            f"address 0x{sender.hex()}, maxPriorityFeePerGas: {tip_cap(tx)}, "
            f"maxFeePerGas: {fee_cap(tx)}"
        )
    if tx.nonce < account.nonce:
        raise TxRejected(f"nonce too low: next nonce {account.nonce}, tx nonce {tx.nonce}")
    intrinsic = int(tx.intrinsic_gas)
    if tx.gas < intrinsic:
        raise TxRejected(f"intrinsic gas too low: gas {tx.gas}, minimum needed {intrinsic}")
    if base_fee is not None and fee_cap(tx) < base_fee:
        raise TxRejected(
            "max fee per gas less than block base fee: "
            f"address 0x{sender.hex()}, maxFeePerGas: {fee_cap(tx)}, baseFee: {base_fee}"
        )
    cost = max_cost(tx)
    if account.balance < cost:
        raise TxRejected(
            "insufficient funds for gas * price + value: "
            f"balance {account.balance}, tx cost {cost}, overshot {cost - account.balance}"
        )


@dataclass(slots=True)
class PooledTx:
    tx: Any
    sender: bytes
    hash: bytes


class TxPool:
    """Pending transactions by sender and nonce."""

    def __init__(self) -> None:
        self._by_sender: dict[bytes, dict[int, PooledTx]] = {}
        self._by_hash: dict[bytes, PooledTx] = {}

    def __len__(self) -> int:
        return len(self._by_hash)

    def get(self, tx_hash: bytes) -> PooledTx | None:
        return self._by_hash.get(tx_hash)

    def add(self, tx: Any, sender: bytes) -> None:
        """Queue ``tx``; one at an already-queued nonce must pay 10% more to replace it."""
        if tx.hash in self._by_hash:
            raise TxRejected("already known")
        queued = self._by_sender.setdefault(sender, {})
        previous = queued.get(tx.nonce)
        if previous is not None:
            bump = 100 + PRICE_BUMP_PERCENT
            if (
                fee_cap(tx) * 100 < fee_cap(previous.tx) * bump
                or tip_cap(tx) * 100 < tip_cap(previous.tx) * bump
            ):
                raise TxRejected("replacement transaction underpriced")
            del self._by_hash[previous.hash]
        entry = PooledTx(tx, sender, tx.hash)
        queued[tx.nonce] = entry
        self._by_hash[tx.hash] = entry

    def pending_nonce(self, sender: bytes, account_nonce: int) -> int:
        """The nonce after the sender's queued run of consecutive transactions."""
        queued = self._by_sender.get(sender, {})
        nonce = account_nonce
        while nonce in queued:
            nonce += 1
        return nonce

    def executable(self, nonce_of: Callable[[bytes], int]) -> list[PooledTx]:
        """The transactions that can go into the next block, in inclusion order."""
        ready: list[PooledTx] = []
        for sender, queued in self._by_sender.items():
            nonce = nonce_of(sender)
            while nonce in queued:
                ready.append(queued[nonce])
                nonce += 1
        return ready

    def discard(self, entries: Iterator[PooledTx] | list[PooledTx]) -> None:
        """Drop ``entries`` (included in a block, or found invalid)."""
        for entry in entries:
            queued = self._by_sender.get(entry.sender)
            if queued is not None and queued.get(entry.tx.nonce) is entry:
                del queued[entry.tx.nonce]
                if not queued:
                    del self._by_sender[entry.sender]
            if self._by_hash.get(entry.hash) is entry:
                del self._by_hash[entry.hash]

    def prune(self, nonce_of: Callable[[bytes], int]) -> None:
        """Drop transactions whose nonce the chain has passed."""
        stale = [
            entry
            for sender, queued in self._by_sender.items()
            for nonce, entry in queued.items()
            if nonce < nonce_of(sender)
        ]
        self.discard(stale)

    def clear(self) -> None:
        self._by_sender.clear()
        self._by_hash.clear()
