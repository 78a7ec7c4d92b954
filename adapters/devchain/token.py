"""The demo token: a minimal ERC-20 (balances, transfer with a real ``Transfer`` event), hand-assembled.

Storage follows Solidity's layout for ``mapping(address => uint256) balanceOf`` at slot 0 and
``totalSupply`` at slot 2, so ``eth_getStorageAt`` reads look familiar. The constructor mints the
whole supply to the deployer and emits ``Transfer(0, deployer, supply)``.
"""

from __future__ import annotations

from typing import Final

from eth_abi.abi import encode
from eth_hash.auto import keccak

from .assembler import Item, Label, Ref, assemble, deployer

NAME: Final = "Scopecast Demo Token"
SYMBOL: Final = "DEMO"
DECIMALS: Final = 18
TOTAL_SUPPLY: Final = 1_000_000 * 10**DECIMALS

TRANSFER_TOPIC: Final = keccak(b"Transfer(address,address,uint256)")
SELECTORS: Final[dict[str, bytes]] = {
    signature: keccak(signature.encode())[:4]
    for signature in (
        "transfer(address,uint256)",
        "balanceOf(address)",
        "totalSupply()",
        "decimals()",
        "symbol()",
        "name()",
    )
}
_ADDRESS_MASK: Final = b"\xff" * 20
_BALANCES_SLOT: Final = 0
_SUPPLY_SLOT: Final = 2


def _balance_key() -> list[Item]:
    """Stack: [address] -> [keccak(address . slot 0)], the balance's storage key."""
    return [0, "MSTORE", _BALANCES_SLOT, 32, "MSTORE", 64, 0, "SHA3"]


def _return_word() -> list[Item]:
    """Stack: [value] -> returns it as one ABI word."""
    return [0, "MSTORE", 32, 0, "RETURN"]


def _return_string(text: str) -> list[Item]:
    encoded = text.encode()
    if len(encoded) > 32:
        raise ValueError("demo token strings fit one word")
    return [
        32, 0, "MSTORE",
        len(encoded), 32, "MSTORE",
        encoded.ljust(32, b"\0"), 64, "MSTORE",
        96, 0, "RETURN",
    ]  # fmt: skip


def _dispatch(name: str, label: str) -> list[Item]:
    return ["DUP1", SELECTORS[name], "EQ", Ref(label), "JUMPI"]


def _runtime() -> bytes:
    program: list[Item] = [
        0, "CALLDATALOAD", 0xE0, "SHR",
        *_dispatch("transfer(address,uint256)", "transfer"),
        *_dispatch("balanceOf(address)", "balance_of"),
        *_dispatch("totalSupply()", "total_supply"),
        *_dispatch("decimals()", "decimals"),
        *_dispatch("symbol()", "symbol"),
        *_dispatch("name()", "name"),
        Label("fail"),
        0, 0, "REVERT",

        Label("balance_of"),
        4, "CALLDATALOAD", _ADDRESS_MASK, "AND", *_balance_key(), "SLOAD", *_return_word(),

        Label("total_supply"),
        _SUPPLY_SLOT, "SLOAD", *_return_word(),

        Label("decimals"),
        DECIMALS, *_return_word(),

        Label("symbol"),
        *_return_string(SYMBOL),

        Label("name"),
        *_return_string(NAME),

        Label("transfer"),
        "CALLER", *_balance_key(),             # [from_key]
        "DUP1", "SLOAD",                       # [from_key, from_balance]
        36, "CALLDATALOAD",                    # [from_key, from_balance, amount]
        "DUP1", "DUP3", "LT", Ref("fail"), "JUMPI",
        "SWAP1", "DUP2", "SWAP1", "SUB",       # [from_key, amount, from_balance - amount]
        "DUP3", "SSTORE",                      # [from_key, amount]
        4, "CALLDATALOAD", _ADDRESS_MASK, "AND", *_balance_key(),  # [from_key, amount, to_key]
        "DUP1", "SLOAD", "DUP3", "ADD",        # [from_key, amount, to_key, to_balance + amount]
        "SWAP1", "SSTORE",                     # [from_key, amount]
        0, "MSTORE",                           # [from_key], memory[0] = amount
        4, "CALLDATALOAD", _ADDRESS_MASK, "AND", "CALLER", TRANSFER_TOPIC,
        32, 0, "LOG3",
        "POP",
        1, *_return_word(),
    ]  # fmt: skip
    return assemble(program)


RUNTIME: Final = _runtime()


def init_code() -> bytes:
    """The creation code: mint the supply to the deployer, then install :data:`RUNTIME`."""
    supply = TOTAL_SUPPLY.to_bytes(32, "big")
    constructor: list[Item] = [
        supply, "CALLER", *_balance_key(), "SSTORE",
        supply, _SUPPLY_SLOT, "SSTORE",
        supply, 0, "MSTORE",
        "CALLER", 0, TRANSFER_TOPIC, 32, 0, "LOG3",
    ]  # fmt: skip
    return deployer(RUNTIME, constructor)


def transfer_calldata(to: bytes, amount: int) -> bytes:
    """ABI call data of ``transfer(to, amount)``."""
    return SELECTORS["transfer(address,uint256)"] + encode(["address", "uint256"], [to, amount])


def balance_of_calldata(owner: bytes) -> bytes:
    """ABI call data of ``balanceOf(owner)``."""
    return SELECTORS["balanceOf(address)"] + encode(["address"], [owner])
