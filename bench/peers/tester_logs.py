"""The getLogs peer: eth-tester's own ``get_logs`` over the very chain the dev chain adapter holds.

eth-tester reads its chain through its py-evm backend, a ``MiningChain`` whose pending block sits on
top of the canonical head. We give it exactly that: a ``MiningChain`` over the dev chain's own
database (same blocks, same receipts, same logs), wrapped in a ``PyEVMBackend`` and an
``EthereumTester`` with eth-tester's default validator and normalizer. No data is copied.
"""

from __future__ import annotations

import time
from typing import Any

from eth.chains.base import MiningChain
from eth_tester import EthereumTester, PyEVMBackend


def tester_over(evm: Any) -> EthereumTester:
    """An ``EthereumTester`` reading the py-evm chain ``evm`` (a dev chain's ``LocalChain.evm``)."""
    mining_class = type(
        "BenchTesterChain",
        (MiningChain,),
        {"chain_id": evm.chain_id, "vm_configuration": evm.vm_configuration},
    )
    backend = PyEVMBackend.__new__(PyEVMBackend)
    backend.account_keys = ()
    backend.chain = mining_class(evm.chaindb.db)
    return EthereumTester(backend=backend, auto_mine_transactions=False)


def timed_get_logs(
    tester: EthereumTester, *, from_block: int, to_block: int, address: str, topics: list[Any]
) -> tuple[float, int]:
    """Seconds one ``get_logs`` took, and how many logs it returned."""
    started = time.perf_counter()
    logs = tester.get_logs(from_block=from_block, to_block=to_block, address=address, topics=topics)
    return time.perf_counter() - started, len(logs)
