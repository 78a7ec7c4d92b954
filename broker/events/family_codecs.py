"""Which chains' family events travel between processes, and how (their family's codec)."""

from __future__ import annotations

from adapters.base import EventCodec
from adapters.evm.chain_adapter import BlockSource
from broker.rpc.networks import Network


def travelling_codec(network: Network) -> EventCodec | None:
    """How the family events of ``network``'s chain travel between processes; None when it
    reports none of its own (no family, or blocks: the bus carries those) or they cannot travel."""
    family = network.adapter.subscription_family(network.chain)
    if family is None or isinstance(network.adapter, BlockSource):
        return None
    return family.event_codec()


def stays_in_process(network: Network) -> bool:
    """Whether ``network``'s chain reports family events that cannot leave the process."""
    adapter = network.adapter
    family = adapter.subscription_family(network.chain)
    return (
        family is not None and not isinstance(adapter, BlockSource) and family.event_codec() is None
    )
