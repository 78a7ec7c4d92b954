"""ed25519 keys of a BIP-39 mnemonic at Solana's path ``m/44'/501'/i'/0'`` (shared by adapters).

SLIP-0010 for ed25519 (every level hardened), the derivation ``solana-keygen`` and the common wallets
use, is solders' ``Keypair.from_seed_and_derivation_path``. The dev mnemonic's keys are public: they
fund dev chains, never real money.
"""

from __future__ import annotations

import hashlib
import unicodedata
from typing import Final

from solders.keypair import Keypair

DEV_MNEMONIC: Final = "test test test test test test test test test test test junk"
DEV_ACCOUNTS: Final = 10


def bip39_seed(mnemonic: str, passphrase: str = "") -> bytes:
    """The 64-byte BIP-39 seed of ``mnemonic`` (the words are not checked against a word list)."""
    # Kept here: solders turns a phrase into a key only without a path (its
    # from_seed_phrase_and_passphrase takes the seed's first 32 bytes, solana-keygen's bare form),
    # while wallets and the dev accounts derive at m/44'/501'/i'/0' from the whole seed.
    words = unicodedata.normalize("NFKD", " ".join(mnemonic.split()))
    salt = unicodedata.normalize("NFKD", "mnemonic" + passphrase)
    return hashlib.pbkdf2_hmac("sha512", words.encode(), salt.encode(), 2048)


def solana_path(account: int) -> str:
    """``m/44'/501'/account'/0'``."""
    return f"m/44'/501'/{account}'/0'"


def derive_keypairs(mnemonic: str, count: int) -> tuple[Keypair, ...]:
    """The first ``count`` accounts of ``mnemonic`` at ``m/44'/501'/i'/0'``."""
    seed = bip39_seed(mnemonic)
    return tuple(Keypair.from_seed_and_derivation_path(seed, solana_path(i)) for i in range(count))
