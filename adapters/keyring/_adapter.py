"""The keyring account adapter: local keys signing SPEC area B's account methods."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Final

import msgspec
import trio

from adapters.base import AccountAdapter, ChainReader, MethodDocs, SigningRequest
from adapters.evm.openrpc import evm_docs
from adapters.keyring import (
    _eth_sign,
    _personal_sign,
    _solana,
    _transaction,
    _typed_data,
    _user_operations,
)
from adapters.keyring._config import KeyringOptions, UserOpConfig
from adapters.keyring._keys import DEV_MNEMONIC, KeyLoadError, Keyring, keystore_files
from adapters.keyring._params import chain_reference
from adapters.keyring._wallet import Handler, Wallet
from schemas.caip import is_solana, normalize_address
from schemas.errors import ConfigError, InvalidParams, MethodNotFound, Unauthorized

HANDLERS: Final[Mapping[str, Handler]] = {
    "personal_sign": _personal_sign.HANDLER,
    "eth_signTransaction": _transaction.HANDLER,
    "eth_signTypedData_v4": _typed_data.HANDLER,
    # The names web3.py and anvil users call: eth_sign with geth's semantics (the personal-message
    # prefix) and eth_signTypedData as v4 (web3.py's sign_typed_data sends v4's params).
    "eth_sign": _eth_sign.HANDLER,
    "eth_signTypedData": _typed_data.HANDLER,
    "eth_prepareUserOperation": _user_operations.PREPARE,
    "eth_patchUserOperation": _user_operations.PATCH,
    "eth_signUserOperation": _user_operations.SIGN,
}
METHODS: Final = frozenset(HANDLERS)


#: The embedded dev chain has no SimpleAccountFactory and no bundler: nothing ever runs a user
#: operation's initCode there. So that smart-account addresses are still deterministic per owner, the
#: dev keyring computes them with this stand-in proxy creation code (one STOP opcode: deploys no code).
#: On a real network the factory answers getAddress, or the operator configures the real proxy code.
DEV_PROXY_CREATION_CODE: Final = "0x00"


class KeyringAdapter(AccountAdapter):
    """Accounts whose private keys scopecast holds, for any number of ``eip155`` and ``solana``
    chains (Solana: the mnemonic's ed25519 keys at m/44'/501'/i'/0', see :mod:`._solana`).

    Keys come from a BIP-39 ``mnemonic`` (accounts 0..count-1 on m/44'/60'/0'/0/i) and/or from the
    encrypted JSON keystores in ``keystore_dir``, decrypted with the passphrase in the environment
    variable ``passphrase_env``. One of them is required: the public development mnemonic is only
    ever passed in explicitly (the broker does so for the embedded dev chain alone), so a
    misconfigured production keyring fails at start instead of signing with well-known keys. Keys
    are loaded by :meth:`start`.
    """

    name: ClassVar[str] = "keyring"

    def __init__(
        self,
        chains: Sequence[str],
        *,
        mnemonic: str | None = None,
        count: int = 10,
        keystore_dir: Path | None = None,
        passphrase_env: str = "SCOPECAST_KEYSTORE_PASSPHRASE",
        userop: UserOpConfig | None = None,
    ) -> None:
        if mnemonic is None and keystore_dir is None:
            raise ValueError(
                "the keyring needs a mnemonic or a keystore_dir (--keystore); the public "
                "development mnemonic is used only for the embedded dev chain"
            )
        self._chains = {chain: chain_reference(chain) for chain in chains if not is_solana(chain)}
        self._solana_chains = [chain for chain in chains if is_solana(chain)]
        self._solana = _solana.SolanaKeys()
        self._keyring = Keyring()
        self._wallet = Wallet(self._keyring, userop or UserOpConfig())
        # The mnemonic is a secret: keep it only until start() has derived the keys.
        self._pending_mnemonic = mnemonic
        self._count = count
        self._keystore_dir = keystore_dir
        self._passphrase_env = passphrase_env

    @classmethod
    def complete_options(
        cls,
        chains: Sequence[str],
        options: Mapping[str, Any],
        *,
        dev_chains: Sequence[str],
        configured: bool,
    ) -> Mapping[str, Any]:
        """Without a mnemonic or keystore, the public development mnemonic, which only the
        embedded development chains may use; without an ``[accounts]`` table, the dev proxy
        creation code (:data:`DEV_PROXY_CREATION_CODE`)."""
        completed = dict(options)
        if not completed.get("mnemonic") and not completed.get("keystore_dir"):
            if not set(chains) <= set(dev_chains):
                raise ConfigError(
                    "[accounts]: the keyring needs a mnemonic or keystore_dir (or --keystore) for "
                    f"{', '.join(c for c in chains if c not in dev_chains)}; the public development "
                    "mnemonic serves only the embedded dev chain"
                )
            completed["mnemonic"] = DEV_MNEMONIC
        if not configured:
            completed["userop"] = {"proxy_creation_code": DEV_PROXY_CREATION_CODE}
        return completed

    @classmethod
    def from_options(cls, chains: Sequence[str], options: Mapping[str, Any]) -> KeyringAdapter:
        """Build from the ``[accounts]`` config table (keys of :class:`KeyringOptions`)."""
        try:
            settings = msgspec.convert(dict(options), KeyringOptions)
        except msgspec.ValidationError as exc:
            raise ValueError(f"invalid keyring options: {exc}") from None
        return cls(
            chains,
            mnemonic=settings.mnemonic,
            count=settings.count,
            keystore_dir=Path(settings.keystore_dir) if settings.keystore_dir else None,
            passphrase_env=settings.passphrase_env,
            userop=settings.userop,
        )

    def __repr__(self) -> str:
        return f"<KeyringAdapter {list(self._chains)} {self._keyring!r}>"

    async def start(self) -> None:
        """Derive the mnemonic's keys and decrypt the keystores (in a worker thread: scrypt is slow)."""
        await trio.to_thread.run_sync(self._load_keys)

    def _load_keys(self) -> None:
        mnemonic, self._pending_mnemonic = self._pending_mnemonic, None
        if mnemonic is not None:
            self._keyring.add_mnemonic(mnemonic, self._count)
            if self._solana_chains:
                self._solana.add_mnemonic(mnemonic, self._count)
        if self._keystore_dir is not None:
            passphrase = os.environ.get(self._passphrase_env)
            keystores = list(keystore_files(self._keystore_dir))
            if passphrase is None and (keystores or not self._solana_chains):
                raise KeyLoadError(f"set {self._passphrase_env} to the keystore passphrase")
            for source, keystore in keystores:
                assert passphrase is not None
                self._keyring.add_keystore(keystore, passphrase, source)
            if self._solana_chains:
                self._solana.add_keypair_files(self._keystore_dir)
        if not self._keyring.addresses and not self._solana.addresses:
            raise KeyLoadError("the keyring has no keys")
        if self._chains and not self._keyring.addresses:
            raise KeyLoadError("the keyring has no keys for its eip155 chains")
        if self._solana_chains and not self._solana.addresses:
            raise KeyLoadError(
                "the keyring has no Solana keys: give a mnemonic, or solana-keygen keypair "
                "files in keystore_dir"
            )

    def chains(self) -> Sequence[str]:
        return [*self._chains, *self._solana_chains]

    def accounts(self, chain: str) -> Sequence[str]:
        if chain in self._solana_chains:
            return self._solana.addresses
        return self._keyring.addresses if chain in self._chains else ()

    def methods(self, chain: str) -> frozenset[str]:
        if chain in self._solana_chains:
            return _solana.METHODS
        return METHODS if chain in self._chains else frozenset()

    def method_docs(self, chain: str) -> MethodDocs:
        if chain in self._solana_chains:
            return MethodDocs(dict(_solana.METHOD_DOCS))
        return evm_docs(self.methods(chain))

    def prepare(
        self, chain: str, method: str, params: list[Any] | dict[str, Any], permitted: Sequence[str]
    ) -> SigningRequest:
        if chain in self._solana_chains:
            solana = _solana.HANDLERS.get(method)
            if solana is None:
                raise MethodNotFound(method)
            # base58 is case-sensitive: the permitted accounts are compared as given.
            found = solana.prepare(self._solana, chain, params, permitted)
            return SigningRequest(chain, method, found.account, found.summary, found.payload)
        if not isinstance(params, list):
            raise InvalidParams("non-array args")
        handler = HANDLERS.get(method)
        if handler is None:
            raise MethodNotFound(method)
        chain_id = self._chains.get(chain)
        if chain_id is None:
            raise Unauthorized(f"the keyring holds no accounts on {chain}")
        allowed = [normalize_address(chain, address) for address in permitted]  # CAIP-10 rules
        prepared = handler.prepare(self._wallet, chain_id, params, allowed)
        return SigningRequest(chain, method, prepared.account, prepared.summary, prepared.payload)

    async def execute(self, request: SigningRequest, read: ChainReader) -> Any:
        if request.chain in self._solana_chains:
            solana = _solana.HANDLERS.get(request.method)
            if solana is None:
                raise MethodNotFound(request.method)
            return await solana.execute(self._solana, request, read)
        handler = HANDLERS.get(request.method)
        if handler is None:
            raise MethodNotFound(request.method)
        return await handler.execute(self._wallet, request, read)
