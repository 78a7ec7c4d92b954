"""What anvil and hardhat users expect of a dev node: accounts, eth_sendTransaction, time, balance,
automine (py-evm cannot mine an unsigned transaction, so there is no impersonation)."""

from __future__ import annotations

import time

import pytest

from adapters.devchain import DevChainAdapter
from schemas.errors import RpcError, ServerError

from .conftest import Rpc, Wallet, dev_spec

ETHER = 10**18


async def test_eth_accounts_are_the_ten_dev_accounts(rpc: Rpc, wallet: Wallet) -> None:
    accounts = await rpc("eth_accounts")
    assert len(accounts) == 10
    assert accounts[:2] == [wallet.address(0), wallet.address(1)]


async def test_eth_send_transaction_signs_with_a_dev_account(rpc: Rpc, wallet: Wallet) -> None:
    before = int(await rpc("eth_getBalance", wallet.address(2), "latest"), 16)
    tx_hash = await rpc(
        "eth_sendTransaction",
        {"from": wallet.address(1), "to": wallet.address(2), "value": hex(ETHER)},
    )
    receipt = await rpc("eth_getTransactionReceipt", tx_hash)
    assert receipt["status"] == "0x1"
    assert receipt["from"] == wallet.address(1)
    assert int(receipt["gasUsed"], 16) == 21_000  # estimated, not guessed
    assert int(await rpc("eth_getBalance", wallet.address(2), "latest"), 16) == before + ETHER
    legacy = await rpc(
        "eth_sendTransaction",
        {
            "from": wallet.address(1),
            "to": wallet.address(2),
            "gasPrice": hex(10**10),
            "gas": "0x5208",
        },
    )
    assert (await rpc("eth_getTransactionByHash", legacy))["type"] == "0x0"


async def test_eth_send_transaction_from_an_unknown_account_is_refused(rpc: Rpc) -> None:
    error = await rpc.error(
        "eth_sendTransaction", {"from": "0x" + "12" * 20, "to": "0x" + "34" * 20}
    )
    assert isinstance(error, ServerError)
    assert error.message == "unknown account"
    bad = await rpc.error("eth_sendTransaction", {"to": "0x" + "34" * 20})
    assert bad.code == -32602


async def test_time_moves_forward_when_asked(rpc: Rpc) -> None:
    await rpc("evm_mine")
    before = int((await rpc("eth_getBlockByNumber", "latest", False))["timestamp"], 16)
    assert await rpc("evm_increaseTime", 3600) == 3600
    assert await rpc("evm_increaseTime", hex(60)) == 3660
    await rpc("evm_mine")
    after = int((await rpc("eth_getBlockByNumber", "latest", False))["timestamp"], 16)
    assert after >= max(int(time.time()) + 3660 - 1, before + 1)  # an hour and a minute ahead
    await rpc("evm_setNextBlockTimestamp", hex(after + 10_000))
    await rpc("evm_mine")
    assert (
        int((await rpc("eth_getBlockByNumber", "latest", False))["timestamp"], 16) == after + 10_000
    )
    await rpc("evm_mine")  # and time goes on from there
    assert (
        int((await rpc("eth_getBlockByNumber", "latest", False))["timestamp"], 16) >= after + 10_001
    )
    refused = await rpc.error("evm_setNextBlockTimestamp", hex(after))
    assert "is not after the latest block" in refused.message


async def test_set_balance_is_seen_at_once_and_by_the_next_blocks(rpc: Rpc, wallet: Wallet) -> None:
    rich = "0x" + "ab" * 20
    head = await rpc("eth_blockNumber")
    for method in ("anvil_setBalance", "hardhat_setBalance"):
        await rpc(method, rich, hex(1234 * ETHER))
        assert await rpc("eth_getBalance", rich, "latest") == hex(1234 * ETHER)
        assert await rpc("eth_blockNumber") == head  # nothing mined
    await rpc("anvil_setBalance", wallet.address(3), hex(7 * ETHER))
    await rpc("eth_sendTransaction", {"from": wallet.address(3), "to": rich, "value": hex(ETHER)})
    assert int(await rpc("eth_getBalance", rich, "latest"), 16) == 1235 * ETHER
    assert int(await rpc("eth_getBalance", wallet.address(3), "latest"), 16) < 6 * ETHER


async def test_automine_can_be_turned_off_and_on(rpc: Rpc, wallet: Wallet) -> None:
    await rpc("evm_setAutomine", False)
    head = await rpc("eth_blockNumber")
    tx_hash = await rpc("eth_sendTransaction", {"from": wallet.address(1), "to": wallet.address(2)})
    assert await rpc("eth_blockNumber") == head
    assert await rpc("eth_getTransactionReceipt", tx_hash) is None
    await rpc("evm_mine")
    assert (await rpc("eth_getTransactionReceipt", tx_hash))["status"] == "0x1"
    await rpc("evm_setAutomine", True)
    tx_hash = await rpc("eth_sendTransaction", {"from": wallet.address(1), "to": wallet.address(2)})
    assert await rpc("eth_getTransactionReceipt", tx_hash) is not None


@pytest.mark.parametrize("method", ["anvil_impersonateAccount", "hardhat_impersonateAccount"])
async def test_impersonation_is_not_offered(method: str) -> None:
    adapter = DevChainAdapter(dev_spec())
    await adapter.start()
    assert method not in adapter.methods(adapter.spec.chain)
    with pytest.raises(RpcError):
        await Rpc(adapter)(method, "0x" + "12" * 20)
