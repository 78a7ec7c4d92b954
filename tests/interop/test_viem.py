"""viem watches heads and ERC-20 Transfer logs over webSocket() while it sends and mines two token
transfers, then reads blocks, transactions, receipts and logs over http(); see ``viem_watch.mjs``."""

from __future__ import annotations

import trio

from tests.interop.nodejs import run_node_script
from tests.support.inprocess import RunningBroker


async def test_watch_blocks_and_events_and_read_over_http(node: RunningBroker) -> None:
    with trio.fail_after(30):
        run = await run_node_script(
            "viem_watch.mjs", {"ws": node.ws_url(), "http": node.http_url()}
        )
    assert run.ok, run.explain()
    report = run.report
    assert report is not None
    observed = report["observed"]
    # viem subscribes concurrently: the replies may come in any order
    assert sorted(s["params"][0] for s in observed["subscriptions"]) == ["logs", "logs", "newHeads"]
    assert len(observed["transfers"]) == 2

    # the heads viem watched are the broker's canonical blocks
    with trio.fail_after(10):
        for head in observed["heads"]:
            reply = await node.rpc("eth_getBlockByNumber", [hex(int(head["number"])), False])
            assert reply["result"]["hash"] == head["hash"]


async def test_viem_test_and_wallet_clients_as_a_hardhat_user(node: RunningBroker) -> None:
    """eth_accounts, eth_sendTransaction, setBalance, increaseTime, setNextBlockTimestamp,
    setAutomine through viem; see ``viem_test_client.mjs``."""
    with trio.fail_after(60):
        run = await run_node_script("viem_test_client.mjs", {"http": node.http_url()})
    assert run.ok, run.explain()
    assert run.report is not None
    assert run.report["checks"] >= 10


async def test_viem_signs_what_it_prepares_and_watches_pending_transactions(
    node: RunningBroker,
) -> None:
    """signTransaction(prepareTransactionRequest({to, value})) unmodified, its bytes parsed back
    and mined; watchPendingTransactions sees it; see ``viem_signing.mjs``."""
    with trio.fail_after(60):
        run = await run_node_script(
            "viem_signing.mjs", {"http": node.http_url(), "ws": node.ws_url()}
        )
    assert run.ok, run.explain()
    assert run.report is not None
    assert run.report["checks"] >= 10
