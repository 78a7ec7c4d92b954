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
from adapters.solana.upstream._block_events import (
    BadBlock,
    BlockEvents,
    account_events,
    block_events,
)
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
        a_block(a_transfer()).replace(b'"postBalances": [5, 5, 1]', b'"postBalances": [5]'),
    ],
)
def test_a_block_that_is_not_one_is_refused(data: bytes) -> None:
    with pytest.raises(BadBlock, match="slot 42"):
        block_events(42, data)


def test_no_block_gives_no_events() -> None:
    assert block_events(42, b"null").transactions == ()


def test_accounts_carry_the_blocks_slot_and_lamports_whenever_they_are_read() -> None:
    found = block_events(42, a_block(a_transfer()))
    assert found.lamports == {str(PAYER.pubkey()): 5, str(TO.pubkey()): 5}
    owner = str(Keypair().pubkey())
    value = {
        "lamports": 9,  # a later slot's: the block's own 5 is reported
        "data": [base64.b64encode(b"\x01\x02").decode(), "base64"],
        "owner": owner,
        "executable": False,
        "rentEpoch": 3,
        "space": 2,
    }
    payer, to = str(PAYER.pubkey()), str(TO.pubkey())
    reply = json.dumps({"context": {"slot": 50}, "value": [value, None]}).encode()
    first, closed = account_events(found, [payer, to], reply)
    assert (first.address, first.slot) == (payer, 42)
    assert first.account is not None
    assert (first.account.lamports, bytes(first.account.data)) == (5, b"\x01\x02")
    assert str(first.account.owner) == owner
    assert (closed.address, closed.slot, closed.account) == (to, 42, None)
    emptied = found.lamports | {payer: 0}
    (gone,) = account_events(
        BlockEvents(42, found.transactions, found.written, emptied),
        [payer],
        reply.replace(b", null]", b"]"),
    )
    assert gone.account is None  # closed by the end of its slot, re-made later or not
    for bad in (
        b"[]",
        b'{"context": {"slot": 50}, "value": [null]}',
        b'{"context": {}}',
        b'{"context": {"slot": 41}, "value": [null, null]}',  # read before the block
    ):
        with pytest.raises(BadBlock):
            account_events(found, [payer, to], bad)


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
