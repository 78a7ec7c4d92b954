"""MetaMask's Solana wallet-standard wallet (``@metamask/solana-wallet-standard``), unmodified,
over MetaMask's multichain client with ``?client=metamask``, against a Solana dev chain claiming
mainnet's genesis hash; the script's checks are in ``metamask_wallet_standard.mjs``."""

from __future__ import annotations

from collections.abc import AsyncIterator

import msgspec
import pytest
import trio
from solders.pubkey import Pubkey

from broker.compose import ServeOptions
from broker.config import Config
from tests.interop.nodejs import run_node_script
from tests.support.inprocess import RunningBroker, running_broker

MAINNET = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"
ORIGIN = "https://dapp.example"
CONFIG = {
    "networks": {
        "dev": {"chain": "eip155:1337", "adapter": "devchain", "default": True},
        "solana": {
            "chain": MAINNET,
            "adapter": "solana-dev",
            "genesis_hash": "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d",
        },
    }
}


@pytest.fixture
async def node() -> AsyncIterator[RunningBroker]:
    with trio.fail_after(120):
        config = msgspec.convert(CONFIG, Config)
        async with running_broker(ServeOptions(block_time=0), config=config) as running:
            yield running


async def test_metamask_solana_wallet_standard_over_scopecast(node: RunningBroker) -> None:
    with trio.fail_after(60):
        run = await run_node_script(
            "metamask_wallet_standard.mjs",
            {"ws": node.ws_url(), "solanaHttp": node.http_url(network="solana"), "origin": ORIGIN},
        )
    assert run.ok, run.explain()
    report = run.report
    assert report is not None
    observed = report["observed"]
    account = observed["session"]["sessionScopes"][MAINNET]["accounts"][0].rsplit(":", 1)[1]
    assert Pubkey.from_string(account)  # a base58 public key, checked again by solders
    assert observed["signIn"].startswith("dapp.example wants you to sign in")
    # The operator sees what the wallet did: the dapp's session is gone.
    with trio.fail_after(10):
        listed = await node.admin("admin_listSessions", {})
    assert [s for s in listed["result"] if s["origin"] == ORIGIN and s["sessionScopes"]] == []
