"""The adapter is found the way the broker loads plug-ins: through its entry point."""

from __future__ import annotations

from importlib.metadata import entry_points

from adapters.base import ChainAdapter
from adapters.devchain import DevChainAdapter

from .conftest import CHAIN, dev_spec


def test_entry_point_loads_the_adapter() -> None:
    (entry,) = [e for e in entry_points(group="scopecast.adapters") if e.name == "devchain"]
    adapter_class = entry.load()
    assert adapter_class is DevChainAdapter
    assert issubclass(adapter_class, ChainAdapter)
    assert adapter_class.name == "devchain"


def test_construction_needs_no_io() -> None:
    adapter = DevChainAdapter(dev_spec(block_time=1.5))
    assert adapter.options.block_time == 1.5
    assert adapter.chains() == [CHAIN]
    assert "eth_getLogs" in adapter.methods(CHAIN)
