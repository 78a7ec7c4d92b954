"""EVM-level facts used by the smart-account code: function selectors and contract addresses."""

from __future__ import annotations

import rlp
from eth_utils.conversions import to_bytes
from eth_utils.crypto import keccak


def selector(signature: str) -> bytes:
    """The 4-byte function selector of a canonical signature such as ``transfer(address,uint256)``."""
    return keccak(text=signature)[:4]


def create_address(deployer: str, nonce: int) -> str:
    """The address a CREATE from ``deployer`` at ``nonce`` deploys to (lowercase)."""
    return "0x" + keccak(rlp.encode([to_bytes(hexstr=deployer), nonce]))[12:].hex()


def create2_address(deployer: str, salt: bytes, init_code_hash: bytes) -> str:
    """The EIP-1014 CREATE2 address (lowercase) for a 32-byte ``salt`` and init-code hash."""
    preimage = b"\xff" + to_bytes(hexstr=deployer) + salt + init_code_hash
    return "0x" + keccak(preimage)[12:].hex()
