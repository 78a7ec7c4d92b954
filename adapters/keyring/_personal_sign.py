"""``personal_sign``: an EIP-191 (version 0x45) signature over a message shown to the user.

The message is hex-encoded bytes, normally UTF-8 text. Like MetaMask, a message that is not hex is
taken as the text itself, because many dapps send plain strings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from eth_account.messages import encode_defunct

from adapters.base import ChainReader, SigningRequest
from adapters.keyring import _params
from adapters.keyring._render import hex_bytes
from adapters.keyring._wallet import Handler, Prepared, Wallet, account_of, payload_of
from schemas.errors import invalid_argument

_HEX_MESSAGE: Final = re.compile(r"0x(?:[0-9a-fA-F]{2})*\Z")


@dataclass(frozen=True, slots=True)
class PersonalSign:
    message: bytes


def prepare(wallet: Wallet, chain_id: int, params: list[Any], permitted: list[str]) -> Prepared:
    """Check ``[message, address]``; the summary shows the message as text (or hex)."""
    _params.check_count(params, 2)
    text_or_hex, address = params
    if not isinstance(text_or_hex, str):
        raise invalid_argument(0, "want a hex-encoded message string")
    if _HEX_MESSAGE.match(text_or_hex):
        message = bytes.fromhex(text_or_hex[2:])
    else:
        message = text_or_hex.encode()
    signer = wallet.signer(_params.address(address, 1), permitted)
    summary = {"account": signer, **readable(message)}
    return Prepared(signer, summary, PersonalSign(message))


def readable(message: bytes) -> dict[str, Any]:
    try:
        return {"message": message.decode("utf-8"), "encoding": "utf-8"}
    except UnicodeDecodeError:
        return {"message": hex_bytes(message), "encoding": "hex"}


async def execute(wallet: Wallet, request: SigningRequest, read: ChainReader) -> str:
    """The 65-byte signature (v 27/28) as 0x hex."""
    # No checkpoint: signs in memory, after the approval its caller awaited.
    payload = payload_of(request, PersonalSign)
    signature = wallet.keyring.sign_message(account_of(request), encode_defunct(payload.message))
    return hex_bytes(signature)


HANDLER: Final = Handler(prepare, execute)
