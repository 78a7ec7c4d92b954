"""The Solana upstream adapter's options: a ``[networks.<name>]`` table of the config, typed and
checked (README "Solana upstream nodes")::

    [networks.solana-mainnet]
    chain = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"
    upstreams = [{ http = "https://node-a.example/rpc", ws = "wss://node-a.example/ws" }]
"""

from __future__ import annotations

from typing import ClassVar, Final

from adapters.base import NetworkSpec
from adapters.upstream import BaseUpstreamOptions
from schemas.errors import ConfigError

#: Node methods answered by forwarding; safe to send again to another upstream after a failure.
READ_METHODS: Final = (
    "getAccountInfo",
    "getBalance",
    "getBlock",
    "getBlockCommitment",
    "getBlockHeight",
    "getBlockProduction",
    "getBlockTime",
    "getBlocks",
    "getBlocksWithLimit",
    "getClusterNodes",
    "getEpochInfo",
    "getEpochSchedule",
    "getFeeForMessage",
    "getFirstAvailableBlock",
    "getGenesisHash",
    "getHealth",
    "getHighestSnapshotSlot",
    "getIdentity",
    "getInflationGovernor",
    "getInflationRate",
    "getInflationReward",
    "getLargestAccounts",
    "getLatestBlockhash",
    "getLeaderSchedule",
    "getMaxRetransmitSlot",
    "getMaxShredInsertSlot",
    "getMinimumBalanceForRentExemption",
    "getMultipleAccounts",
    "getProgramAccounts",
    "getRecentPerformanceSamples",
    "getRecentPrioritizationFees",
    "getSignatureStatuses",
    "getSignaturesForAddress",
    "getSlot",
    "getSlotLeader",
    "getSlotLeaders",
    "getStakeMinimumDelegation",
    "getSupply",
    "getTokenAccountBalance",
    "getTokenAccountsByDelegate",
    "getTokenAccountsByOwner",
    "getTokenLargestAccounts",
    "getTokenSupply",
    "getTransaction",
    "getTransactionCount",
    "getVersion",
    "getVoteAccounts",
    "isBlockhashValid",
    "minimumLedgerSlot",
    "simulateTransaction",
)

#: Methods with an effect: sent to another upstream only when the first never received them.
WRITE_METHODS: Final = ("sendTransaction", "requestAirdrop")

#: Served by the broker itself (Solana's PubSub, over the upstreams' blocks); never forwarded.
BROKER_METHODS: Final = frozenset(
    {
        f"{kind}{verb}"
        for kind in ("slot", "account", "signature", "logs", "program")
        for verb in ("Subscribe", "Unsubscribe")
    }
)


class SolanaUpstreamOptions(
    BaseUpstreamOptions, frozen=True, forbid_unknown_fields=True, kw_only=True
):
    """The settings of one Solana upstream network (durations in seconds): the upstream
    adapters' shared ones (:class:`BaseUpstreamOptions`, checked there) and Solana's own."""

    broker_methods: ClassVar[frozenset[str]] = BROKER_METHODS

    #: Seconds a closed slot's block is asked for again while the node has not confirmed it yet.
    block_wait: float = 10.0
    #: Seconds an account stays read after its last subscriber left: a subscriber resuming within
    #: the broker's resume window (300 s by default) finds every change it missed.
    watch_linger: float = 300.0
    read_methods: tuple[str, ...] = READ_METHODS
    write_methods: tuple[str, ...] = WRITE_METHODS

    def __post_init__(self) -> None:
        if self.watch_linger < 0:
            raise ValueError("`watch_linger` must not be negative")
        super().__post_init__()

    def _durations(self) -> dict[str, float]:
        return {**super()._durations(), "block_wait": self.block_wait}


def expected_genesis(spec: NetworkSpec) -> str:
    """The reference of ``spec.chain`` (``solana:<first 32 characters of the genesis hash>``)."""
    namespace, _, reference = spec.chain.partition(":")
    if namespace != "solana" or not 1 <= len(reference) <= 32:
        raise ConfigError(
            f"networks.{spec.name}: the solana-upstream adapter serves solana:<genesis hash "
            f"prefix> chains, not {spec.chain!r}"
        )
    return reference
