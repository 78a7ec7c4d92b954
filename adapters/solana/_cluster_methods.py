"""The cluster methods of Solana's RPC answered as a one-node cluster, sans-io, as
solana-test-validator answers them: one identity that leads every slot, one vote account that
votes on every slot with all the stake, a fixed inflation schedule (Solana's defaults) that this
runtime never pays out, no snapshots. The answers that are of that kind are listed in
docs/solana.md ("A one-node cluster")."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from schemas.errors import RpcError

from . import _wire as wire
from ._errors import invalid_params
from ._ledger import SLOTS_PER_EPOCH, SUPPLY_OWNERS, Ledger, writable_keys
from ._transaction_view import compute_unit_price

#: RPC method name -> :class:`ClusterMethods` handler attribute.
CLUSTER_HANDLERS: Final[dict[str, str]] = {
    "getRecentPrioritizationFees": "get_recent_prioritization_fees",
    "getEpochSchedule": "get_epoch_schedule",
    "getRecentPerformanceSamples": "get_recent_performance_samples",
    "getSupply": "get_supply",
    "getLargestAccounts": "get_largest_accounts",
    "getBlockCommitment": "get_block_commitment",
    "getBlocksWithLimit": "get_blocks_with_limit",
    "getIdentity": "get_identity",
    "getSlotLeader": "get_slot_leader",
    "getSlotLeaders": "get_slot_leaders",
    "getClusterNodes": "get_cluster_nodes",
    "getLeaderSchedule": "get_leader_schedule",
    "getVoteAccounts": "get_vote_accounts",
    "getInflationGovernor": "get_inflation_governor",
    "getInflationRate": "get_inflation_rate",
    "getInflationReward": "get_inflation_reward",
    "getStakeMinimumDelegation": "get_stake_minimum_delegation",
    "getHighestSnapshotSlot": "get_highest_snapshot_slot",
    "minimumLedgerSlot": "minimum_ledger_slot",
}

#: The stake of the one vote account (all of the cluster's).
ACTIVATED_STAKE: Final = 500_000 * 1_000_000_000
#: Slots ``getRecentPrioritizationFees`` covers (Solana's cache holds 150 blocks).
PRIORITIZATION_SLOTS: Final = 150
MAX_PRIORITIZATION_ADDRESSES: Final = 128
#: Seconds per performance sample, and samples kept at most (Solana's).
SAMPLE_PERIOD: Final = 60
MAX_PERFORMANCE_SAMPLES: Final = 720
MAX_SLOT_LEADERS: Final = 5000
MAX_BLOCKS_LIMIT: Final = 500_000
LARGEST_ACCOUNTS: Final = 20
MAX_INFLATION_REWARD_ADDRESSES: Final = 256
#: Solana's default inflation schedule (``solana_inflation::Inflation::default``).
INFLATION: Final = {
    "initial": 0.08,
    "terminal": 0.015,
    "taper": 0.15,
    "foundation": 0.05,
    "foundationTerm": 7.0,
}
#: Slots a year at Solana's target of 400 ms a slot (what the inflation schedule counts in).
SLOTS_PER_YEAR: Final = 365.242_199 * 24 * 60 * 60 / 0.4
#: The stake program's minimum delegation (1 lamport: the 1-SOL minimum is a feature not active).
STAKE_MINIMUM_DELEGATION: Final = 1


class NoSnapshot(RpcError):
    code = -32008
    default_message = "No snapshot"


ConfigCheck = Callable[[Any], Mapping[str, Any]]
Wrap = Callable[[Any], dict[str, Any]]


class ClusterMethods:
    """The cluster methods; ``config`` and ``wrap`` are :class:`~._methods.SolanaMethods`' own,
    ``version`` and ``feature_set`` what ``getVersion`` answers."""

    def __init__(
        self, ledger: Ledger, config: ConfigCheck, wrap: Wrap, version: str, feature_set: int
    ) -> None:
        self.ledger = ledger
        self._config = config
        self._wrap = wrap
        self._version = version
        self._feature_set = feature_set
        self._schedule: list[int] | None = None

    @property
    def _identity(self) -> str:
        return str(self.ledger.identity.pubkey())

    # -- fees and performance --------------------------------------------------------------------

    def get_recent_prioritization_fees(self, params: list[Any], now: float) -> Any:
        """Per closed slot of the last 150, the lowest compute-unit price (micro-lamports) a
        transaction paid among those locking any of the addresses for writing (all of them
        without addresses); 0 for a slot with none."""
        (addresses,) = wire.positional(params, 0, 1)
        wanted = {
            str(wire.pubkey(a))
            for a in wire.bounded_list(addresses or [], MAX_PRIORITIZATION_ADDRESSES)
        }
        closed = [slot for slot in self.ledger.slots if slot < self.ledger.slot]
        fees = []
        for slot in closed[-PRIORITIZATION_SLOTS:]:
            prices = [
                compute_unit_price(record.tx)
                for signature in self.ledger.slots[slot].signatures
                if (record := self.ledger.transactions.get(signature)) is not None
                and record.err is None
                and (not wanted or wanted & {str(k) for k in writable_keys(record.tx)})
            ]
            fees.append({"slot": slot, "prioritizationFee": min(prices, default=0)})
        return fees

    def get_recent_performance_samples(self, params: list[Any], now: float) -> Any:
        """The kept slots in windows of 60 seconds of block time, newest first."""
        (limit_value,) = wire.positional(params, 0, 1)
        limit = MAX_PERFORMANCE_SAMPLES if limit_value is None else wire.u64(limit_value, "limit")
        if limit > MAX_PERFORMANCE_SAMPLES:
            raise invalid_params(f"Invalid limit; max {MAX_PERFORMANCE_SAMPLES}")
        windows: dict[int, dict[str, int]] = {}
        for slot, record in self.ledger.slots.items():
            window = windows.setdefault(
                record.block_time // SAMPLE_PERIOD, {"slot": slot, "slots": 0, "transactions": 0}
            )
            window["slot"] = slot
            window["slots"] += 1
            window["transactions"] += len(record.signatures)
        samples = [
            {
                "slot": window["slot"],
                "numTransactions": window["transactions"],
                "numNonVoteTransactions": window["transactions"],
                "numSlots": window["slots"],
                "samplePeriodSecs": SAMPLE_PERIOD,
            }
            for _, window in sorted(windows.items(), reverse=True)
        ]
        return samples[:limit]

    # -- supply -------------------------------------------------------------------------------

    def get_supply(self, params: list[Any], now: float) -> Any:
        """The lamports in existence; the faucet's are the non-circulating ones."""
        options = self._config(wire.positional(params, 0, 1)[0])
        faucet = self.ledger.balance(self.ledger.faucet.pubkey())
        total = self.ledger.supply
        listed = (
            []
            if options.get("excludeNonCirculatingAccountsList")
            else [str(self.ledger.faucet.pubkey())]
        )
        return self._wrap(
            {
                "total": total,
                "circulating": total - faucet,
                "nonCirculating": faucet,
                "nonCirculatingAccounts": listed,
            }
        )

    def get_largest_accounts(self, params: list[Any], now: float) -> Any:
        options = self._config(wire.positional(params, 0, 1)[0])
        kind = options.get("filter")
        if kind not in (None, "circulating", "nonCirculating"):
            raise invalid_params(
                f"unknown variant `{kind}`, expected `circulating` or `nonCirculating`"
            )
        faucet = self.ledger.faucet.pubkey()
        accounts = [
            (account.lamports, key)
            for owner in SUPPLY_OWNERS
            for key, account in self.ledger.program_accounts(owner)
            if kind is None or (key == faucet) == (kind == "nonCirculating")
        ]
        accounts.sort(key=lambda item: (-item[0], bytes(item[1])))
        return self._wrap(
            [
                {"address": str(key), "lamports": lamports}
                for lamports, key in accounts[:LARGEST_ACCOUNTS]
            ]
        )

    # -- blocks and leaders ---------------------------------------------------------------------

    def get_block_commitment(self, params: list[Any], now: float) -> Any:
        """Every closed block is rooted at once, and Solana keeps no commitment array for a
        rooted block: ``commitment`` is null, ``totalStake`` the vote account's."""
        (slot,) = wire.positional(params, 1, 1)
        wire.u64(slot, "slot")
        return {"commitment": None, "totalStake": ACTIVATED_STAKE}

    def get_blocks_with_limit(self, params: list[Any], now: float) -> Any:
        start_value, limit_value, options = wire.positional(params, 2, 3)
        self._config(options)
        start = wire.u64(start_value, "start slot")
        limit = wire.u64(limit_value, "limit")
        if limit > MAX_BLOCKS_LIMIT:
            raise invalid_params(f"Limit too large; max {MAX_BLOCKS_LIMIT}")
        first = max(start, self.ledger.first_available)
        return list(range(first, min(first + limit, self.ledger.slot + 1)))

    def get_identity(self, params: list[Any], now: float) -> Any:
        wire.positional(params, 0, 0)
        return {"identity": self._identity}

    def get_slot_leader(self, params: list[Any], now: float) -> Any:
        self._config(wire.positional(params, 0, 1)[0])
        return self._identity

    def get_slot_leaders(self, params: list[Any], now: float) -> Any:
        start, limit_value = wire.positional(params, 2, 2)
        wire.u64(start, "start slot")
        limit = wire.u64(limit_value, "limit")
        if not 1 <= limit <= MAX_SLOT_LEADERS:
            raise invalid_params(f"Invalid limit; max {MAX_SLOT_LEADERS}")
        return [self._identity] * limit

    def get_cluster_nodes(self, params: list[Any], now: float) -> Any:
        """The one node; its addresses are null: it gossips with no one, takes transactions
        only through this RPC, and does not know the address the broker serves it on."""
        wire.positional(params, 0, 0)
        return [
            {
                "pubkey": self._identity,
                "gossip": None,
                "tvu": None,
                "tpu": None,
                "tpuQuic": None,
                "tpuForwards": None,
                "tpuForwardsQuic": None,
                "tpuVote": None,
                "serveRepair": None,
                "rpc": None,
                "pubsub": None,
                "version": self._version,
                "featureSet": self._feature_set,
                "shredVersion": None,
            }
        ]

    def get_leader_schedule(self, params: list[Any], now: float) -> Any:
        """The identity leads every slot of the epoch (known for this epoch and the next)."""
        slot_value, raw = wire.positional(params, 0, 2)
        if isinstance(slot_value, dict):  # [config]
            slot_value, raw = None, slot_value
        options = self._config(raw)
        slot = self.ledger.slot if slot_value is None else wire.u64(slot_value, "slot")
        if slot // SLOTS_PER_EPOCH > self.ledger.slot // SLOTS_PER_EPOCH + 1:
            return None
        identity = options.get("identity")
        if identity is not None and str(wire.pubkey(identity)) != self._identity:
            return {}
        if self._schedule is None:
            self._schedule = list(range(SLOTS_PER_EPOCH))
        return {self._identity: self._schedule}

    def get_vote_accounts(self, params: list[Any], now: float) -> Any:
        """The one vote account, voting on every slot: one credit a slot."""
        options = self._config(wire.positional(params, 0, 1)[0])
        vote = str(self.ledger.vote_account)
        wanted = options.get("votePubkey")
        if wanted is not None and str(wire.pubkey(wanted)) != vote:
            return {"current": [], "delinquent": []}
        slot = self.ledger.slot
        last_vote = max(slot - 1, 0)
        epoch = slot // SLOTS_PER_EPOCH
        credits = [
            [e, min(last_vote, (e + 1) * SLOTS_PER_EPOCH), e * SLOTS_PER_EPOCH]
            for e in range(max(0, epoch - 4), epoch + 1)
        ]
        return {
            "current": [
                {
                    "votePubkey": vote,
                    "nodePubkey": self._identity,
                    "activatedStake": ACTIVATED_STAKE,
                    "epochVoteAccount": True,
                    "commission": 0,
                    "lastVote": last_vote,
                    "epochCredits": credits,
                    "rootSlot": last_vote,
                }
            ],
            "delinquent": [],
        }

    def get_epoch_schedule(self, params: list[Any], now: float) -> Any:
        wire.positional(params, 0, 0)
        return {
            "slotsPerEpoch": SLOTS_PER_EPOCH,
            "leaderScheduleSlotOffset": SLOTS_PER_EPOCH,
            "warmup": False,
            "firstNormalEpoch": 0,
            "firstNormalSlot": 0,
        }

    # -- inflation and stake --------------------------------------------------------------------

    def get_inflation_governor(self, params: list[Any], now: float) -> Any:
        self._config(wire.positional(params, 0, 1)[0])
        return dict(INFLATION)

    def get_inflation_rate(self, params: list[Any], now: float) -> Any:
        """The schedule's rates for this epoch (Solana's formula: the initial rate tapering
        each year to the terminal one, 5 % of it to the foundation for 7 years)."""
        wire.positional(params, 0, 0)
        epoch = self.ledger.slot // SLOTS_PER_EPOCH
        years = epoch * SLOTS_PER_EPOCH / SLOTS_PER_YEAR
        total = max(INFLATION["terminal"], INFLATION["initial"] * (1 - INFLATION["taper"]) ** years)
        foundation = total * INFLATION["foundation"] if years < INFLATION["foundationTerm"] else 0.0
        return {
            "total": total,
            "validator": total - foundation,
            "foundation": foundation,
            "epoch": epoch,
        }

    def get_inflation_reward(self, params: list[Any], now: float) -> Any:
        """``null`` for every address: this runtime pays no inflation rewards."""
        addresses, raw = wire.positional(params, 1, 2)
        listed = wire.bounded_list(addresses, MAX_INFLATION_REWARD_ADDRESSES)
        for address in listed:
            wire.pubkey(address)
        options = self._config(raw)
        wire.optional_u64(options, "epoch")
        return [None] * len(listed)

    def get_stake_minimum_delegation(self, params: list[Any], now: float) -> Any:
        self._config(wire.positional(params, 0, 1)[0])
        return self._wrap(STAKE_MINIMUM_DELEGATION)

    def get_highest_snapshot_slot(self, params: list[Any], now: float) -> Any:
        """-32008: this node takes no snapshots."""
        wire.positional(params, 0, 0)
        raise NoSnapshot()

    def minimum_ledger_slot(self, params: list[Any], now: float) -> Any:
        wire.positional(params, 0, 0)
        return self.ledger.first_available
