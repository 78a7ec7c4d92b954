"""trio's rule that an async function is a checkpoint (a schedule point and a cancel point),
kept by the in-memory backends of the broker's async interfaces as by their Redis twins: a loop
over them lets the other tasks run, and a call cancelled before it starts does nothing."""

from __future__ import annotations

import types

import pytest
import trio
import trio.testing

from broker.access import MemoryLimiter
from broker.access._policy import Rate
from broker.events.bus import MemoryBus
from broker.events.resume._records import MemoryResumeStore
from broker.events.session_changes import MemoryChangeBus
from broker.events.subscriptions._model import NoCursors

# The interfaces are typed for real events and records; these backends only keep them.
EVENT = types.SimpleNamespace(chain="eip155:1")
RATE = Rate(per_second=10.0, burst=10)


async def test_the_memory_backends_checkpoint() -> None:
    bus, changes, store, limiter = (
        MemoryBus(),
        MemoryChangeBus(),
        MemoryResumeStore(),
        MemoryLimiter(),
    )
    calls = [
        lambda: bus.publish(EVENT),  # type: ignore[arg-type]
        lambda: bus.read_range("eip155:1", "m0-0", "m0-1"),
        lambda: changes.publish(EVENT),  # type: ignore[arg-type]
        lambda: changes.read_range("m0-0", "m0-1"),
        lambda: store.load("a" * 24),
        lambda: NoCursors().keep(EVENT),  # type: ignore[arg-type]
        lambda: limiter.take("k", RATE, 1),
        lambda: limiter.open_slot("k", 10),
        lambda: limiter.close_slot("k", "1"),
    ]
    for call in calls:
        with trio.testing.assert_checkpoints():
            await call()
    # The one exception, on purpose (see MemoryResumeStore.save): no checkpoint.
    with trio.testing.assert_no_checkpoints():
        await store.save("a" * 24, EVENT, 60.0)  # type: ignore[arg-type]


async def test_cancelled_before_it_starts_a_publish_or_a_slot_does_nothing() -> None:
    bus, limiter = MemoryBus(), MemoryLimiter()
    delivered: list[object] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(bus.serve_reader, ["eip155:1"], lambda e, p: delivered.append(e))
        with trio.CancelScope() as scope:
            scope.cancel()
            with pytest.raises(trio.Cancelled):
                await bus.publish(EVENT)  # type: ignore[arg-type]
            with pytest.raises(trio.Cancelled):
                await limiter.open_slot("k", 1)
        assert delivered == []
        assert await limiter.open_slot("k", 1) is not None  # the one slot was never taken
        nursery.cancel_scope.cancel()
