"""ed25519 keys of a BIP-39 mnemonic at Solana's path ``m/44'/501'/i'/0'`` (shared by adapters).

SLIP-0010 for ed25519 (every level hardened), the derivation ``solana-keygen`` and the common wallets
use. The dev mnemonic's keys are public: they fund dev chains, never real money.
"""

from __future__ import annotations

import hashlib
import hmac
import unicodedata
from typing import Final

from solders.keypair import Keypair

DEV_MNEMONIC: Final = "test test test test test test test test test test test junk"
DEV_ACCOUNTS: Final = 10
_HARDENED: Final = 0x80000000
_ED25519_SEED: Final = b"ed25519 seed"


def bip39_seed(mnemonic: str, passphrase: str = "") -> bytes:
    """The 64-byte BIP-39 seed of ``mnemonic`` (the words are not checked against a word list)."""
    words = unicodedata.normalize("NFKD", " ".join(mnemonic.split()))
    salt = unicodedata.normalize("NFKD", "mnemonic" + passphrase)
    return hashlib.pbkdf2_hmac("sha512", words.encode(), salt.encode(), 2048)


def slip10_ed25519(seed: bytes, path: tuple[int, ...]) -> bytes:
    """The 32-byte ed25519 private key at ``path`` (indices, each hardened here) from ``seed``."""
    digest = hmac.new(_ED25519_SEED, seed, hashlib.sha512).digest()
    key, chain_code = digest[:32], digest[32:]
    for index in path:
        data = b"\x00" + key + (index | _HARDENED).to_bytes(4, "big")
        digest = hmac.new(chain_code, data, hashlib.sha512).digest()
        key, chain_code = digest[:32], digest[32:]
    return key


def solana_path(account: int) -> tuple[int, ...]:
    """``m/44'/501'/account'/0'``."""
    return (44, 501, account, 0)


def derive_keypairs(mnemonic: str, count: int) -> tuple[Keypair, ...]:
    """The first ``count`` accounts of ``mnemonic`` at ``m/44'/501'/i'/0'``."""
    seed = bip39_seed(mnemonic)
    return tuple(Keypair.from_seed(slip10_ed25519(seed, solana_path(i))) for i in range(count))
