"""The dev accounts: keys derived from a BIP-39 mnemonic along BIP-44 m/44'/60'/0'/0/i.

The same derivation as hardhat and anvil, so the well-known test mnemonic yields the well-known
addresses (the first is 0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266). Keys stay in memory and are
never logged; ``repr`` shows the address only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from eth_account.hdaccount import key_from_seed, seed_from_mnemonic
from eth_keys.datatypes import PrivateKey

DEFAULT_MNEMONIC: Final = "test test test test test test test test test test test junk"
DEFAULT_ACCOUNTS: Final = 10


@dataclass(frozen=True, slots=True)
class DevAccount:
    """One funded account: its canonical address and signing key."""

    address: bytes
    key: PrivateKey = field(repr=False)

    @property
    def hex_address(self) -> str:
        return "0x" + self.address.hex()


def derive_accounts(mnemonic: str, count: int) -> tuple[DevAccount, ...]:
    """The first ``count`` accounts of ``mnemonic``."""
    seed = seed_from_mnemonic(mnemonic, "")
    accounts = []
    for index in range(count):
        key = PrivateKey(key_from_seed(seed, f"m/44'/60'/0'/0/{index}"))
        accounts.append(DevAccount(address=key.public_key.to_canonical_address(), key=key))
    return tuple(accounts)
