"""Building py-evm chains from a genesis: the shared step of the dev chain and of geth imports."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from eth.chains.base import Chain
from eth.db.atomic import AtomicDB
from eth_typing import BlockNumber

from .accounts import DevAccount
from .chain import LocalChain
from .forks import ForkSchedule, dev_schedule
from .genesis import Genesis, dev_genesis, genesis_header_params


def evm_from_genesis(chain_id: int, schedule: ForkSchedule, genesis: Genesis) -> Chain:
    """A py-evm chain (in memory) at block 0 of ``genesis``."""
    chain_class: type[Chain] = type(
        "ScopecastChain",
        (Chain,),
        {"chain_id": chain_id, "vm_configuration": schedule.vm_configuration},
    )
    genesis_vm = chain_class.get_vm_class_for_block_number(BlockNumber(0))
    block_class: Any = genesis_vm.get_block_class()
    header_fields = block_class._meta.sedes[0]._meta.field_names  # rlp's Serializable metadata
    params = genesis_header_params(genesis, header_fields)
    state: Any = genesis.state
    return cast(Chain, chain_class.from_genesis(AtomicDB(), params, state))


def create_dev_chain(
    chain_id: int, accounts: Sequence[DevAccount], *, timestamp: int | None = None
) -> LocalChain:
    """A fresh post-merge chain at the newest fork, funding ``accounts``."""
    schedule = dev_schedule()
    evm = evm_from_genesis(chain_id, schedule, dev_genesis(accounts, timestamp=timestamp))
    return LocalChain(evm, schedule)
