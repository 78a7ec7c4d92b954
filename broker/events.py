"""Chain events as the fan-out consumes them: the EVM profile's block events (a new canonical
head, or a block's logs: :mod:`adapters.evm.blocks`), which travel through the bus (in memory, or
a Redis Stream per chain), and a chain family's own events, which stay in this process."""

from __future__ import annotations

from dataclasses import dataclass

from adapters.evm.blocks import ChainEvent as ChainEvent
from adapters.evm.blocks import HeadEvent as HeadEvent
from adapters.evm.blocks import LogsEvent as LogsEvent


@dataclass(frozen=True, slots=True)
class FamilyEvent:
    """An event of a chain family's adapter (a Solana slot, account or transaction): opaque to
    the broker, rendered by the family's matchers (:class:`adapters.base.SubscriptionFamily`).
    It travels in process only: the family's chains are served by the process that runs them."""

    chain: str
    event: object


HubEvent = ChainEvent | FamilyEvent
"""What the subscription hub delivers."""
