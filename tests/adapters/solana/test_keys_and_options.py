"""The dev accounts are the published ones, and the options are typed and checked."""

from __future__ import annotations

import pytest

from adapters._ed25519 import DEV_MNEMONIC, derive_keypairs
from adapters.base import NetworkSpec
from adapters.solana import SolanaDevAdapter, dev_chain_id
from adapters.solana._options import SolanaDevOptions
from schemas.errors import ConfigError

from .conftest import CHAIN, solana_spec

ABANDON = (
    "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about"
)


def test_slip10_derivation_matches_the_published_addresses() -> None:
    # Published values for m/44'/501'/0'/0' (what solana-keygen, Phantom and @solana/web3.js give).
    assert str(derive_keypairs(ABANDON, 1)[0].pubkey()) == (
        "HAgk14JpMQLgt6rVgv7cBQFJWFto5Dqxi472uT3DKpqk"
    )
    dev = [str(k.pubkey()) for k in derive_keypairs(DEV_MNEMONIC, 10)]
    assert dev[:2] == [
        "oeYf6KAJkLYhBuR8CiGc6L4D4Xtfepr85fuDgA9kq96",
        "AqynRZwvVqUPRwRJXvm6odUb3t93fDjnWe3p6BeuUFxD",
    ]
    assert len(set(dev)) == 10


def test_the_chain_id_is_the_genesis_hash_prefix_and_follows_the_seed() -> None:
    namespace, reference = CHAIN.split(":")
    assert namespace == "solana"
    assert len(reference) == 32
    assert dev_chain_id({"genesis_seed": "other"}) != CHAIN


def test_defaults_and_given_options() -> None:
    assert SolanaDevAdapter(solana_spec()).options == SolanaDevOptions()
    adapter = SolanaDevAdapter(solana_spec(block_time=2, accounts=3))
    assert adapter.options.block_time == 2.0
    assert adapter.options.accounts == 3


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"slot_tme": 2}, "unknown field `slot_tme`"),
        ({"block_time": "fast"}, "Expected `float`, got `str`"),
        ({"block_time": -1}, "`block_time` must not be negative"),
        ({"accounts": 5000}, "`accounts` must be 0 to 1000"),
    ],
)
def test_bad_options_are_a_config_error_naming_the_network(
    options: dict[str, object], message: str
) -> None:
    spec = NetworkSpec("sol", CHAIN, "solana-dev", options)
    with pytest.raises(ConfigError, match=r"^networks\.sol \(solana-dev adapter\): ") as caught:
        SolanaDevAdapter(spec)
    assert message in str(caught.value)


def test_a_chain_id_that_is_not_the_genesis_is_a_config_error_naming_the_right_one() -> None:
    with pytest.raises(ConfigError, match=CHAIN):
        SolanaDevAdapter(
            NetworkSpec("sol", "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", "solana-dev")
        )


MAINNET_GENESIS = "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d"
MAINNET = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"


def test_a_claimed_genesis_hash_makes_the_chain_id_and_says_so() -> None:
    assert dev_chain_id({"genesis_hash": MAINNET_GENESIS}) == MAINNET
    adapter = SolanaDevAdapter(
        NetworkSpec("sol", MAINNET, "solana-dev", {"genesis_hash": MAINNET_GENESIS})
    )
    note = adapter.chain_note(MAINNET)
    assert note is not None
    assert "local solana-dev chain" in note
    assert MAINNET_GENESIS in note
    assert SolanaDevAdapter(solana_spec()).chain_note(CHAIN) is None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"genesis_hash": "0OIl"}, "`genesis_hash`: invalid base58 character '0'"),
        ({"genesis_hash": "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"}, "must be a 32-byte hash"),
        ({"genesis_hash": MAINNET_GENESIS, "genesis_seed": "x"}, "not both"),
    ],
)
def test_a_bad_genesis_hash_is_a_config_error(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=r"^networks\.sol \(solana-dev adapter\): ") as caught:
        SolanaDevAdapter(NetworkSpec("sol", MAINNET, "solana-dev", options))
    assert message in str(caught.value)
