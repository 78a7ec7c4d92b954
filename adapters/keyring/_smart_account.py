"""Finding a key's SimpleAccount on a chain: its address, whether it exists, its EntryPoint nonce.

These read the chain through the :data:`~adapters.base.ChainReader` of the request. The address
comes from the factory's own ``getAddress`` when the factory is deployed, so it is right whatever
the factory's bytecode; only without a factory does scopecast compute it (see
:class:`~adapters.keyring.UserOpConfig`).
"""

from __future__ import annotations

from dataclasses import dataclass

from adapters.base import ChainReader
from adapters.keyring import _entry_point, _simple_account
from adapters.keyring._config import UserOpConfig
from adapters.keyring._evm import create_address
from adapters.keyring._render import hex_bytes
from schemas.errors import ServerError

#: SimpleAccountFactory's constructor deploys the implementation with its first CREATE; a
#: contract's nonce starts at 1 (EIP-161).
IMPLEMENTATION_NONCE = 1


@dataclass(frozen=True, slots=True)
class AccountState:
    """A smart account as the chain sees it now."""

    address: str
    deployed: bool
    nonce: int


async def locate(read: ChainReader, config: UserOpConfig, owner: str) -> str:
    """The address of ``owner``'s SimpleAccount (lowercase), deployed or not."""
    factory = config.factory.lower()
    if await _has_code(read, factory):
        result = await _call(read, factory, _simple_account.get_address_call(owner, config.salt))
        return _simple_account.decode_address(result)
    if config.proxy_creation_code is None:
        raise ServerError(
            f"cannot compute the smart account of {owner}: factory {factory} has no code on this "
            "chain and no userop.proxy_creation_code is configured"
        )
    implementation = config.account_implementation or create_address(factory, IMPLEMENTATION_NONCE)
    return _simple_account.counterfactual_address(
        factory,
        owner,
        config.salt,
        bytes.fromhex(config.proxy_creation_code[2:]),
        implementation.lower(),
    )


async def state(read: ChainReader, config: UserOpConfig, owner: str) -> AccountState:
    """Where ``owner``'s account is, whether it has code, and its EntryPoint nonce (key 0)."""
    address = await locate(read, config, owner)
    if not await _has_code(read, address):
        return AccountState(address, deployed=False, nonce=0)
    result = await _call(read, config.entry_point.lower(), _entry_point.get_nonce_call(address))
    return AccountState(address, deployed=True, nonce=_entry_point.decode_uint256(result))


async def _has_code(read: ChainReader, address: str) -> bool:
    code = await read("eth_getCode", [address, "latest"])
    return isinstance(code, str) and code not in ("", "0x")


async def _call(read: ChainReader, to: str, data: bytes) -> bytes:
    result = await read("eth_call", [{"to": to, "data": hex_bytes(data)}, "latest"])
    if not isinstance(result, str) or not result.startswith("0x") or len(result) <= 2:
        # An empty return is a contract that does not implement the function (or no contract).
        raise ServerError(f"eth_call to {to} returned no data")
    return bytes.fromhex(result[2:])
