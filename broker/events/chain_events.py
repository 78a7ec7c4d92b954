"""Chain events as the fan-out consumes them: the EVM profile's block events (a new canonical
head, or a block's logs: :mod:`adapters.evm.blocks`) and a chain family's own events. Both travel
through the bus (in memory, or a Redis Stream per chain); a family's, encoded by the family's
codec (:meth:`adapters.base.SubscriptionFamily.event_codec`), or, without one, not beyond this
process."""

from __future__ import annotations

from dataclasses import dataclass

from adapters.evm.blocks import ChainEvent as ChainEvent
from adapters.evm.blocks import HeadEvent as HeadEvent
from adapters.evm.blocks import LogsEvent as LogsEvent


@dataclass(frozen=True, slots=True)
class FamilyEvent:
    """An event of a chain family's adapter (a Solana slot, account or transaction): opaque to
    the broker, rendered by the family's matchers (:class:`adapters.base.SubscriptionFamily`).
    It travels between processes when the family has an event codec; else the family's chains
    are served by each process that runs them."""

    chain: str
    event: object


HubEvent = ChainEvent | FamilyEvent
"""What the subscription hub delivers."""
