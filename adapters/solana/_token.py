"""SPL Token state, sans-io: the layouts of mints and token accounts (Token, and Token-2022's base
state before its extensions) and their ``jsonParsed`` form, in the shape Solana's account decoder
gives it: ``{"program": "spl-token", "parsed": {"type", "info"}, "space"}``. Amounts are strings,
with ``uiAmount`` / ``uiAmountString`` from the mint's decimals."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any, Final

from solders.pubkey import Pubkey

from adapters._base58 import b58encode

TOKEN_PROGRAM: Final = Pubkey.from_string("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA")
TOKEN_2022_PROGRAM: Final = Pubkey.from_string("TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb")
TOKEN_PROGRAMS: Final = frozenset({TOKEN_PROGRAM, TOKEN_2022_PROGRAM})
#: Wrapped SOL: the mint every cluster has at genesis (9 decimals, no authority).
NATIVE_MINT: Final = Pubkey.from_string("So11111111111111111111111111111111111111112")
NATIVE_DECIMALS: Final = 9
ACCOUNT_SIZE: Final = 165
MINT_SIZE: Final = 82
#: Token-2022 puts a type byte after the base state (padded to an account's size) when an
#: account or mint has extensions.
_ACCOUNT_TYPE_AT: Final = ACCOUNT_SIZE
_MINT_TYPE: Final = 1
_ACCOUNT_TYPE: Final = 2
_STATES: Final = {1: "initialized", 2: "frozen"}

#: The decimals of a mint (by its address bytes), None when there is no such mint.
DecimalsOf = Callable[[bytes], int | None]


def _u64(data: bytes, at: int) -> int:
    return int.from_bytes(data[at : at + 8], "little")


def _optional_key(data: bytes, at: int) -> str | None:
    """A ``COption<Pubkey>``: a u32 tag, then the key."""
    return b58encode(data[at + 4 : at + 36]) if data[at : at + 4] != b"\0\0\0\0" else None


def token_amount(amount: int, decimals: int) -> dict[str, Any]:
    """``{amount, decimals, uiAmount, uiAmountString}`` as Solana writes a token amount."""
    ui = Decimal(amount).scaleb(-decimals)
    text = f"{ui:f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return {
        "amount": str(amount),
        "decimals": decimals,
        "uiAmount": float(ui),
        "uiAmountString": text,
    }


def native_mint_data() -> bytes:
    """The native mint's state: no mint authority, no supply, 9 decimals, initialized."""
    data = bytearray(MINT_SIZE)
    data[44] = NATIVE_DECIMALS
    data[45] = 1
    return bytes(data)


def is_mint(data: bytes) -> bool:
    """An initialized mint (of either token program, with or without extensions)."""
    sized = len(data) == MINT_SIZE or (
        len(data) > _ACCOUNT_TYPE_AT and data[_ACCOUNT_TYPE_AT] == _MINT_TYPE
    )
    return sized and data[45] == 1


def is_token_account(data: bytes) -> bool:
    """An initialized or frozen token account (of either token program)."""
    sized = len(data) == ACCOUNT_SIZE or (
        len(data) > _ACCOUNT_TYPE_AT and data[_ACCOUNT_TYPE_AT] == _ACCOUNT_TYPE
    )
    return sized and data[108] in _STATES


def mint_supply(data: bytes) -> int:
    return _u64(data, 36)


def account_mint(data: bytes) -> bytes:
    return data[0:32]


def account_owner(data: bytes) -> bytes:
    return data[32:64]


def account_amount(data: bytes) -> int:
    return _u64(data, 64)


def account_delegate(data: bytes) -> bytes | None:
    return data[76:108] if data[72:76] != b"\0\0\0\0" else None


def parse_mint(data: bytes) -> dict[str, Any] | None:
    if not is_mint(data):
        return None
    return {
        "type": "mint",
        "info": {
            "decimals": data[44],
            "freezeAuthority": _optional_key(data, 46),
            "isInitialized": True,
            "mintAuthority": _optional_key(data, 0),
            "supply": str(_u64(data, 36)),
        },
    }


def mint_decimals(data: bytes) -> int | None:
    """The decimals of a mint account's data (None if it is not an initialized mint)."""
    return data[44] if is_mint(data) else None


def parse_account(data: bytes, decimals_of: DecimalsOf) -> dict[str, Any] | None:
    if not is_token_account(data):
        return None
    decimals = decimals_of(data[0:32])
    if decimals is None:
        return None  # as Solana: without its mint a token account is not parsed
    native = data[109:113] != b"\0\0\0\0"
    info: dict[str, Any] = {
        "isNative": native,
        "mint": b58encode(data[0:32]),
        "owner": b58encode(data[32:64]),
        "state": _STATES[data[108]],
        "tokenAmount": token_amount(_u64(data, 64), decimals),
    }
    delegate = _optional_key(data, 72)
    if delegate is not None:
        info["delegate"] = delegate
        info["delegatedAmount"] = token_amount(_u64(data, 121), decimals)
    if native:
        info["rentExemptReserve"] = token_amount(_u64(data, 113), decimals)
    close_authority = _optional_key(data, 129)
    if close_authority is not None:
        info["closeAuthority"] = close_authority
    return {"type": "account", "info": info}


#: Token-2022 extensions with no fields, by their type number, as Solana names them.
_FIELDLESS_EXTENSIONS: Final = {
    7: "immutableOwner",
    9: "nonTransferable",
    13: "nonTransferableAccount",
}


def _extensions(data: bytes) -> list[dict[str, Any]]:
    """Token-2022's extensions after the account type byte (``type: u16, length: u16, value``):
    those without fields named, the others ``unparseableExtension`` (their fields are not
    decoded here)."""
    found: list[dict[str, Any]] = []
    at = _ACCOUNT_TYPE_AT + 1
    while at + 4 <= len(data):
        kind = int.from_bytes(data[at : at + 2], "little")
        length = int.from_bytes(data[at + 2 : at + 4], "little")
        if kind == 0:
            break  # uninitialized: the rest is padding
        found.append({"extension": _FIELDLESS_EXTENSIONS.get(kind, "unparseableExtension")})
        at += 4 + length
    return found


def parse_token(
    owner: Pubkey, data: bytes, decimals_of: DecimalsOf | None
) -> dict[str, Any] | None:
    """``jsonParsed`` data of a token program's account; None if it is not one Solana parses."""
    if owner not in TOKEN_PROGRAMS:
        return None
    parsed = parse_mint(data) or (
        parse_account(data, decimals_of) if decimals_of is not None else None
    )
    if parsed is None:
        return None
    extensions = _extensions(data)
    if extensions:
        parsed["info"]["extensions"] = extensions
    program = "spl-token" if owner == TOKEN_PROGRAM else "spl-token-2022"
    return {"program": program, "parsed": parsed, "space": len(data)}
