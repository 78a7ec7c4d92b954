"""``eth_sign``: geth's and anvil's message signature, ``[address, data]``.

geth signs ``keccak256("\\x19Ethereum Signed Message:\\n" + len(data) + data)``: the personal-message
prefix of EIP-191 (version 0x45), the same signature ``personal_sign`` makes with its params the
other way round. The prefix is what keeps it safe: the bytes signed can never be a transaction, so
the raw-hash ``eth_sign`` of early wallets (a signature over any 32 bytes, a transaction hash
included) is not offered. The data is hex, as geth's ``hexutil.Bytes`` takes it.
"""

from __future__ import annotations

from typing import Any, Final

from adapters.keyring import _params
from adapters.keyring._personal_sign import PersonalSign, execute, readable
from adapters.keyring._wallet import Handler, Prepared, Wallet


def prepare(wallet: Wallet, chain_id: int, params: list[Any], permitted: list[str]) -> Prepared:
    """Check ``[address, data]``; the summary shows the data as text (or hex), as personal_sign's."""
    _params.check_count(params, 2)
    signer = wallet.signer(_params.address(params[0], 0), permitted)
    message = _params.data(params[1], 1)
    return Prepared(signer, {"account": signer, **readable(message)}, PersonalSign(message))


HANDLER: Final = Handler(prepare, execute)
