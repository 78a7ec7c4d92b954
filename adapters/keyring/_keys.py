"""Holding private keys: derived from a BIP-39 mnemonic or decrypted from JSON keystore files.

The keys live only inside :class:`Keyring`; nothing here returns, prints or pickles them. Callers
ask the keyring to sign and get signatures back. Errors raised while loading name the file or the
index, never the secret.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final, NoReturn

from eth_account import Account
from eth_account.datastructures import SignedTransaction
from eth_account.hdaccount import key_from_seed, seed_from_mnemonic
from eth_account.messages import SignableMessage, encode_typed_data
from eth_account.signers.local import LocalAccount

from schemas.errors import ConfigError

#: The well-known development mnemonic (hardhat, anvil, the embedded dev chain).
DEV_MNEMONIC: Final = "test test test test test test test test test test test junk"

#: BIP-44 path of account ``i`` as hardhat, anvil and MetaMask derive it.
HD_PATH: Final = "m/44'/60'/0'/0/{index}"


class KeyLoadError(ConfigError):
    """A key source could not be read (bad mnemonic, unreadable keystore, wrong passphrase)."""


class Keyring:
    """Private keys by lowercase address, in the order they were added."""

    __slots__ = ("_accounts",)

    def __init__(self) -> None:
        self._accounts: dict[str, LocalAccount] = {}

    def __repr__(self) -> str:
        return f"<Keyring holding {len(self._accounts)} accounts>"

    def __reduce__(self) -> NoReturn:
        # Pickling would write the keys out of the process (a cache, a queue, a crash dump).
        raise TypeError("a Keyring cannot be pickled")

    @property
    def addresses(self) -> tuple[str, ...]:
        """The held addresses, lowercase, in wallet order."""
        return tuple(self._accounts)

    def holds(self, address: str) -> bool:
        """Whether the keyring has the key of ``address`` (lowercase)."""
        return address in self._accounts

    def add_mnemonic(self, mnemonic: str, count: int) -> None:
        """Add accounts 0..count-1 of ``mnemonic`` on the BIP-44 Ethereum path."""
        if count < 1:
            raise KeyLoadError("the mnemonic account count must be at least 1")
        try:
            seed = seed_from_mnemonic(mnemonic, "")
        except Exception:
            # The library's message may quote the words; say only what is wrong.
            raise KeyLoadError("the mnemonic is not a valid BIP-39 phrase") from None
        for index in range(count):
            self._add(Account.from_key(key_from_seed(seed, HD_PATH.format(index=index))))

    def add_keystore(self, keystore: Mapping[str, Any], passphrase: str, source: str) -> None:
        """Decrypt one keystore (v3 JSON) and add its key; ``source`` names it in errors."""
        try:
            key = Account.decrypt(dict(keystore), passphrase)
        except ValueError:
            raise KeyLoadError(f"cannot decrypt keystore {source}: wrong passphrase?") from None
        except Exception:
            raise KeyLoadError(f"cannot decrypt keystore {source}: not a valid keystore") from None
        self._add(Account.from_key(key))

    def _add(self, account: LocalAccount) -> None:
        self._accounts.setdefault(account.address.lower(), account)

    def _account(self, address: str) -> LocalAccount:
        try:
            return self._accounts[address]
        except KeyError:
            raise LookupError(f"no key for {address}") from None

    def sign_message(self, address: str, message: SignableMessage) -> bytes:
        """The 65-byte ``r || s || v`` signature (v 27/28) of an EIP-191 message."""
        return bytes(self._account(address).sign_message(message).signature)

    def sign_typed_data(self, address: str, typed_data: dict[str, Any]) -> bytes:
        """The 65-byte EIP-712 signature of a full typed-data object."""
        return self.sign_message(address, encode_typed_data(full_message=typed_data))

    def sign_transaction(self, address: str, transaction: dict[str, Any]) -> SignedTransaction:
        """Sign an eth-account transaction dict with the key of ``address``."""
        return self._account(address).sign_transaction(transaction)


def keystore_files(directory: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(file name, keystore JSON)`` for every v3 keystore file in ``directory``, by name.

    geth names keystores ``UTC--…`` without an extension, so any file holding a JSON object with a
    ``crypto`` section counts; other files (a README, a lock file) are skipped.
    """
    if not directory.is_dir():
        raise KeyLoadError(f"keystore directory {directory} does not exist")
    for path in sorted(directory.iterdir()):
        if not path.is_file():
            continue
        try:
            document = json.loads(path.read_bytes())
        except (OSError, ValueError):
            continue
        if isinstance(document, dict) and ("crypto" in document or "Crypto" in document):
            yield path.name, document
