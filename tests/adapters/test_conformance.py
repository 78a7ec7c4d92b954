"""Every bundled adapter passes the shared checks of adapters.conformance."""

from collections.abc import Callable, Sequence
from typing import Any

import pytest
import trio
from solders.pubkey import Pubkey

from adapters.base import ChainAdapter, NetworkSpec, SigningRequest
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


SOLANA_DEV = dev_chain_id()


class ShownKeyring(KeyringAdapter):
    """The keyring with its accounts shown, or its permissions kept, as another adapter might
    get them wrong: the account checks must catch each."""

    def __init__(
        self, chain: str, show: Callable[[list[str]], list[str]], *, ignore_permitted: bool = False
    ) -> None:
        super().__init__([chain], mnemonic=DEV_MNEMONIC)
        self._show = show
        self._ignore_permitted = ignore_permitted

    def accounts(self, chain: str) -> Sequence[str]:
        return self._show(list(super().accounts(chain)))

    def prepare(
        self, chain: str, method: str, params: list[Any] | dict[str, Any], permitted: Sequence[str]
    ) -> SigningRequest:
        if self._ignore_permitted:
            permitted = list(super().accounts(chain))
        return super().prepare(chain, method, params, permitted)


def _off_curve(accounts: list[str]) -> list[str]:
    # A program-derived address: 32 bytes of base58, but no ed25519 key (nobody can sign for it).
    derived, _bump = Pubkey.find_program_address([b"scopecast"], Pubkey.from_string(accounts[0]))
    return [str(derived)]


@pytest.mark.parametrize(
    ("chain", "show", "ignore_permitted", "caught"),
    [
        ("eip155:1337", lambda a: ["0x" + a[0][2:].upper()], False, "canonical form"),
        ("eip155:1337", lambda a: [a[0], a[0]], False, "listed once"),
        ("eip155:1337", lambda a: ["not an address!"], False, "not an address of"),
        ("eip155:1337", lambda a: a, True, "personal_sign for an account outside"),
        (SOLANA_DEV, lambda a: [a[0].lower()], False, "not a base58 32-byte public key"),
        (SOLANA_DEV, lambda a: ["1" + a[0]], False, "not a base58 32-byte public key"),
        (SOLANA_DEV, _off_curve, False, "on the curve"),
        (SOLANA_DEV, lambda a: a, True, "signMessage for an account outside"),
    ],
    ids=[
        "evm-uppercase",
        "evm-twice",
        "evm-not-an-address",
        "evm-signs-for-anyone",
        "solana-lowercased",
        "solana-33-bytes",
        "solana-off-curve",
        "solana-signs-for-anyone",
    ],
)
async def test_the_account_checks_catch_what_breaks_the_namespace_rules(
    chain: str,
    show: Callable[[list[str]], list[str]],
    ignore_permitted: bool,
    caught: str,
) -> None:
    honest = KeyringAdapter([chain], mnemonic=DEV_MNEMONIC)
    await honest.start()
    check_account_adapter(honest)  # the keyring itself passes
    adapter = ShownKeyring(chain, show, ignore_permitted=ignore_permitted)
    await adapter.start()
    with pytest.raises(AssertionError, match=caught):
        check_account_adapter(adapter)
