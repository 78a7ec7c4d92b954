"""The keyring's options: where keys come from and how its ERC-4337 smart accounts are set up."""

from __future__ import annotations

import re
from typing import Final

import msgspec

#: The canonical EntryPoint v0.6 deployment (same address on every chain).
ENTRY_POINT_V06: Final = "0x5ff137d4b0fdcd49dca30c7cf57e578a026d2789"

#: The canonical SimpleAccountFactory of account-abstraction v0.6.
SIMPLE_ACCOUNT_FACTORY_V06: Final = "0x9406cc6185a346906296840746125a0e44976454"

_ADDRESS: Final = re.compile(r"0x[0-9a-fA-F]{40}\Z")
_HEX: Final = re.compile(r"0x(?:[0-9a-fA-F]{2})*\Z")


class UserOpConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """How user operations are built for the SimpleAccount (v0.6) each keyring key owns.

    The smart account of an owner is ``factory.getAddress(owner, salt)``. When the factory has no
    code on the chain, scopecast computes that address itself, exactly as SimpleAccountFactory
    does: CREATE2 from the factory with ``salt`` over the init code
    ``proxy_creation_code ++ abi.encode(account_implementation, initialize(owner))``. The init code
    contains the owner, so no single init-code hash can serve every owner: the ERC1967Proxy
    creation code the factory was compiled with is configured instead. ``account_implementation``
    defaults to the factory's first CREATE (nonce 1), which is where SimpleAccountFactory's
    constructor puts it.

    Gas limits are starting points for the bundler's estimate; ``deployment_verification_gas_limit``
    replaces ``verification_gas_limit`` while the account still has to be created.
    """

    entry_point: str = ENTRY_POINT_V06
    factory: str = SIMPLE_ACCOUNT_FACTORY_V06
    salt: int = 0
    bundler_url: str = ""
    paymaster: str | None = None
    paymaster_data: str = "0x"
    call_gas_limit: int = 100_000
    verification_gas_limit: int = 150_000
    deployment_verification_gas_limit: int = 400_000
    pre_verification_gas: int = 60_000
    proxy_creation_code: str | None = None
    account_implementation: str | None = None

    def __post_init__(self) -> None:
        for name in ("entry_point", "factory", "paymaster", "account_implementation"):
            value = getattr(self, name)
            if value is not None and not _ADDRESS.match(value):
                raise ValueError(f"userop.{name} must be a 0x-prefixed 20-byte address")
        for name in ("paymaster_data", "proxy_creation_code"):
            value = getattr(self, name)
            if value is not None and not _HEX.match(value):
                raise ValueError(f"userop.{name} must be 0x-prefixed hex bytes")
        if not 0 <= self.salt < 2**256:
            raise ValueError("userop.salt must be a uint256")
        if self.paymaster is None and self.paymaster_data != "0x":
            raise ValueError("userop.paymaster_data needs userop.paymaster")
        gas = (
            self.call_gas_limit,
            self.verification_gas_limit,
            self.deployment_verification_gas_limit,
            self.pre_verification_gas,
        )
        if any(limit <= 0 for limit in gas):
            raise ValueError("userop gas limits must be positive")


class KeyringOptions(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The keyring's settings as they appear in the broker's config (``from_options``)."""

    mnemonic: str | None = None
    count: int = 10
    keystore_dir: str | None = None
    passphrase_env: str = "SCOPECAST_KEYSTORE_PASSPHRASE"
    userop: UserOpConfig = msgspec.field(default_factory=UserOpConfig)
