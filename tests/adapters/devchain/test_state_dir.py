"""``state_dir`` (``scopecast serve --state-dir DIR``): the dev chain kept on disk, so that a restart,
even after ``kill -9``, continues the same chain with the same hashes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import trio

from adapters.devchain import DevChainAdapter
from adapters.devchain.accounts import DEFAULT_MNEMONIC, derive_accounts
from adapters.devchain.bootstrap import StateDirMismatch, open_dev_chain
from adapters.devchain.store import JOURNAL
from broker.config import ConfigError
from tests.support.processes import start_scopecast

from .conftest import Rpc, dev_spec


async def test_a_killed_node_restarts_on_the_same_chain_and_mines_on(tmp_path: Path) -> None:
    state = tmp_path / "chain"
    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            node = await start_scopecast(nursery, "--block-time", "0", "--state-dir", str(state))
            for _ in range(3):
                await node.result("evm_mine")
            before = [
                (await node.result("eth_getBlockByNumber", [hex(n), False]))["hash"]
                for n in range(6)
            ]
            await node.kill()  # kill -9: nothing is written on the way out
            await node.start()
            after = [
                (await node.result("eth_getBlockByNumber", [hex(n), False]))["hash"]
                for n in range(6)
            ]
            assert after == before  # blocks 0-2 (genesis, token) and the three mined
            assert await node.result("eth_blockNumber") == hex(5)
            await node.result("evm_mine")
            mined = await node.result("eth_getBlockByNumber", ["latest", False])
            assert mined["number"] == hex(6)
            assert mined["parentHash"] == before[-1]
            nursery.cancel_scope.cancel()


async def test_demo_traffic_goes_on_after_a_restart(tmp_path: Path) -> None:
    """The token and the accounts' nonces are read back: mined demo transfers are accepted."""
    spec = dev_spec(state_dir=str(tmp_path))
    first = DevChainAdapter(spec)
    await first.start()
    await first.mine(demo_transfers=3)
    await first.aclose()
    again = DevChainAdapter(spec)
    await again.start()
    assert again.token_address == first.token_address is not None
    block = await again.mine(demo_transfers=3)
    assert block.number == 4
    assert len(block.txs) == 3
    balance = await Rpc(again)("eth_getBalance", again.accounts[0].hex_address, "latest")
    assert int(balance, 16) > 0
    await again.aclose()


async def test_a_record_cut_short_is_dropped(tmp_path: Path) -> None:
    """A ``kill -9`` in the middle of a write leaves part of a record: the chain opens at the head
    committed before it, and goes on writing after it."""
    accounts = derive_accounts(DEFAULT_MNEMONIC, 2)
    chain, fresh = open_dev_chain(tmp_path, 1337, accounts)
    assert fresh
    for _ in range(2):
        record, _ = chain.build_block(chain.head, [], timestamp=chain.next_timestamp(chain.head))
        chain.adopt(record)
    head = chain.head.hash
    journal = tmp_path / JOURNAL
    committed = journal.stat().st_size
    record, _ = chain.build_block(chain.head, [], timestamp=chain.next_timestamp(chain.head))
    chain.adopt(record)  # its record is then cut in the middle
    assert chain.store is not None
    chain.store.close()
    whole = journal.stat().st_size
    os.truncate(journal, committed + (whole - committed) // 2)
    reopened, fresh = open_dev_chain(tmp_path, 1337, accounts)
    assert not fresh
    assert reopened.head.hash == head
    assert journal.stat().st_size == committed  # the torn tail is cut off
    record, _ = reopened.build_block(
        head_record := reopened.head, [], timestamp=reopened.next_timestamp(head_record)
    )
    reopened.adopt(record)
    assert reopened.store is not None
    reopened.store.close()
    last, _ = open_dev_chain(tmp_path, 1337, accounts)
    assert last.head.hash == record.hash
    assert last.head.parent_hash == head
    assert last.store is not None
    last.store.close()


async def test_a_state_dir_of_another_chain_is_refused(tmp_path: Path) -> None:
    accounts = derive_accounts(DEFAULT_MNEMONIC, 2)
    chain, _ = open_dev_chain(tmp_path, 1337, accounts)
    assert chain.store is not None
    chain.store.close()
    with pytest.raises(StateDirMismatch):
        open_dev_chain(tmp_path, 1337, derive_accounts(DEFAULT_MNEMONIC, 3))
    adapter = DevChainAdapter(dev_spec(state_dir=str(tmp_path), accounts=3))
    with pytest.raises(ConfigError, match="state_dir"):
        await adapter.start()


def test_state_dir_is_for_the_dev_chain_not_an_import() -> None:
    with pytest.raises(ConfigError, match="`state_dir` keeps the dev chain"):
        DevChainAdapter(dev_spec(genesis="genesis.json", state_dir="chain"))
