"""Every bundled adapter passes the shared checks of adapters.conformance."""

from collections.abc import Callable

import pytest
import trio

from adapters.base import ChainAdapter, NetworkSpec
from adapters.conformance import check_account_adapter, check_chain_adapter, check_solana_chain
from adapters.devchain import DevChainAdapter
from adapters.keyring import DEV_MNEMONIC, KeyringAdapter
from adapters.registry import available, load
from adapters.solana import SolanaDevAdapter, dev_chain_id
from adapters.upstream import UpstreamAdapter
from tests.adapters.upstream.e2e import DEV_CHAIN, FAST, upstream_entry
from tests.support.processes import start_scopecast


def test_bundled_adapters_are_entry_points() -> None:
    assert {"devchain", "keyring", "upstream", "solana-dev"} <= set(available())
    assert load("devchain") is DevChainAdapter
    assert load("solana-dev") is SolanaDevAdapter
    assert load("keyring") is KeyringAdapter


def solana_dev() -> SolanaDevAdapter:
    return SolanaDevAdapter(NetworkSpec("solana", dev_chain_id(), "solana-dev", {}))


@pytest.mark.parametrize(
    "build",
    [
        lambda: DevChainAdapter(NetworkSpec("dev", "eip155:1337", "devchain", {"block_time": 0})),
        solana_dev,
    ],
    ids=["devchain", "solana-dev"],
)
async def test_the_embedded_chains_pass_the_chain_adapter_checks(
    build: Callable[[], ChainAdapter],
) -> None:
    adapter = build()
    with trio.fail_after(60):
        await adapter.start()
        try:
            await check_chain_adapter(adapter)
        finally:
            await adapter.aclose()


async def test_the_solana_checks_catch_a_chain_id_that_is_not_the_genesis() -> None:
    adapter = solana_dev()
    await adapter.start()
    adapter.spec = NetworkSpec("solana", "solana:" + "1" * 32, "solana-dev", {})
    with pytest.raises(AssertionError, match="genesis hash's prefix"):
        await check_solana_chain(adapter, adapter.spec.chain)


@pytest.mark.slow
async def test_upstream_passes_the_chain_adapter_checks() -> None:
    # The upstream is a real node: a dev chain served by its own `scopecast serve` process.
    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            node = await start_scopecast(nursery, "--block-time", "0")
            await node.result("evm_mine")  # a head above genesis, with a parent to link to
            spec = NetworkSpec(
                "main", DEV_CHAIN, "upstream", {"upstreams": [upstream_entry(node)], **FAST}
            )
            adapter = UpstreamAdapter(spec)
            await adapter.start()
            try:
                await check_chain_adapter(adapter)
            finally:
                await adapter.aclose()
                nursery.cancel_scope.cancel()


async def test_keyring_passes_the_account_adapter_checks() -> None:
    adapter = KeyringAdapter(["eip155:1337"], mnemonic=DEV_MNEMONIC)
    await adapter.start()
    check_account_adapter(adapter)
