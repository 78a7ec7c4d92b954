"""The Solana dev ledger, sans-io: an in-process ``LiteSVM`` with the slots, blockhashes and
transaction history a node keeps around it. Every call takes ``now`` (unix seconds) and returns what
happened; the adapter owns time and tasks.

Blockhashes are the ledger's own (LiteSVM's blockhash check is off): slot ``n``'s is the SHA-256 of
slot ``n - 1``'s and ``n``, slot 0's the genesis hash, made from the ``genesis_seed`` option (or
claimed with ``genesis_hash``); a
blockhash is valid for 150 slots, as on Solana. Every slot is final as soon as it is produced (one
node, no forks), so every commitment level reads the same state.
"""

from __future__ import annotations

import hashlib
import random
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from solders.account import Account
from solders.epoch_schedule import EpochSchedule
from solders.hash import Hash
from solders.keypair import Keypair
from solders.litesvm import LiteSVM
from solders.message import Message
from solders.pubkey import Pubkey
from solders.system_program import ID as SYSTEM_PROGRAM
from solders.system_program import TransferParams, transfer
from solders.transaction import Transaction, VersionedTransaction
from solders.transaction_metadata import FailedTransactionMetadata, TransactionMetadata

from adapters._base58 import b58decode, b58encode
from adapters._ed25519 import derive_keypairs

from ._events import (
    AccountEvent,
    ClosedSlot,
    InnerInstruction,
    SlotEvent,
    SolanaEvent,
    TransactionEvent,
    TransactionRecord,
)
from ._memo_logs import MEMO_V3, as_released
from ._options import SolanaDevOptions
from ._token import (
    NATIVE_MINT,
    TOKEN_PROGRAM,
    TOKEN_PROGRAMS,
    account_amount,
    account_mint,
    account_owner,
    is_token_account,
    mint_decimals,
    native_mint_data,
    token_amount,
)

#: Slots a blockhash stays valid for (Solana's MAX_PROCESSING_AGE).
BLOCKHASH_VALIDITY: Final = 150
SLOTS_PER_EPOCH: Final = 432_000
LAMPORTS_PER_SIGNATURE: Final = 5_000
FAUCET_LAMPORTS: Final = 10**18
#: Demo transfers per timed slot, and their size in lamports.
DEMO_TRANSFERS: Final = 2
DEMO_LAMPORTS: Final = (1_000, 1_000_000)
#: The owners of every account at genesis (the supply is counted over them).
SUPPLY_OWNERS: Final = tuple(
    Pubkey.from_string(owner)
    for owner in (
        "11111111111111111111111111111111",
        "NativeLoader1111111111111111111111111111111",
        "BPFLoader1111111111111111111111111111111111",
        "BPFLoader2111111111111111111111111111111111",
        "BPFLoaderUpgradeab1e11111111111111111111111",
        "Sysvar1111111111111111111111111111111111111",
        "Feature111111111111111111111111111111111111",
        "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
        "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb",
    )
)
#: Transactions (and slots) kept for getTransaction, getSignatureStatuses and
#: getSignaturesForAddress: a dev node producing slots for days stays bounded.
MAX_HISTORY: Final = 100_000


def _genesis_hash(options: SolanaDevOptions) -> bytes:
    if options.genesis_hash is not None:  # claimed (checked by the options: 32 bytes)
        return b58decode(options.genesis_hash)
    return hashlib.sha256(options.genesis_seed.encode()).digest()


@dataclass(frozen=True, slots=True)
class SlotRecord:
    slot: int
    parent: int
    blockhash: str
    block_time: int
    signatures: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Simulation:
    """A transaction run without keeping its effects (``simulateTransaction``, preflight)."""

    err: Any
    logs: tuple[str, ...]
    units: int
    fee: int
    accounts: tuple[tuple[Pubkey, Account], ...]


def writable_keys(tx: VersionedTransaction) -> list[Pubkey]:
    """The static account keys ``tx`` may write (by its message header)."""
    keys = list(tx.message.account_keys)
    header = tx.message.header
    signed = header.num_required_signatures
    writable_signed = signed - header.num_readonly_signed_accounts
    writable_unsigned_end = len(keys) - header.num_readonly_unsigned_accounts
    return [
        key
        for index, key in enumerate(keys)
        if index < writable_signed or signed <= index < writable_unsigned_end
    ]


def _inner_instructions(
    per_instruction: Sequence[Sequence[Any]],
) -> tuple[tuple[int, tuple[InnerInstruction, ...]], ...]:
    """LiteSVM's inner instructions as a record keeps them (the top-level ones that made none
    are left out, as Solana leaves them out)."""
    kept = []
    for index, inner in enumerate(per_instruction):
        if inner:
            kept.append(
                (
                    index,
                    tuple(
                        (
                            item.instruction().program_id_index,
                            tuple(item.instruction().accounts),
                            bytes(item.instruction().data),
                            item.stack_height(),
                        )
                        for item in inner
                    ),
                )
            )
    return tuple(kept)


