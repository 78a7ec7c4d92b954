"""A fan-out in slices (``broker.events.subscriptions._delivery``): other tasks run between two slices,
each subscriber gets an event's frames in one write, and what a cursor says stays exact (events in
order, a subscription that ends or begins meanwhile, whatever waits its turn behind them)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
import trio

from adapters.evm.blocks import ChainBlock, LogRecord, LogsEvent
from adapters.evm.subscriptions import EVM_SUBSCRIPTIONS
from broker.events.cursors import FeedPositions, ResumeState, new_token
from broker.events.subscriptions import Subscriber, Subscription, SubscriptionHub
from broker.events.subscriptions._delivery import DeliveryQueue
from broker.metrics import Metrics
from broker.rpc.dispatch import Slot, Slots
from broker.transport.outbox import corked

CHAIN = "eip155:1"
TOKEN = "0x" + "aa" * 20
LOGS_PER_BLOCK = 3
RESUME: Slot[ResumeState] = Slot("resume")


class Sink:
    """A connection as the fan-out sees it: every write it was given, whole."""

    def __init__(self) -> None:
        self.slots = Slots()
        self.writes: list[bytes] = []

    def send_frame(self, frame: bytes) -> bool:
        self.writes.append(frame)
        return True

    def frame_sender(self, *, held: bool = False) -> Callable[[bytes], bool]:
        return self.send_frame


class Cursors:
    """Every connection resumes: one token each, following the chains it subscribes to."""

    def __init__(self, live: FeedPositions) -> None:
        self.live = live

    def state_for(self, conn: Subscriber, chain: str) -> ResumeState:
        state = conn.slots.get(RESUME)
        if state is None:
            state = ResumeState(self.live, new_token())
            conn.slots.set(RESUME, state)
        state.follow(chain)
        return state

    def changed(self, conn: Subscriber) -> None:
        return None

    async def keep(self, sub: Subscription) -> None:
        await trio.lowlevel.checkpoint()


def _block(number: int) -> LogsEvent:
    logs = tuple(
        LogRecord(TOKEN, (), b'{"blockNumber":"%x","logIndex":"%x","removed":false}' % (number, i))
        for i in range(LOGS_PER_BLOCK)
    )
    block = ChainBlock(number, f"0x{number:064x}", f"0x{number - 1:064x}", b"{}", logs)
    return LogsEvent(CHAIN, block, removed=False)


def _messages(write: bytes) -> list[dict[str, object]]:
    found = []
    while write:
        length, start = write[1], 2
        if length == 126:
            length, start = int.from_bytes(write[2:4], "big"), 4
        found.append(json.loads(write[start : start + length]))
        write = write[start + length :]
    return found


async def test_a_large_fan_out_goes_in_slices_and_every_cursor_stays_exact() -> None:
    with trio.fail_after(20):
        hub = SubscriptionHub(Metrics())
        hub.families[CHAIN] = EVM_SUBSCRIPTIONS
        hub.cursors = Cursors(hub.positions)
        hub.delivery.slice = 0.0  # a slice is one step between two looks at the clock
        hub.positions.advance(CHAIN, "1-0")
        async with trio.open_nursery() as nursery:
            await nursery.start(hub.serve_delivery)
            sinks = [Sink() for _ in range(600)]
            ids = [
                await hub.subscribe(sink, CHAIN, "eth_subscribe", ["logs", {"address": TOKEN}])
                for sink in sinks
            ]
            hub.publish(_block(2), "2-0")
            # the first slice ran in the publisher's task, the rest waits for the serving task
            reached = sum(1 for sink in sinks if sink.writes)
            assert 0 < reached < len(sinks)
            # meanwhile: one not reached yet unsubscribes, a newcomer subscribes, something
            # waits its turn, and the next block comes
            late = sinks[-1]
            assert hub.unsubscribe(late, CHAIN, "eth_unsubscribe", [ids[-1]])
            newcomer = Sink()
            await hub.subscribe(newcomer, CHAIN, "eth_subscribe", ["logs", {"address": TOKEN}])
            at_turn: list[tuple[int, int]] = []
            hub.delivery.in_turn(
                lambda: at_turn.append(
                    (sum(len(s.writes) for s in sinks[:-1]), len(newcomer.writes))
                )
            )
            hub.publish(_block(3), "3-0")
            assert hub.delivery.busy
            await hub.delivery.delivered()
            assert not hub.delivery.busy
            nursery.cancel_scope.cancel()
    # the turn came after the first block reached everyone, before the next reached anyone
    assert at_turn == [(len(sinks) - 1, 0)]
    assert late.writes == []
    for sink in [*sinks[:-1], newcomer]:
        state = sink.slots.get(RESUME)
        assert state is not None
        blocks = [2, 3] if sink is not newcomer else [3]
        assert len(sink.writes) == len(blocks)  # one write per block
        for write, number in zip(sink.writes, blocks, strict=True):
            messages = _messages(write)
            assert len(messages) == LOGS_PER_BLOCK
            for index, message in enumerate(messages):
                params = message["params"]
                assert isinstance(params, dict)
                assert params["result"]["logIndex"] == f"{index:x}"
                assert params["result"]["blockNumber"] == f"{number:x}"
                assert params["cursor"] == f"{state.token}.{number}-0"
    assert hub.positions.get(CHAIN) == "3-0"


async def test_without_its_serving_task_a_fan_out_ends_at_once() -> None:
    hub = SubscriptionHub(Metrics())
    hub.families[CHAIN] = EVM_SUBSCRIPTIONS
    hub.delivery.slice = 0.0
    sinks = [Sink() for _ in range(300)]
    for sink in sinks:
        await hub.subscribe(sink, CHAIN, "eth_subscribe", ["logs", {"address": TOKEN}])
    hub.publish(_block(2), "2-0")
    assert not hub.delivery.busy
    assert all(len(_messages(sink.writes[0])) == LOGS_PER_BLOCK for sink in sinks)


async def test_a_fan_out_that_fails_to_begin_leaves_nothing_held() -> None:
    # A step holds frames from its first fan-out's beginning: one that raises there must not leave
    # the queue busy (delivered() would never return, and the chain's ingestion would wait on it).
    queue = DeliveryQueue()
    async with trio.open_nursery() as nursery:
        await nursery.start(queue.serve)

        def fails() -> None:
            raise RuntimeError("this fan-out cannot begin")

        with corked(), pytest.raises(RuntimeError):
            queue.submit(fails)
        with trio.fail_after(5):
            await queue.delivered()
        assert not queue.busy
        assert corked().holds == 0
        nursery.cancel_scope.cancel()
