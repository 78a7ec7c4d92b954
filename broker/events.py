"""Chain events as the fan-out consumes them: a new canonical head, or a block's logs
(``removed`` when a reorganisation orphaned the block). They travel through the bus (in memory,
or a Redis Stream per chain), so they are plain msgspec-encodable values."""

from __future__ import annotations

from dataclasses import dataclass

from adapters.base import ChainBlock


@dataclass(frozen=True, slots=True)
class HeadEvent:
    chain: str
    block: ChainBlock


@dataclass(frozen=True, slots=True)
class LogsEvent:
    chain: str
    block: ChainBlock
    removed: bool


@dataclass(frozen=True, slots=True)
class FamilyEvent:
    """An event of a chain family's adapter (a Solana slot, account or transaction): opaque to
    the broker, rendered by the family's matchers (:class:`adapters.base.SubscriptionFamily`).
    It travels in process only: the family's chains are served by the process that runs them."""

    chain: str
    event: object


ChainEvent = HeadEvent | LogsEvent
"""What a chain's block ingestion publishes (through the bus, in memory or Redis)."""

HubEvent = ChainEvent | FamilyEvent
"""What the subscription hub delivers."""
