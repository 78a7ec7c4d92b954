"""The sizes and durations of a run: full (the published figures) or quick (development)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Settings:
    quick: bool
    block_time: str = "1"  # seconds between blocks of the upstream dev chain
    fault_block_time: str = "0.5"
    fault_clients: int = 200
    fault_runs: int = 5
    fault_pause: tuple[float, float] = (1.0, 6.0)  # a random moment: seconds before each run
    freeze_seconds: float = 30.0
    recover_timeout: float = 60.0
    only_faults: list[str] = field(default_factory=list)
    soak_connections: int = 5000
    soak_minutes: float = 20.0
    churn_per_second: int = 50
    http_per_second: int = 200
    sample_every: float = 10.0
    overload_connections: int = 19000
    slow_every: int = 100
    overload_seconds: float = 60.0
    fuzz_inputs: int = 100_000
    #: The Solana section: its session clients, the nodes' slot time, a transfer to the watched
    #: account every so many seconds, and whether account changes are judged (False: slots only).
    solana_clients: int = 200
    solana_slot_time: str = "0.4"
    solana_transfer_every: float = 1.0
    solana_accounts: bool = True

    @classmethod
    def for_mode(cls, quick: bool) -> Settings:
        if not quick:
            return cls(quick=False)
        return cls(
            quick=True,
            fault_clients=60,
            fault_runs=2,
            fault_pause=(0.5, 1.5),
            freeze_seconds=3.0,
            recover_timeout=15.0,
            soak_connections=600,
            soak_minutes=1.25,
            sample_every=5.0,
            overload_connections=2000,
            overload_seconds=10.0,
            fuzz_inputs=3000,
            solana_clients=60,
        )
