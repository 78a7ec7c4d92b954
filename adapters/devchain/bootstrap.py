"""Building py-evm chains from a genesis: the shared step of the dev chain and of geth imports."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from eth.abc import DatabaseAPI
from eth.chains.base import Chain
from eth.db.atomic import AtomicDB
from eth_typing import BlockNumber

from .accounts import DevAccount
from .chain import LocalChain
from .forks import ForkSchedule, dev_schedule
from .genesis import Genesis, dev_genesis, genesis_header_params
from .store import ChainStore


def _chain_class(chain_id: int, schedule: ForkSchedule) -> type[Chain]:
    return type(
        "ScopecastChain",
        (Chain,),
        {"chain_id": chain_id, "vm_configuration": schedule.vm_configuration},
    )


def evm_from_genesis(
    chain_id: int, schedule: ForkSchedule, genesis: Genesis, db: DatabaseAPI | None = None
) -> Chain:
    """A py-evm chain at block 0 of ``genesis`` (in memory, or in ``db``)."""
    chain_class = _chain_class(chain_id, schedule)
    genesis_vm = chain_class.get_vm_class_for_block_number(BlockNumber(0))
    block_class: Any = genesis_vm.get_block_class()
    header_fields = block_class._meta.sedes[0]._meta.field_names  # rlp's Serializable metadata
    params = genesis_header_params(genesis, header_fields)
    state: Any = genesis.state
    return cast(
        Chain, chain_class.from_genesis(AtomicDB() if db is None else AtomicDB(db), params, state)
    )


def create_dev_chain(
    chain_id: int, accounts: Sequence[DevAccount], *, timestamp: int | None = None
) -> LocalChain:
    """A fresh post-merge chain at the newest fork, funding ``accounts``."""
    schedule = dev_schedule()
    evm = evm_from_genesis(chain_id, schedule, dev_genesis(accounts, timestamp=timestamp))
    return LocalChain(evm, schedule)


class StateDirMismatch(ValueError):
    """A state dir holding another chain than the options describe."""


def open_dev_chain(
    folder: Path, chain_id: int, accounts: Sequence[DevAccount]
) -> tuple[LocalChain, bool]:
    """The dev chain kept in ``folder``: the one it holds (at its last committed head), or a fresh
    one (then True) committed there from now on."""
    store = ChainStore(folder)
    schedule = dev_schedule()
    funded = [account.hex_address for account in accounts]
    saved = store.meta
    store.identity = {"accounts": funded}
    if saved is None:
        evm = evm_from_genesis(chain_id, schedule, dev_genesis(accounts), store.db)
        chain = LocalChain(evm, schedule)
        chain.store = store
        store.commit(chain.saved_state())
        return chain, True
    if saved["chain_id"] != chain_id or saved.get("accounts") != funded:
        store.close()
        raise StateDirMismatch(
            f"{folder} holds the dev chain {saved['chain_id']} of other accounts or another chain "
            "id: give another state dir, or empty this one"
        )
    chain = LocalChain(_chain_class(chain_id, schedule)(AtomicDB(store.db)), schedule)
    chain.restore(saved)
    chain.store = store
    return chain, False
