"""The Solana upstream adapter's options: a ``[networks.<name>]`` table of the config, typed and
checked (README "Solana upstream nodes")::

    [networks.solana-mainnet]
    chain = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"
    upstreams = [{ http = "https://node-a.example/rpc", ws = "wss://node-a.example/ws" }]
"""

from __future__ import annotations

from typing import Final

import msgspec

from adapters.base import NetworkSpec
from adapters.upstream import Endpoint, UpstreamOptions
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


class SolanaUpstreamOptions(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The settings of one Solana upstream network (durations in seconds)."""

    upstreams: tuple[Endpoint, ...]
    request_timeout: float = 10.0
    connect_timeout: float = 3.0
    max_connections: int = 32
    bench_after: int = 3
    bench_base: float = 1.0
    bench_max: float = 60.0
    probe_timeout: float = 3.0
    poll_interval: float = 2.0
    reconnect_base: float = 0.5
    reconnect_max: float = 30.0
    ws_ping_interval: float = 20.0
    #: Seconds a closed slot's block is asked for again while the node has not confirmed it yet.
    block_wait: float = 10.0
    #: Seconds an account stays read after its last subscriber left: a subscriber resuming within
    #: the broker's resume window (300 s by default) finds every change it missed.
    watch_linger: float = 300.0
    max_response_bytes: int = 64 * 1024 * 1024
    read_methods: tuple[str, ...] = READ_METHODS
    write_methods: tuple[str, ...] = WRITE_METHODS

    def __post_init__(self) -> None:
        if self.block_wait <= 0:
            raise ValueError("`block_wait` must be a positive number of seconds")
        if self.watch_linger < 0:
            raise ValueError("`watch_linger` must not be negative")
        served_by_broker = (set(self.read_methods) | set(self.write_methods)) & BROKER_METHODS
        if served_by_broker:
            raise ValueError(
                f"{', '.join(sorted(served_by_broker))} are served by the broker itself; "
                "remove them from read_methods/write_methods"
            )
        # Every other check (durations, counts, methods in both lists) is the EVM upstream's.
        self.forwarding()

    @property
    def methods(self) -> frozenset[str]:
        """Every method forwarded to the upstreams."""
        return frozenset(self.read_methods) | frozenset(self.write_methods)

    def forwarding(self) -> UpstreamOptions:
        """The settings the chain-neutral forwarding, health and transport read (the EVM
        upstream's own struct, its EVM-only limits left at their defaults)."""
        return UpstreamOptions(
            upstreams=self.upstreams,
            request_timeout=self.request_timeout,
            connect_timeout=self.connect_timeout,
            max_connections=self.max_connections,
            bench_after=self.bench_after,
            bench_base=self.bench_base,
            bench_max=self.bench_max,
            probe_timeout=self.probe_timeout,
            poll_interval=self.poll_interval,
            reconnect_base=self.reconnect_base,
            reconnect_max=self.reconnect_max,
            ws_ping_interval=self.ws_ping_interval,
            max_response_bytes=self.max_response_bytes,
            read_methods=self.read_methods,
            write_methods=self.write_methods,
        )


def expected_genesis(spec: NetworkSpec) -> str:
    """The reference of ``spec.chain`` (``solana:<first 32 characters of the genesis hash>``)."""
    namespace, _, reference = spec.chain.partition(":")
    if namespace != "solana" or not 1 <= len(reference) <= 32:
        raise ConfigError(
            f"networks.{spec.name}: the solana-upstream adapter serves solana:<genesis hash "
            f"prefix> chains, not {spec.chain!r}"
        )
    return reference
