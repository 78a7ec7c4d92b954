"""Solana PubSub, family side: subscribe params parsed into matchers over the adapter's events,
each notification's result encoded once per group of alike subscriptions, in Solana's shapes."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
import trio
import trio.testing
from solders.keypair import Keypair

from adapters._ed25519 import DEV_MNEMONIC, derive_keypairs
from adapters.solana._events import SolanaEvent
from adapters.solana._pubsub import (
    NOTIFICATIONS,
    Matcher,
    notification_frame,
    parse,
)
from schemas.errors import InvalidParams

from .conftest import Node
from .test_methods import blockhash, signed_transfer

SOL = 1_000_000_000
ALICE, BOB = derive_keypairs(DEV_MNEMONIC, 2)
SYSTEM = "11111111111111111111111111111111"


async def events_of_a_transfer(
    node: Node, lamports: int = SOL, *, skip_preflight: bool = False
) -> tuple[str, list[SolanaEvent]]:
    seen: list[SolanaEvent] = []

    async def keep(event: SolanaEvent) -> None:
        seen.append(event)

    adapter = node.adapter
    async with trio.open_nursery() as nursery:
        await nursery.start(adapter.serve_events, adapter.spec.chain, keep)
        tx = signed_transfer(ALICE, BOB.pubkey(), lamports, await blockhash(node))
        options = {"encoding": "base64", "skipPreflight": skip_preflight}
        signature = await node("sendTransaction", tx, options)
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()
    return signature, seen


def rendered(matcher: Matcher, events: list[SolanaEvent]) -> list[Any]:
    return [
        msgspec.json.decode(result) for e in events if (result := matcher.render(e)) is not None
    ]


async def test_a_transfer_notifies_slot_account_signature_logs_and_program(node: Node) -> None:
    signature, events = await events_of_a_transfer(node)
    slot = await node("getSlot")
    assert rendered(parse("slotSubscribe", []), events) == [
        {"parent": slot - 1, "root": slot - 1, "slot": slot}
    ]
    (account,) = rendered(
        parse("accountSubscribe", [str(BOB.pubkey()), {"encoding": "base64"}]), events
    )
    assert account == {
        "context": {"slot": slot},
        "value": {
            "data": ["", "base64"],
            "executable": False,
            "lamports": 1001 * SOL,
            "owner": SYSTEM,
            "rentEpoch": 2**64 - 1,
            "space": 0,
        },
    }
    confirmed = parse("signatureSubscribe", [signature, {"commitment": "finalized"}])
    assert confirmed.one_shot
    assert rendered(confirmed, events) == [{"context": {"slot": slot}, "value": {"err": None}}]
    (logs,) = rendered(parse("logsSubscribe", [{"mentions": [str(ALICE.pubkey())]}]), events)
    assert logs["value"]["signature"] == signature
    assert logs["value"]["logs"][0] == f"Program {SYSTEM} invoke [1]"
    assert rendered(parse("logsSubscribe", [{"mentions": [str(Keypair().pubkey())]}]), events) == []
    assert len(rendered(parse("logsSubscribe", ["all"]), events)) == 1
    program = rendered(parse("programSubscribe", [SYSTEM, {"encoding": "base64"}]), events)
    assert {entry["value"]["pubkey"] for entry in program} == {
        str(ALICE.pubkey()),
        str(BOB.pubkey()),
    }
    # A failing transaction (preflight skipped) lands, and its notifications carry the error.
    failed, events = await events_of_a_transfer(node, 10_000 * SOL, skip_preflight=True)
    (status,) = rendered(parse("signatureSubscribe", [failed]), events)
    assert status["value"] == {"err": {"InstructionError": [0, {"Custom": 1}]}}


async def test_alike_subscriptions_share_one_encoding(node: Node) -> None:
    address = str(BOB.pubkey())
    first = parse("accountSubscribe", [address, {"encoding": "base64", "commitment": "confirmed"}])
    second = parse("accountSubscribe", [address, {"encoding": "base64"}])
    other = parse("accountSubscribe", [address, {"encoding": "jsonParsed"}])
    assert first.key == second.key  # commitment does not change the bytes: one group
    assert first.key != other.key
    _, events = await events_of_a_transfer(node)
    (event,) = [e for e in events if first.render(e) is not None]
    result = first.render(event)
    assert result is not None
    frame = notification_frame(first.notification, 7, result)
    assert msgspec.json.decode(frame) == {
        "jsonrpc": "2.0",
        "method": "accountNotification",
        "params": {"result": msgspec.json.decode(result), "subscription": 7},
    }
    assert result in frame  # spliced as encoded, never re-encoded


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("accountSubscribe", []),
        ("accountSubscribe", ["not-base58-0OIl"]),
        ("accountSubscribe", [str(BOB.pubkey()), {"encoding": "hex"}]),
        ("signatureSubscribe", ["short"]),
        ("logsSubscribe", [{"mentions": []}]),
        ("logsSubscribe", ["everything"]),
        ("programSubscribe", [SYSTEM, {"filters": [{"memcmp": {"offset": 0}}]}]),
        ("slotSubscribe", [1]),
        ("rootSubscribe", [1]),
        ("voteSubscribe", [{}]),
        ("blockSubscribe", ["some"]),
        ("blockSubscribe", ["all", {"transactionDetails": "most"}]),
        ("blockSubscribe", [{"mentionsAccountOrProgram": "nope"}]),
    ],
)
def test_bad_subscribe_params_are_solanas_invalid_params(method: str, params: Any) -> None:
    with pytest.raises(InvalidParams):
        parse(method, params)


def test_the_notification_names_are_solanas() -> None:
    assert {
        "slotNotification",
        "accountNotification",
        "signatureNotification",
        "logsNotification",
        "programNotification",
        "rootNotification",
        "slotsUpdatesNotification",
        "blockNotification",
        "voteNotification",
        "signatureStatusNotification",  # scopecast's own, not Solana's
    } == NOTIFICATIONS
