"""Base58 (Bitcoin's alphabet), the text form of Solana addresses, hashes and signatures."""

from __future__ import annotations

from typing import Final

ALPHABET: Final = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_INDEX: Final = {c: i for i, c in enumerate(ALPHABET)}


def b58encode(data: bytes) -> str:
    number = int.from_bytes(data, "big")
    digits = []
    while number:
        number, rest = divmod(number, 58)
        digits.append(ALPHABET[rest])
    zeros = len(data) - len(data.lstrip(b"\0"))
    return "1" * zeros + "".join(reversed(digits))


def b58decode(text: str) -> bytes:
    """``text`` decoded; ValueError for a character outside the alphabet."""
    number = 0
    for char in text:
        digit = _INDEX.get(char)
        if digit is None:
            raise ValueError(f"invalid base58 character {char!r}")
        number = number * 58 + digit
    zeros = len(text) - len(text.lstrip("1"))
    body = number.to_bytes((number.bit_length() + 7) // 8, "big") if number else b""
    return b"\0" * zeros + body
