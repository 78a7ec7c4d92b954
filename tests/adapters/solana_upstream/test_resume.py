"""Where a new leader's follower resumes: after the last slot on the chain's stream, the events of
that slot's step its predecessor appended already not reported again (sans-io, then against a
node: a ``scopecast serve`` process)."""

from __future__ import annotations

import itertools

import trio
from solders.hash import Hash
from solders.keypair import Keypair
from solders.message import Message
from solders.system_program import TransferParams, transfer
from solders.transaction import Transaction

from adapters.solana._events import AccountEvent, SlotEvent, TransactionEvent
from adapters.solana._pubsub import parse
from adapters.solana.upstream._block_events import block_events
from adapters.solana.upstream._resume import (
    FIRST_TAIL,
    AlreadyAppended,
    find_resume_point,
    resume_point,
)

from .nodes import (
    CHAIN,
    NETWORK,
    advance,
    entry,
    fresh_address,
    front,
    node_result,
    signed_transfer,
    solana_node,
)
from .test_block_events import PAYER, TO, a_block

X, Y = (str(Keypair().pubkey()) for _ in range(2))
_amounts = itertools.count(1)


def a_transaction(slot: int) -> TransactionEvent:
    """A transfer of its own (its own amount: its own signature) in ``slot``."""
    instruction = transfer(
        TransferParams(from_pubkey=PAYER.pubkey(), to_pubkey=TO.pubkey(), lamports=next(_amounts))
    )
    tx = Transaction([PAYER], Message([instruction], PAYER.pubkey()), Hash.default())
    (event,) = block_events(slot, a_block(tx)).transactions
    assert isinstance(event, TransactionEvent)
    return event


def test_the_resume_point_is_the_last_slot_and_what_follows_it() -> None:
    earlier, cut_short = a_transaction(4), a_transaction(5)
    tail = [SlotEvent(4, 3, 3), earlier, SlotEvent(5, 4, 4), cut_short, AccountEvent(X, None, 5)]
    point = resume_point(tail)
    assert point is not None
    assert point.slot == 5
    assert len(point.appended) == 2
    assert resume_point(tail[:3]) == resume_point([SlotEvent(5, 4, 4)])
    assert resume_point([earlier]) is None
    assert resume_point([]) is None


async def test_the_resumed_step_skips_what_the_stream_holds_then_passes_everything() -> None:
    appended, missing = a_transaction(5), a_transaction(5)
    assert appended.record.signature != missing.record.signature
    point = resume_point([SlotEvent(5, 4, 4), appended, AccountEvent(X, None, 5)])
    assert point is not None
    passed: list[object] = []

    async def on_event(event: object) -> None:
        passed.append(event)

    deliver = AlreadyAppended(point, on_event)
    # The new leader closes slot 5 again: its transactions, then the accounts it wrote.
    again = [
        appended,
        missing,
        AccountEvent(X, None, 5),
        AccountEvent(Y, None, 5),
        SlotEvent(6, 5, 5),
        AccountEvent(X, None, 5),  # past the resumed step: passed on, whatever it is
    ]
    for event in again:
        await deliver(event)
    assert passed == [missing, AccountEvent(Y, None, 5), SlotEvent(6, 5, 5), again[-1]]


async def test_the_tail_is_read_further_until_a_slot_is_in_it() -> None:
    stream: list[object] = [SlotEvent(1, 0, 0)] + [a_transaction(1)] * (2 * FIRST_TAIL)
    asked: list[int] = []

    async def tail(count: int) -> list[object]:
        asked.append(count)
        await trio.lowlevel.checkpoint()
        return stream[-count:]

    point = await find_resume_point(tail)
    assert point is not None
    assert point.slot == 1
    assert asked == [FIRST_TAIL, 4 * FIRST_TAIL]
    asked.clear()
    stream[:1] = []  # no slot at all: read to the stream's start, then none
    assert await find_resume_point(tail) is None
    assert asked == [FIRST_TAIL, 4 * FIRST_TAIL]


async def test_a_new_leader_on_a_node_reports_from_the_last_slot_on_the_stream(
    nursery: trio.Nursery,
) -> None:
    with trio.fail_after(90):
        node = await solana_node(nursery)
        served = await front(nursery, [entry(node)])
        to = fresh_address()
        watching = served.adapter.family.new_index()  # held: the adapter reads what it watches
        watching.add("sub", parse("accountSubscribe", [to]))
        signature, tx = await signed_transfer(node.http_url(network=NETWORK), to, 10**9)
        await node_result(node, "sendTransaction", tx, {"encoding": "base64"})
        landed = (await node_result(node, "getSignatureStatuses", [signature]))["value"][0]["slot"]
        top = await advance(node, 3)

        async def follow(stream: list[object]) -> list[object]:
            """What a leader resuming after ``stream`` reports, up to the node's top slot."""
            reported: list[object] = []
            done = trio.Event()

            async def tail(count: int) -> list[object]:
                await trio.lowlevel.checkpoint()
                return stream[-count:]

            async def on_event(event: object) -> None:
                reported.append(event)
                if isinstance(event, SlotEvent) and event.slot == top:
                    done.set()

            async with trio.open_nursery() as following:
                following.start_soon(served.adapter.serve_events_after, CHAIN, tail, on_event)
                await done.wait()
                following.cancel_scope.cancel()
            return reported

        # The last leader reported slot `landed` opening, then died: its block, and every slot
        # since, are reported from the node.
        opened = SlotEvent(landed, landed - 1, landed - 1)
        reported = await follow([opened])
        first, account, *rest = reported
        assert isinstance(first, TransactionEvent)
        assert first.record.signature == signature
        assert isinstance(account, AccountEvent)
        assert (account.address, account.slot) == (to, landed)
        assert [e.slot for e in rest if isinstance(e, SlotEvent)] == list(
            range(landed + 1, top + 1)
        )
        # It died after appending the transaction: the new leader appends the rest only.
        assert await follow([opened, first]) == [account, *rest]
