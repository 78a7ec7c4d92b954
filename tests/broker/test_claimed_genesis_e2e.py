"""A ``solana-dev`` network claiming Solana mainnet's genesis hash: served under mainnet's CAIP-2
id, ``getGenesisHash`` answers it, and the banner and ``GET /healthz`` say it is a local chain."""

from __future__ import annotations

import httpx
import msgspec
import pytest
import trio

from broker.cli import _print_endpoints
from broker.compose import ServeOptions
from broker.config import Config
from tests.support.inprocess import dapp, running_broker

MAINNET_GENESIS = "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d"
MAINNET = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"
CONFIG = {
    "networks": {
        "dev": {"chain": "eip155:1337", "adapter": "devchain", "default": True},
        "solana": {"chain": MAINNET, "adapter": "solana-dev", "genesis_hash": MAINNET_GENESIS},
    }
}


async def test_a_local_chain_under_mainnets_id(capsys: pytest.CaptureFixture[str]) -> None:
    config = msgspec.convert(CONFIG, Config)
    with trio.fail_after(60):
        async with (
            running_broker(ServeOptions(block_time=0), config=config) as node,
            httpx.AsyncClient(trust_env=False) as client,
        ):
            health = (await client.get(f"{node.base}/healthz")).json()
            solana = health["networks"][1]
            assert solana["chain"] == MAINNET
            assert solana["local"] is True
            assert (
                f"local solana-dev chain using the id of genesis hash {MAINNET_GENESIS}"
                in (solana["note"])
            )
            assert "local" not in health["networks"][0]
            assert (await node.rpc("getGenesisHash", network="solana"))["result"] == MAINNET_GENESIS
            _print_endpoints(node.broker, "127.0.0.1", operator=False)
            banner = capsys.readouterr().out
            assert f"network solana ({MAINNET})\n    note       a local solana-dev chain" in banner
            # The dev keyring holds the dev accounts on it: a session on mainnet's id signs here.
            async with dapp(node.ws_url() + "?client=metamask") as conn:
                scopes = {MAINNET: {"methods": [], "notifications": []}}
                created = await conn.result("wallet_createSession", {"optionalScopes": scopes})
                assert created["sessionScopes"][MAINNET]["accounts"]
