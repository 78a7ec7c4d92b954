"""Every bundled adapter passes the shared checks of adapters.conformance."""

import trio

from adapters.base import NetworkSpec
from adapters.conformance import check_account_adapter, check_chain_adapter
from adapters.devchain import DevChainAdapter
from adapters.keyring import DEV_MNEMONIC, KeyringAdapter
from adapters.registry import available, load


def test_bundled_adapters_are_entry_points() -> None:
    assert {"devchain", "keyring", "upstream"} <= set(available())
    assert load("devchain") is DevChainAdapter
    assert load("keyring") is KeyringAdapter


async def test_devchain_passes_the_chain_adapter_checks() -> None:
    adapter = DevChainAdapter(NetworkSpec("dev", "eip155:1337", "devchain", {"block_time": 0}))
    with trio.fail_after(60):
        await adapter.start()
        try:
            await check_chain_adapter(adapter)
        finally:
            await adapter.aclose()


async def test_keyring_passes_the_account_adapter_checks() -> None:
    adapter = KeyringAdapter(["eip155:1337"], mnemonic=DEV_MNEMONIC)
    await adapter.start()
    check_account_adapter(adapter)
