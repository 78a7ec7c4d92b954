"""The Solana family's events travel between processes (:class:`SolanaEventCodec`): every kind,
decoded, equals the original and renders the same bytes for every subscription kind; what is not
an event of its version is refused with a ValueError."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from adapters.solana._event_codec import SolanaEventCodec
from adapters.solana._events import AccountEvent, SlotEvent, SolanaEvent, TransactionEvent
from adapters.solana._pubsub import parse

from .conftest import Node
from .test_methods import blockhash, signed_transfer
from .test_pubsub import ALICE, BOB, SOL, SYSTEM

CODEC = SolanaEventCodec()


async def events_of_slots(node: Node) -> list[SolanaEvent]:
    """A good transfer, a failing one, then the slot closing (with both in its block)."""
    seen: list[SolanaEvent] = []

    async def keep(event: SolanaEvent) -> None:
        seen.append(event)

    adapter = node.adapter
    async with trio.open_nursery() as nursery:
        await nursery.start(adapter.serve_events, adapter.spec.chain, keep)
        for lamports, skip in ((SOL, False), (10_000 * SOL, True)):
            tx = signed_transfer(ALICE, BOB.pubkey(), lamports, await blockhash(node))
            await node("sendTransaction", tx, {"encoding": "base64", "skipPreflight": skip})
        adapter.produce_slot()
        await adapter._publish_events()
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()
    return seen


def _failed(event: SolanaEvent) -> bool:
    if isinstance(event, TransactionEvent):
        return event.record.err is not None
    closed = event.closed if isinstance(event, SlotEvent) else None
    return closed is not None and any(r.err is not None for r in closed.records)


async def test_every_event_round_trips_and_renders_the_same(node: Node) -> None:
    events = await events_of_slots(node)
    kinds = {type(e) for e in events}
    assert kinds == {SlotEvent, AccountEvent, TransactionEvent}
    assert any(isinstance(e, SlotEvent) and e.closed and len(e.closed.records) >= 2 for e in events)
    matchers = [
        parse("slotSubscribe", []),
        parse("accountSubscribe", [str(BOB.pubkey()), {"encoding": "base64"}]),
        parse("accountSubscribe", [str(ALICE.pubkey()), {"encoding": "jsonParsed"}]),
        parse("logsSubscribe", ["all"]),
        parse("programSubscribe", [SYSTEM, {"encoding": "base64"}]),
        parse("blockSubscribe", ["all", {"transactionDetails": "full"}]),
        parse("voteSubscribe", []),
        parse("slotsUpdatesSubscribe", []),
        parse("rootSubscribe", []),
    ]
    rendered = 0
    for event in events:
        data = CODEC.encode(event)
        decoded = CODEC.decode(data, CODEC.version)
        if not _failed(event):  # a failed one's error travels as its JSON
            assert decoded == event
        for matcher in matchers:
            assert matcher.render(decoded) == matcher.render(event)
            rendered += matcher.render(event) is not None
    assert rendered > len(events)


@pytest.mark.parametrize("data", [b"", b"\x93\x01\x02", b"\xc1", b"\x92\x07\x00"])
def test_what_is_not_an_event_is_refused(data: bytes) -> None:
    with pytest.raises(ValueError, match="not a Solana event"):
        CODEC.decode(data, 1)


def test_an_unknown_version_is_refused() -> None:
    data = CODEC.encode(SlotEvent(5, 4, 4))
    assert CODEC.decode(data, 1) == SlotEvent(5, 4, 4)
    with pytest.raises(ValueError, match="version 2"):
        CODEC.decode(data, 2)


def test_what_is_not_a_solana_event_cannot_be_encoded() -> None:
    with pytest.raises(TypeError):
        CODEC.encode(object())
