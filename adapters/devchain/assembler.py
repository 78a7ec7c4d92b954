"""A tiny EVM assembler: mnemonics, pushes, labels (no compiler is available here).

A program is a sequence of items: an opcode mnemonic (``"ADD"``), an ``int`` (pushed with the
smallest PUSH, ``PUSH0`` for zero), ``bytes`` (pushed as they are), :class:`Label` (a jump target,
emitted as ``JUMPDEST``), :class:`Mark` (a position without a byte), :class:`Ref` (``PUSH2`` of a
label's or mark's offset) and :class:`Data` (raw bytes, e.g. a runtime appended to init code).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, TypeAlias

OPCODES: Final[dict[str, int]] = {
    "STOP": 0x00, "ADD": 0x01, "MUL": 0x02, "SUB": 0x03, "DIV": 0x04, "SDIV": 0x05, "MOD": 0x06,
    "SMOD": 0x07, "ADDMOD": 0x08, "MULMOD": 0x09, "EXP": 0x0A, "SIGNEXTEND": 0x0B,
    "LT": 0x10, "GT": 0x11, "SLT": 0x12, "SGT": 0x13, "EQ": 0x14, "ISZERO": 0x15, "AND": 0x16,
    "OR": 0x17, "XOR": 0x18, "NOT": 0x19, "BYTE": 0x1A, "SHL": 0x1B, "SHR": 0x1C, "SAR": 0x1D,
    "SHA3": 0x20,
    "ADDRESS": 0x30, "BALANCE": 0x31, "ORIGIN": 0x32, "CALLER": 0x33, "CALLVALUE": 0x34,
    "CALLDATALOAD": 0x35, "CALLDATASIZE": 0x36, "CALLDATACOPY": 0x37, "CODESIZE": 0x38,
    "CODECOPY": 0x39, "GASPRICE": 0x3A, "RETURNDATASIZE": 0x3D, "RETURNDATACOPY": 0x3E,
    "BLOCKHASH": 0x40, "COINBASE": 0x41, "TIMESTAMP": 0x42, "NUMBER": 0x43, "PREVRANDAO": 0x44,
    "GASLIMIT": 0x45, "CHAINID": 0x46, "SELFBALANCE": 0x47, "BASEFEE": 0x48,
    "POP": 0x50, "MLOAD": 0x51, "MSTORE": 0x52, "MSTORE8": 0x53, "SLOAD": 0x54, "SSTORE": 0x55,
    "JUMP": 0x56, "JUMPI": 0x57, "PC": 0x58, "MSIZE": 0x59, "GAS": 0x5A, "JUMPDEST": 0x5B,
    "TLOAD": 0x5C, "TSTORE": 0x5D, "MCOPY": 0x5E, "PUSH0": 0x5F,
    **{f"PUSH{n}": 0x5F + n for n in range(1, 33)},
    **{f"DUP{n}": 0x7F + n for n in range(1, 17)},
    **{f"SWAP{n}": 0x8F + n for n in range(1, 17)},
    **{f"LOG{n}": 0xA0 + n for n in range(5)},
    "CREATE": 0xF0, "CALL": 0xF1, "RETURN": 0xF3, "DELEGATECALL": 0xF4, "CREATE2": 0xF5,
    "STATICCALL": 0xFA, "REVERT": 0xFD, "INVALID": 0xFE,
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Label:
    """A jump target: emits ``JUMPDEST`` here."""

    name: str


@dataclass(frozen=True, slots=True)
class Mark:
    """A named position that emits nothing (for data offsets)."""

    name: str


@dataclass(frozen=True, slots=True)
class Ref:
    """``PUSH2`` of the offset of a :class:`Label` or :class:`Mark`."""

    name: str


@dataclass(frozen=True, slots=True)
class Data:
    """Raw bytes copied into the code as they are."""

    payload: bytes


Item: TypeAlias = str | int | bytes | Label | Mark | Ref | Data


def _push(value: bytes) -> bytes:
    if not 1 <= len(value) <= 32:
        raise ValueError(f"cannot push {len(value)} bytes")
    return bytes([0x5F + len(value)]) + value


def _encode(item: Item, offsets: dict[str, int]) -> bytes:
    if isinstance(item, str):
        try:
            return bytes([OPCODES[item]])
        except KeyError:
            raise ValueError(f"unknown opcode {item!r}") from None
    if isinstance(item, bool):
        raise TypeError("push 0 or 1, not a bool")
    if isinstance(item, int):
        if item < 0 or item >= 2**256:
            raise ValueError(f"push value out of range: {item}")
        if item == 0:
            return bytes([OPCODES["PUSH0"]])
        return _push(item.to_bytes((item.bit_length() + 7) // 8, "big"))
    if isinstance(item, bytes):
        return _push(item)
    if isinstance(item, Label):
        return bytes([OPCODES["JUMPDEST"]])
    if isinstance(item, Mark):
        return b""
    if isinstance(item, Ref):
        return _push(offsets.get(item.name, 0).to_bytes(2, "big"))
    return item.payload


def assemble(program: Sequence[Item]) -> bytes:
    """The bytecode of ``program``; raises ``ValueError`` for unknown or duplicate labels."""
    offsets: dict[str, int] = {}
    position = 0
    for item in program:  # first pass: every item's size is known without the offsets
        if isinstance(item, Label | Mark):
            if item.name in offsets:
                raise ValueError(f"duplicate label {item.name!r}")
            offsets[item.name] = position
        position += len(_encode(item, {}))
    for item in program:
        if isinstance(item, Ref) and item.name not in offsets:
            raise ValueError(f"undefined label {item.name!r}")
    return b"".join(_encode(item, offsets) for item in program)


def deployer(runtime: bytes, constructor: Sequence[Item] = ()) -> bytes:
    """Init code that runs ``constructor`` and then returns ``runtime`` as the contract's code."""
    return assemble(
        [
            *constructor,
            len(runtime).to_bytes(2, "big"),
            "DUP1",
            Ref("runtime"),
            0,
            "CODECOPY",
            0,
            "RETURN",
            Mark("runtime"),
            Data(runtime),
        ]
    )