class Ledger:
    """One Solana dev chain: accounts in LiteSVM, slots and history here."""

    def __init__(self, options: SolanaDevOptions, now: float) -> None:
        self.svm = LiteSVM().with_blockhash_check(False).with_sigverify(False)
        # Epochs of 432,000 slots from the first (getEpochInfo, getEpochSchedule), with no
        # warm-up epochs: the runtime's sysvar says the same.
        self.svm.set_epoch_schedule(EpochSchedule.without_warmup())
        self.genesis_hash = _genesis_hash(options)
        # The one node of this cluster: its identity (leader of every slot) and vote account.
        self.identity = Keypair.from_seed(hashlib.sha256(self.genesis_hash + b"identity").digest())
        self.vote_account = Keypair.from_seed(
            hashlib.sha256(self.genesis_hash + b"vote").digest()
        ).pubkey()
        self.keypairs = derive_keypairs(options.mnemonic, options.accounts)
        self.faucet = Keypair.from_seed(hashlib.sha256(self.genesis_hash + b"faucet").digest())
        for keypair in self.keypairs:
            self._fund(keypair.pubkey(), options.lamports)
        self._fund(self.faucet.pubkey(), FAUCET_LAMPORTS)
        # Every cluster has the native mint from genesis: without it a wrapped-SOL account
        # cannot be made (the token program answers IncorrectProgramId).
        native = native_mint_data()
        rent = self.svm.minimum_balance_for_rent_exemption(len(native))
        self.svm.set_account(NATIVE_MINT, Account(rent, native, TOKEN_PROGRAM, False, 0))
        self._carried_memo = MEMO_V3 not in {program.id for program in options.programs}
        for program in options.programs:
            # A file that is not an SBF program is the operator's error: the adapter's start
            # turns it into a ConfigError.
            self.svm.add_program_from_file(Pubkey.from_string(program.id), Path(program.path))
        #: Lamports at genesis; fees are burned (no leader collects them), so the supply is
        #: this less :attr:`burned`.
        self.genesis_supply = sum(
            account.lamports for owner in SUPPLY_OWNERS for _, account in self._owned(owner)
        )
        self.burned = 0
        self.slot = 0
        self._blockhashes: dict[bytes, int] = {self.genesis_hash: 0}
        self._recent: deque[bytes] = deque([self.genesis_hash])
        self._slot_signatures: list[str] = []
        self.slots: dict[int, SlotRecord] = {}
        self.transactions: dict[str, TransactionRecord] = {}  # oldest first
        self._by_address: dict[str, list[str]] = {}
        self.transaction_count = 0
        self._now = int(now)
        self._random = random.Random(self.genesis_hash)
        self._events: list[SolanaEvent] = []
        self._sync_clock()

    def _logs(self, logs: Sequence[str]) -> tuple[str, ...]:
        """A transaction's logs, Memo v3's in the released program's words while the build
        LiteSVM carries runs it (see :mod:`._memo_logs`)."""
        return as_released(logs) if self._carried_memo else tuple(logs)

    def _fund(self, address: Pubkey, lamports: int) -> None:
        self.svm.set_account(address, Account(lamports, b"", SYSTEM_PROGRAM, False, 0))

    def _sync_clock(self) -> None:
        self.svm.warp_to_slot(self.slot)
        clock = self.svm.get_clock()
        clock.unix_timestamp = self._now
        clock.epoch = self.slot // SLOTS_PER_EPOCH
        self.svm.set_clock(clock)

    @staticmethod
    def genesis_of(options: SolanaDevOptions) -> str:
        """The genesis hash (base58) a ledger with ``options`` will have."""
        return b58encode(_genesis_hash(options))

    # -- identity -----------------------------------------------------------------------------

    @property
    def genesis(self) -> str:
        """The genesis hash in base58, as ``getGenesisHash`` answers."""
        return b58encode(self.genesis_hash)

    @property
    def blockhash(self) -> bytes:
        return self._recent[-1]

    @property
    def block_height(self) -> int:
        return self.slot  # no skipped slots on a one-node chain

    def blockhash_valid(self, value: bytes) -> bool:
        slot = self._blockhashes.get(value)
        return slot is not None and slot + BLOCKHASH_VALIDITY >= self.slot

    def last_valid_block_height(self) -> int:
        return self.slot + BLOCKHASH_VALIDITY

    def last_valid_height_of(self, value: bytes) -> int:
        """The last block height a transaction on blockhash ``value`` may land at (Solana's: the
        height the blockhash was produced at + MAX_PROCESSING_AGE); one already passed for a
        blockhash the ledger does not know (expired, or never produced)."""
        slot = self._blockhashes.get(value)
        return self.block_height - 1 if slot is None else slot + BLOCKHASH_VALIDITY

    # -- slots --------------------------------------------------------------------------------

    def advance(self, now: float) -> SlotRecord:
        """Close the current slot and open the next one (with a new blockhash); the closed slot."""
        closed = self.block(self.slot)
        assert closed is not None
        previous = self.slots.get(closed.parent, closed)
        self.slots[self.slot] = closed
        if len(self.slots) > MAX_HISTORY:
            del self.slots[next(iter(self.slots))]
        self._slot_signatures = []
        self.slot += 1
        self._now = max(self._now, int(now))
        next_hash = hashlib.sha256(self.blockhash + self.slot.to_bytes(8, "little")).digest()
        self._blockhashes[next_hash] = self.slot
        self._recent.append(next_hash)
        while len(self._recent) > BLOCKHASH_VALIDITY + 1:
            del self._blockhashes[self._recent.popleft()]
        self._sync_clock()
        block = ClosedSlot(
            slot=closed.slot,
            parent=closed.parent,
            blockhash=closed.blockhash,
            previous_blockhash=previous.blockhash,
            block_time=closed.block_time,
            records=tuple(
                self.transactions[s] for s in closed.signatures if s in self.transactions
            ),
            timestamp_ms=int(now * 1000),
            vote_account=str(self.vote_account),
            vote_signature=self._vote_signature(closed.slot, closed.blockhash),
        )
        self._events.append(SlotEvent(self.slot, closed.slot, closed.slot, block))
        return closed

    def _vote_signature(self, slot: int, blockhash: str) -> str:
        message = str(self.vote_account).encode() + slot.to_bytes(8, "little")
        return b58encode(bytes(self.identity.sign_message(message + blockhash.encode())))

    def demo_traffic(self, count: int = DEMO_TRANSFERS) -> list[TransactionRecord]:
        """``count`` SOL transfers between random dev accounts, in the current slot."""
        if len(self.keypairs) < 2:
            return []
        records = []
        for _ in range(count):
            # The last two dev accounts are left alone, as on the dev chain (demo.SPARED): the
            # README's examples on them hold under `make run`.
            sender, receiver = self._random.sample(
                self.keypairs[: max(2, len(self.keypairs) - 2)], 2
            )
            lamports = self._random.randint(*DEMO_LAMPORTS)
            tx = self.transfer(sender, receiver.pubkey(), lamports)
            records.append(self.execute(tx))
        return records

    def transfer(self, sender: Keypair, to: Pubkey, lamports: int) -> VersionedTransaction:
        """A signed system transfer on the current blockhash."""
        instruction = transfer(
            TransferParams(from_pubkey=sender.pubkey(), to_pubkey=to, lamports=lamports)
        )
        message = Message([instruction], sender.pubkey())
        return VersionedTransaction.from_legacy(
            Transaction([sender], message, Hash.from_bytes(self.blockhash))
        )

    # -- transactions -------------------------------------------------------------------------

    def simulate(self, tx: VersionedTransaction, addresses: Sequence[Pubkey] = ()) -> Simulation:
        """Run ``tx`` on the current state without keeping anything."""
        fee = self.fee(tx)
        if not self.blockhash_valid(bytes(tx.message.recent_blockhash)):
            return Simulation("BlockhashNotFound", (), 0, fee, ())
        if str(tx.signatures[0]) in self.transactions:
            return Simulation("AlreadyProcessed", (), 0, fee, ())
        result = self.svm.simulate_transaction(tx)
        if isinstance(result, FailedTransactionMetadata):
            meta = result.meta()
            return Simulation(
                result.err(), self._logs(meta.logs()), meta.compute_units_consumed(), fee, ()
            )
        meta = result.meta()
        wanted = set(addresses)
        post = tuple((key, account) for key, account in result.post_accounts() if key in wanted)
        logs = self._logs(meta.logs())
        return Simulation(None, logs, meta.compute_units_consumed(), meta.fee(), post)

    def execute(self, tx: VersionedTransaction) -> TransactionRecord:
        """Land ``tx`` in the current slot (failed or not, as Solana with preflight skipped)."""
        keys = list(tx.message.account_keys)
        pre = tuple(self.balance(key) for key in keys)
        pre_tokens = self.token_balances(keys)
        result: TransactionMetadata | FailedTransactionMetadata = self.svm.send_transaction(tx)
        if isinstance(result, FailedTransactionMetadata):
            err: Any = result.err()
            meta = result.meta()
        else:
            err, meta = None, result
        signature = str(tx.signatures[0])
        record = TransactionRecord(
            signature=signature,
            slot=self.slot,
            block_time=self._now,
            tx=tx,
            err=err,
            logs=self._logs(meta.logs()),
            inner=_inner_instructions(meta.inner_instructions()),
            fee=meta.fee() if err is None else self.fee(tx),
            units=meta.compute_units_consumed(),
            accounts=tuple(str(key) for key in keys),
            pre_balances=pre,
            post_balances=tuple(self.balance(key) for key in keys),
            pre_token_balances=pre_tokens,
            post_token_balances=self.token_balances(keys),
        )
        self.transactions[signature] = record
        self.burned += record.fee
        self._slot_signatures.append(signature)
        self.transaction_count += 1
        for address in record.accounts:
            self._by_address.setdefault(address, []).append(signature)
        if len(self.transactions) > MAX_HISTORY:
            self._forget(next(iter(self.transactions)))
        self._events.append(TransactionEvent(record))
        for key in writable_keys(tx):
            account = self.account(key)
            self._events.append(
                AccountEvent(str(key), account, self.slot, self._token_decimals(account))
            )
        return record

    def _forget(self, signature: str) -> None:
        """Drop the oldest transaction from the history (it is the oldest of its addresses too)."""
        record = self.transactions.pop(signature)
        for address in dict.fromkeys(record.accounts):
            listed = self._by_address[address]
            listed.pop(0)
            if not listed:
                del self._by_address[address]

    def airdrop(self, to: Pubkey, lamports: int) -> VersionedTransaction:
        """A transfer from the faucet (``requestAirdrop``), for :meth:`execute`."""
        return self.transfer(self.faucet, to, lamports)

    def fee(self, tx: VersionedTransaction) -> int:
        return LAMPORTS_PER_SIGNATURE * tx.message.header.num_required_signatures

    def block(self, slot: int) -> SlotRecord | None:
        """Slot ``slot`` as a block: a produced one, or the current one with what it holds so far;
        None for a slot not reached yet or no longer kept."""
        if slot == self.slot:
            return SlotRecord(
                slot,
                max(slot - 1, 0),
                b58encode(self.blockhash),
                self._now,
                tuple(self._slot_signatures),
            )
        return self.slots.get(slot)

    @property
    def first_available(self) -> int:
        """The oldest slot still kept."""
        return next(iter(self.slots), self.slot)

    def take_events(self) -> list[SolanaEvent]:
        """What changed since the last call, in order."""
        events, self._events = self._events, []
        return events

    # -- reads --------------------------------------------------------------------------------

    def account(self, address: Pubkey) -> Account | None:
        account = self.svm.get_account(address)
        if account is None or (account.lamports == 0 and not account.data):
            return None
        return account

    def balance(self, address: Pubkey) -> int:
        account = self.account(address)
        return 0 if account is None else account.lamports

    def _token_decimals(self, account: Account | None) -> int | None:
        """The decimals of a token account's mint (None for any other account)."""
        if account is None or account.owner not in TOKEN_PROGRAMS:
            return None
        data = bytes(account.data)
        if not is_token_account(data):
            return None
        mint = self.account(Pubkey.from_bytes(account_mint(data)))
        return None if mint is None else mint_decimals(bytes(mint.data))

    def token_balances(self, keys: Sequence[Pubkey]) -> tuple[dict[str, Any], ...]:
        """The token accounts among ``keys`` as a transaction's ``preTokenBalances`` and
        ``postTokenBalances`` list them (by index among the keys)."""
        balances = []
        for index, key in enumerate(keys):
            account = self.account(key)
            decimals = self._token_decimals(account)
            if account is None or decimals is None:
                continue
            data = bytes(account.data)
            balances.append(
                {
                    "accountIndex": index,
                    "mint": b58encode(account_mint(data)),
                    "uiTokenAmount": token_amount(account_amount(data), decimals),
                    "owner": b58encode(account_owner(data)),
                    "programId": str(account.owner),
                }
            )
        return tuple(balances)

    def program_accounts(self, program: Pubkey) -> list[tuple[Pubkey, Account]]:
        return self._owned(program)

    def _owned(self, program: Pubkey) -> list[tuple[Pubkey, Account]]:
        return [
            (key, account)
            for key, account in self.svm.get_program_accounts(program)
            if account.lamports or account.data
        ]

    @property
    def supply(self) -> int:
        """Lamports in existence: genesis's less the fees burned."""
        return self.genesis_supply - self.burned

    def signatures_for(self, address: str) -> list[str]:
        """Signatures of the transactions naming ``address``, oldest first."""
        return self._by_address.get(address, [])
