"""From an upstream's blocks and accounts to the Solana family's events, and the broker's own
checks of a call (sans-io): what a node sends is decoded or refused with a reason, never crashes."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from solders.hash import Hash
from solders.keypair import Keypair
from solders.message import Message
from solders.system_program import TransferParams, transfer
from solders.transaction import Transaction

from adapters.solana._events import TransactionEvent
from adapters.solana._pubsub import parse
from adapters.solana.upstream._block_events import BadBlock, account_events, block_events
from adapters.solana.upstream._limits import check_params
from schemas.errors import InvalidParams

PAYER, TO = Keypair(), Keypair()


def a_transfer() -> Transaction:
    instruction = transfer(
        TransferParams(from_pubkey=PAYER.pubkey(), to_pubkey=TO.pubkey(), lamports=5)
    )
    return Transaction([PAYER], Message([instruction], PAYER.pubkey()), Hash.default())


def a_block(tx: Transaction, err: Any = None) -> bytes:
    item = {
        "transaction": [base64.b64encode(bytes(tx)).decode(), "base64"],
        "meta": {
            "err": err,
            "fee": 5000,
            "logMessages": ["Program 11111111111111111111111111111111 invoke [1]"],
            "preBalances": [10, 0, 1],
            "postBalances": [5, 5, 1],
            "loadedAddresses": {"writable": [], "readonly": []},
        },
    }
    return json.dumps({"blockTime": 7, "parentSlot": 41, "transactions": [item]}).encode()


def test_a_block_gives_its_transactions_and_the_accounts_they_wrote() -> None:
    tx = a_transfer()
    found = block_events(42, a_block(tx))
    (event,) = found.transactions
    assert isinstance(event, TransactionEvent)
    assert event.record.signature == str(tx.signatures[0])
    assert (event.record.slot, event.record.block_time, event.record.fee) == (42, 7, 5000)
    assert found.written == (str(PAYER.pubkey()), str(TO.pubkey()))  # not the system program
    logs = parse("logsSubscribe", [{"mentions": [str(TO.pubkey())]}])
    assert json.loads(logs.render(event) or b"null")["value"]["err"] is None


def test_a_failed_transaction_keeps_the_nodes_error_json() -> None:
    err = {"InstructionError": [0, {"Custom": 1}]}
    (event,) = block_events(42, a_block(a_transfer(), err)).transactions
    signature = parse("signatureSubscribe", [str(event.record.signature)])
    assert json.loads(signature.render(event) or b"null")["value"] == {"err": err}


@pytest.mark.parametrize(
    "data",
    [
        b"not json",
        b'{"transactions": 5}',
        b'{"transactions": [5]}',
        b'{"transactions": [{"transaction": "plain", "meta": {}}]}',
        b'{"transactions": [{"transaction": ["AAAA", "base64"], "meta": {}}]}',
        b'{"transactions": [{"transaction": ["!!", "base64"], "meta": {}}]}',
        a_block(a_transfer()).replace(b'"fee": 5000', b'"fee": "much"'),
        a_block(a_transfer()).replace(b'"loadedAddresses": {', b'"loadedAddresses": 5, "x": {'),
        a_block(a_transfer()).replace(b'"meta": {', b'"meta": [{').replace(b"}}]}", b"}]}]}"),
    ],
)
def test_a_block_that_is_not_one_is_refused(data: bytes) -> None:
    with pytest.raises(BadBlock, match="slot 42"):
        block_events(42, data)


def test_no_block_gives_no_events() -> None:
    assert block_events(42, b"null").transactions == ()


def test_accounts_are_read_with_the_slot_the_node_read_them_at() -> None:
    owner = str(Keypair().pubkey())
    value = {
        "lamports": 9,
        "data": [base64.b64encode(b"\x01\x02").decode(), "base64"],
        "owner": owner,
        "executable": False,
        "rentEpoch": 3,
        "space": 2,
    }
    reply = json.dumps({"context": {"slot": 50}, "value": [value, None]}).encode()
    first, closed = account_events(["A", "B"], reply)
    assert (first.address, first.slot, first.account is not None) == ("A", 50, True)
    assert first.account is not None
    assert bytes(first.account.data) == b"\x01\x02"
    assert (closed.address, closed.account) == ("B", None)
    for bad in (b"[]", b'{"context": {"slot": 1}, "value": [null]}', b'{"context": {}}'):
        with pytest.raises(BadBlock):
            account_events(["A", "B"], bad)


def test_the_brokers_own_checks_use_solanas_texts() -> None:
    check_params("getBalance", b' ["x"]')
    check_params("getMultipleAccounts", json.dumps([["a"] * 100]).encode())
    refused = {
        b'{"a": 1}': "expected a sequence",
        json.dumps([["a"] * 101]).encode(): "Too many inputs provided; max 100",
    }
    for params, text in refused.items():
        with pytest.raises(InvalidParams, match=text):
            check_params("getMultipleAccounts", params)
    with pytest.raises(InvalidParams, match="max 256"):
        check_params("getSignatureStatuses", json.dumps([["s"] * 257]).encode())
    with pytest.raises(InvalidParams, match="Slot range too large"):
        check_params("getBlocks", b"[0, 500001]")
    check_params("getBlocks", b"[0, 500000]")
    with pytest.raises(InvalidParams, match="Invalid limit; max 1000"):
        check_params("getSignaturesForAddress", b'["x", {"limit": 1001}]')
    check_params("getSignaturesForAddress", b'["x", {"limit": 1000}]')
    five = [{"dataSize": 1}] * 5
    with pytest.raises(InvalidParams, match="at most 4 filters"):
        check_params("getProgramAccounts", json.dumps(["x", {"filters": five}]).encode())
    check_params("getProgramAccounts", json.dumps(["x", {"filters": five[:4]}]).encode())
