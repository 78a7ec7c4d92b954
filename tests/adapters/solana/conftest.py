from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest

from adapters.base import NetworkSpec
from adapters.solana import SolanaDevAdapter, dev_chain_id

CHAIN = dev_chain_id()


def solana_spec(**options: Any) -> NetworkSpec:
    return NetworkSpec("solana", dev_chain_id(options), "solana-dev", options)


class Node:
    """A started adapter, called as a client would (params encoded as JSON)."""

    def __init__(self, adapter: SolanaDevAdapter) -> None:
        self.adapter = adapter

    async def __call__(self, method: str, *params: Any) -> Any:
        raw = msgspec.Raw(msgspec.json.encode(list(params)))
        return await self.adapter.call(self.adapter.spec.chain, method, raw)


@pytest.fixture
async def node() -> AsyncIterator[Node]:
    adapter = SolanaDevAdapter(solana_spec())
    await adapter.start()
    yield Node(adapter)
    await adapter.aclose()
