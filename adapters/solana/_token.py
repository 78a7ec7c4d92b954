"""``jsonParsed`` for SPL Token accounts and mints (Token and Token-2022 without extensions), in the
shape Solana's account decoder gives them: ``{"program": "spl-token", "parsed": {"type", "info"},
"space"}``. Amounts are strings, with ``uiAmount`` / ``uiAmountString`` from the mint's decimals."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any, Final

from solders.pubkey import Pubkey

from adapters._base58 import b58encode

TOKEN_PROGRAMS: Final = frozenset(
    {
        Pubkey.from_string("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"),
        Pubkey.from_string("TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb"),
    }
)
ACCOUNT_SIZE: Final = 165
MINT_SIZE: Final = 82
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


def parse_mint(data: bytes) -> dict[str, Any] | None:
    if len(data) != MINT_SIZE or data[45] != 1:
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
    return data[44] if len(data) == MINT_SIZE and data[45] == 1 else None


def parse_account(data: bytes, decimals_of: DecimalsOf) -> dict[str, Any] | None:
    if len(data) != ACCOUNT_SIZE or data[108] not in _STATES:
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
    program = "spl-token" if str(owner).startswith("Tokenkeg") else "spl-token-2022"
    return {"program": program, "parsed": parsed, "space": len(data)}
