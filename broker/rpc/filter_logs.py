"""The broker's side of the EVM profile's polled filters (:mod:`adapters.evm.filters`): their
``eth_getFilterLogs`` asks the chain adapter serving the filter's chain."""

from __future__ import annotations

from typing import Any

import msgspec

from adapters.evm.filters import GetLogs
from broker.rpc.networks import Networks
from broker.rpc.plugin_calls import call_adapter
from schemas.errors import ServerError


def adapters_get_logs(networks: Networks) -> GetLogs:
    """``eth_getLogs`` of the chain adapter serving each chain (for ``eth_getFilterLogs``)."""

    async def get_logs(chain: str, spec: dict[str, Any]) -> Any:
        network = networks.by_chain(chain)
        if network is None:
            raise ServerError(f"no network serves {chain}")
        return await call_adapter(network, "eth_getLogs", msgspec.Raw(msgspec.json.encode([spec])))

    return get_logs
