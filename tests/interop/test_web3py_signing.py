"""web3.py 8's signing calls against the dev node, unmodified, as an anvil user makes them:
``w3.eth.sign_transaction`` with the dict web3.py users write (no ``type``, no ``data``, numbers),
``w3.eth.sign`` (geth's ``eth_sign``) and ``w3.eth.sign_typed_data`` (``eth_signTypedData``).
Every signature is checked for what was asked: the signed bytes decode to the transaction, and the
node mines them; the message signatures recover to the account."""

from __future__ import annotations

from typing import Any

import rlp
import trio
from eth_account import Account
from eth_account.messages import encode_defunct, encode_typed_data
from eth_account.typed_transactions import TypedTransaction
from hexbytes import HexBytes
from web3 import HTTPProvider, Web3

from tests.support.inprocess import RunningBroker

MAIL: dict[str, Any] = {
    "types": {
        "EIP712Domain": [
            {"name": "name", "type": "string"},
            {"name": "chainId", "type": "uint256"},
        ],
        "Mail": [{"name": "contents", "type": "string"}],
    },
    "primaryType": "Mail",
    "domain": {"name": "Ether Mail", "chainId": 1337},
    "message": {"contents": "Hello, Bob!"},
}


def exercise_signing(url: str) -> None:
    w3 = Web3(HTTPProvider(url, request_kwargs={"timeout": 10}))
    sender, receiver = w3.eth.accounts[3], w3.eth.accounts[4]
    before = w3.eth.get_balance(receiver)
    # The dict of the issue, as web3.py users write it.
    asked = {
        "from": sender,
        "to": receiver,
        "value": 12_345,
        "gas": 21_000,
        "maxFeePerGas": 3 * 10**9,
        "maxPriorityFeePerGas": 10**9,
        "nonce": w3.eth.get_transaction_count(sender, "pending"),
        "chainId": 1337,
    }
    signed = w3.eth.sign_transaction(asked)  # type: ignore[arg-type]
    raw = HexBytes(signed["raw"])
    assert raw[0] == 2, "an EIP-1559 transaction (type inferred from the fee fields)"
    decoded = TypedTransaction.from_bytes(raw).as_dict()
    assert decoded["to"] == HexBytes(receiver)
    assert decoded["value"] == 12_345
    assert decoded["gas"] == 21_000
    assert decoded["maxFeePerGas"] == 3 * 10**9
    assert decoded["maxPriorityFeePerGas"] == 10**9
    assert decoded["nonce"] == asked["nonce"]
    assert decoded["chainId"] == 1337
    assert decoded["data"] == b""
    assert Account.recover_transaction(raw) == sender
    tx_hash = w3.eth.send_raw_transaction(raw)
    receipt = w3.eth.wait_for_transaction_receipt(tx_hash, timeout=10, poll_latency=0.05)
    assert receipt["status"] == 1
    assert w3.eth.get_balance(receiver) == before + 12_345

    # A legacy one, typed by its gasPrice; rlp-decodes to nine fields.
    legacy = w3.eth.sign_transaction(
        {
            "from": sender,
            "to": receiver,
            "value": 1,
            "gas": 21_000,
            "gasPrice": 3 * 10**9,
            "nonce": asked["nonce"] + 1,
        }
    )
    fields = rlp.decode(HexBytes(legacy["raw"]))
    assert len(fields) == 9
    assert Account.recover_transaction(legacy["raw"]) == sender

    signature = w3.eth.sign(sender, text="Sign in to example.org")
    assert (
        Account.recover_message(encode_defunct(text="Sign in to example.org"), signature=signature)
        == sender
    )
    typed = w3.eth.sign_typed_data(sender, MAIL)
    assert Account.recover_message(encode_typed_data(full_message=MAIL), signature=typed) == sender


async def test_sign_transaction_sign_and_sign_typed_data_unmodified(node: RunningBroker) -> None:
    with trio.fail_after(30):
        await trio.to_thread.run_sync(exercise_signing, node.http_url(), abandon_on_cancel=True)
