"""The head tracker: ordering, gaps, reorganisations (sans-io); and ingestion around it."""

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from adapters.evm.blocks import ChainBlock, LogRecord
from adapters.evm.heads import (
    DEFAULT_WINDOW,
    MAX_BACKFILL,
    MAX_CATCH_UP,
    Advanced,
    HeadTracker,
    NeedParent,
    NeedRange,
)
from broker.events.bus import MemoryBus
from broker.events.chain_events import HeadEvent, LogsEvent
from broker.events.ingest import ChainIngestion
from broker.metrics import Metrics
from tests.support.fake_chain import FakeChain, make_block

CHAIN = "eip155:1337"


def block(
    number: int, branch: str = "a", parent_branch: str | None = None, logs: int = 1
) -> ChainBlock:
    parent = parent_branch or branch
    records = tuple(
        LogRecord("0x" + "aa" * 20, (), b'{"removed":false,"n":%d}' % number) for _ in range(logs)
    )
    return ChainBlock(
        number=number,
        hash=f"0x{branch}{number}",
        parent_hash=f"0x{parent}{number - 1}",
        header_json=b"{}",
        logs=records,
    )


def describe(outcome: NeedParent | NeedRange | Advanced) -> list[tuple[str, int, bool]]:
    assert isinstance(outcome, Advanced)
    return [
        ("head", e.block.number, False)
        if isinstance(e, HeadEvent)
        else ("logs", e.block.number, e.removed)
        for e in outcome.events
    ]


def test_first_block_starts_the_window() -> None:
    tracker = HeadTracker(CHAIN)
    assert describe(tracker.offer([block(10)])) == [("head", 10, False), ("logs", 10, False)]


def test_consecutive_blocks_extend_and_repeats_are_ignored() -> None:
    tracker = HeadTracker(CHAIN)
    tracker.offer([block(1)])
    assert describe(tracker.offer([block(2, logs=0)])) == [("head", 2, False)]
    assert describe(tracker.offer([block(2, logs=0)])) == []


def test_a_gap_asks_for_parents_then_emits_every_height_in_order() -> None:
    tracker = HeadTracker(CHAIN)
    tracker.offer([block(1)])
    need = tracker.offer([block(4)])
    assert need == NeedParent("0xa3", 3)
    need = tracker.offer([block(3), block(4)])
    assert need == NeedParent("0xa2", 2)
    outcome = tracker.offer([block(2), block(3), block(4)])
    assert [e[1] for e in describe(outcome) if e[0] == "head"] == [2, 3, 4]


def test_reorg_replays_orphaned_logs_as_removed_oldest_first() -> None:
    tracker = HeadTracker(CHAIN)
    for n in range(1, 5):
        tracker.offer([block(n)])
    # b3 forks off a2: a3 and a4 are orphaned
    need = tracker.offer([block(4, "b")])
    assert need == NeedParent("0xb3", 3)
    outcome = tracker.offer([block(3, "b", parent_branch="a"), block(4, "b")])
    assert isinstance(outcome, Advanced)
    assert outcome.reorg_depth == 2
    assert describe(outcome) == [
        ("logs", 3, True),
        ("logs", 4, True),
        ("head", 3, False),
        ("logs", 3, False),
        ("head", 4, False),
        ("logs", 4, False),
    ]
    assert tracker.head is not None
    assert tracker.head.hash == "0xb4"


def test_same_height_replacement_is_a_reorg_of_depth_one() -> None:
    tracker = HeadTracker(CHAIN)
    tracker.offer([block(1)])
    tracker.offer([block(2)])
    outcome = tracker.offer([block(2, "b", parent_branch="a")])
    assert isinstance(outcome, Advanced)
    assert outcome.reorg_depth == 1
    assert describe(outcome)[0] == ("logs", 2, True)


def test_reorg_deeper_than_the_window_is_reported_not_silent() -> None:
    tracker = HeadTracker(CHAIN, window=4)
    for n in range(1, 11):
        tracker.offer([block(n)])
    outcome = tracker.offer([block(6, "z", parent_branch="y")])
    assert isinstance(outcome, Advanced)
    assert outcome.deep_reorg
    assert outcome.reorg_depth == 4, "every block the window held was orphaned"
    assert tracker.head is not None
    assert tracker.head.hash == "0xz6"
    assert describe(outcome)[:4] == [("logs", n, True) for n in range(7, 11)]


# --------------------------------------------------------------------------------------------------
# Long gaps: filled forwards in bounded batches; past MAX_CATCH_UP skipped, and reported


def resolve(
    tracker: HeadTracker, reported: ChainBlock, chain: dict[str, ChainBlock]
) -> tuple[list[Advanced], int]:
    """Drive the tracker as ingestion does (by hand): the outcomes, and the longest segment held."""
    by_number = {b.number: b for b in chain.values()}
    outcomes: list[Advanced] = []
    longest = 0
    segment = [reported]
    while True:
        longest = max(longest, len(segment))
        outcome = tracker.offer(segment)
        if isinstance(outcome, Advanced):
            outcomes.append(outcome)
            if segment[-1] is reported:
                return outcomes, longest
            segment = [reported]
        elif isinstance(outcome, NeedRange):
            segment = [by_number[n] for n in range(outcome.first, outcome.last + 1)]
        else:
            segment.insert(0, chain[outcome.block_hash])


def heads(outcomes: list[Advanced]) -> list[int]:
    return [e.block.number for o in outcomes for e in o.events if isinstance(e, HeadEvent)]


def test_a_gap_longer_than_one_backfill_is_filled_in_bounded_batches() -> None:
    chain = {b.hash: b for b in (block(n, logs=0) for n in range(1, 3001))}
    tracker = HeadTracker(CHAIN)
    tracker.offer([chain["0xa100"]])
    assert tracker.offer([chain["0xa3000"]]) == NeedRange(101, 100 + MAX_BACKFILL)
    outcomes, longest = resolve(tracker, chain["0xa3000"], chain)
    assert heads(outcomes) == list(range(101, 3001)), "every height once, in order"
    assert longest <= MAX_BACKFILL
    assert all(not o.skipped and not o.reorg_depth for o in outcomes)
    assert tracker.head == chain["0xa3000"]


def test_a_batch_that_stops_linking_is_cut_and_the_rest_asked_again() -> None:
    tracker = HeadTracker(CHAIN, backfill=4)
    tracker.offer([block(1)])
    # 2..5 fetched by number while the chain reorganised at 4: 4 and 5 belong to branch b
    batch = [block(2), block(3), block(4, "b", parent_branch="x"), block(5, "b")]
    assert describe(tracker.offer(batch)) == [
        ("head", 2, False),
        ("logs", 2, False),
        ("head", 3, False),
        ("logs", 3, False),
    ]
    assert tracker.offer([block(9, "b")]) == NeedRange(4, 7)


def test_a_reorg_at_a_batch_boundary_walks_back_by_hash() -> None:
    tracker = HeadTracker(CHAIN, backfill=4)
    for n in range(1, 4):
        tracker.offer([block(n)])
    need = tracker.offer([block(20, "b")])
    assert need == NeedRange(4, 7)
    # the new branch forked off 2: b4's parent is b3, which the tracker does not know
    batch = [block(4, "b"), block(5, "b"), block(6, "b"), block(7, "b")]
    assert tracker.offer(batch) == NeedParent("0xb3", 3)
    outcome = tracker.offer([block(3, "b", parent_branch="a"), *batch])
    assert isinstance(outcome, Advanced)
    assert outcome.reorg_depth == 1
    assert describe(outcome)[0] == ("logs", 3, True)
    assert [e[1] for e in describe(outcome) if e[0] == "head"] == [3, 4, 5, 6, 7]


def test_a_gap_longer_than_max_catch_up_is_skipped_and_reported() -> None:
    tracker = HeadTracker(CHAIN)
    tracker.offer([block(100)])
    far = 100 + MAX_CATCH_UP + 2
    outcome = tracker.offer([block(far)])
    assert isinstance(outcome, Advanced)
    assert outcome.skipped == range(101, far)
    assert len(outcome.skipped) == MAX_CATCH_UP + 1
    assert describe(outcome) == [("head", far, False), ("logs", far, False)]
    # one block less is caught up, not skipped
    tracker = HeadTracker(CHAIN)
    tracker.offer([block(100)])
    assert tracker.offer([block(far - 1)]) == NeedRange(101, 100 + MAX_BACKFILL)


def test_restart_reports_the_heights_it_skips() -> None:
    tracker = HeadTracker(CHAIN)
    tracker.offer([block(5)])
    outcome = tracker.restart(block(9, "c"))
    assert outcome.skipped == range(6, 9)
    assert tracker.head is not None
    assert tracker.head.hash == "0xc9"
    assert HeadTracker(CHAIN).restart(block(3)).skipped == range(0)


def test_restart_at_or_below_the_head_removes_the_logs_it_orphans() -> None:
    tracker = HeadTracker(CHAIN)
    for n in range(1, 6):
        tracker.offer([block(n)])
    outcome = tracker.restart(block(4, "b", parent_branch="x"))  # b3 could not be fetched
    assert describe(outcome) == [
        ("logs", 4, True),
        ("logs", 5, True),
        ("head", 4, False),
        ("logs", 4, False),
    ]
    assert outcome.reorg_depth == 2
    assert outcome.deep_reorg, "the fork point is unknown: older logs may be orphaned too"
    assert outcome.fork_height == 4
    assert outcome.skipped == range(0)
    assert tracker.head is not None
    assert tracker.head.hash == "0xb4"
    # the window goes on from b4
    assert describe(tracker.offer([block(5, "b")])) == [("head", 5, False), ("logs", 5, False)]


def test_a_reorg_reports_the_first_height_it_replaced() -> None:
    tracker = HeadTracker(CHAIN)
    for n in range(1, 6):
        tracker.offer([block(n)])
    segment = [block(4, "b", parent_branch="a"), block(5, "b"), block(6, "b")]
    outcome = tracker.offer(segment)
    assert isinstance(outcome, Advanced)
    assert (outcome.reorg_depth, outcome.fork_height, outcome.deep_reorg) == (2, 4, False)


# --------------------------------------------------------------------------------------------------
# Ingestion: what the tracker reports is published, logged and counted


@asynccontextmanager
async def ingesting(chain: FakeChain) -> AsyncIterator[tuple[ChainIngestion, list[Any]]]:
    bus, published = MemoryBus(), list[Any]()
    async with trio.open_nursery() as nursery:
        await nursery.start(bus.serve_reader, [CHAIN], lambda event, _: published.append(event))
        yield ChainIngestion(chain, CHAIN, bus, Metrics()), published
        nursery.cancel_scope.cancel()


def sample(ingestion: ChainIngestion, name: str) -> float:
    return ingestion.metrics.registry.get_sample_value(name, {"chain": CHAIN}) or 0.0


def errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


async def test_ingestion_catches_up_a_long_gap_without_skipping(
    caplog: pytest.LogCaptureFixture,
) -> None:
    chain = FakeChain(CHAIN)
    mined = chain.mine(2500)
    async with ingesting(chain) as (ingestion, published):
        await ingestion.on_block(mined[99])
        await ingestion.on_block(mined[-1])  # head 2500 after an outage
    assert [e.block.number for e in published if isinstance(e, HeadEvent)] == list(range(100, 2501))
    assert sample(ingestion, "scopecast_skipped_heights_total") == 0
    assert errors(caplog) == []


async def test_ingestion_logs_and_counts_the_heights_it_skips(
    caplog: pytest.LogCaptureFixture,
) -> None:
    far = 100 + MAX_CATCH_UP + 2
    async with ingesting(FakeChain(CHAIN)) as (ingestion, published):
        await ingestion.on_block(block(100))
        with caplog.at_level(logging.INFO, logger="broker"):
            await ingestion.on_block(block(far))
    assert [e.block.number for e in published if isinstance(e, HeadEvent)] == [100, far]
    assert sample(ingestion, "scopecast_skipped_heights_total") == MAX_CATCH_UP + 1
    assert any(f"heights 101-{far - 1}" in m for m in errors(caplog)), errors(caplog)


async def test_ingestion_counts_the_heights_of_blocks_the_node_cannot_produce(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # the node knows none of the blocks but the heads it reports
    async with ingesting(FakeChain(CHAIN)) as (ingestion, published):
        await ingestion.on_block(block(10))
        with caplog.at_level(logging.INFO, logger="broker"):
            await ingestion.on_block(block(20))
    assert [e.block.number for e in published if isinstance(e, HeadEvent)] == [10, 20]
    assert sample(ingestion, "scopecast_skipped_heights_total") == 9
    assert any("cannot fetch block 0xa19" in m for m in errors(caplog)), errors(caplog)
    assert any("heights 11-19" in m for m in errors(caplog)), errors(caplog)


async def test_a_deep_reorg_is_counted_measured_and_logged_as_an_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    chain = FakeChain(CHAIN)
    canonical = chain.mine(300)
    async with ingesting(chain) as (ingestion, published):
        for b in canonical:
            await ingestion.on_block(b)
        published.clear()
        fork = chain.reorg(200, 201, salt="z")
        with caplog.at_level(logging.INFO, logger="broker"):
            await ingestion.on_block(fork[-1])  # forks at 100: 200 deep, the window holds 128
    assert sample(ingestion, "scopecast_reorgs_total") == 1
    assert sample(ingestion, "scopecast_reorg_depth_count") == 1
    assert sample(ingestion, "scopecast_reorg_depth_sum") == DEFAULT_WINDOW
    assert any(
        "reorganisation of depth 128 (deeper than the window" in m for m in errors(caplog)
    ), errors(caplog)
    removed = [e for e in published if isinstance(e, LogsEvent) and e.removed]
    assert [e.block.number for e in removed] == list(range(173, 301))
    assert published[-2:] == [HeadEvent(CHAIN, fork[-1]), LogsEvent(CHAIN, fork[-1], False)]


async def test_a_shallow_reorg_is_counted_and_logged_at_info(
    caplog: pytest.LogCaptureFixture,
) -> None:
    chain = FakeChain(CHAIN)
    async with ingesting(chain) as (ingestion, _):
        for b in chain.mine(5):
            await ingestion.on_block(b)
        (replacement,) = chain.reorg(1, 1, salt="b")
        with caplog.at_level(logging.INFO, logger="broker"):
            await ingestion.on_block(replacement)
    assert sample(ingestion, "scopecast_reorgs_total") == 1
    assert sample(ingestion, "scopecast_reorg_depth_sum") == 1
    assert errors(caplog) == []
    assert any("reorganisation of depth 1 at height 5" in r.getMessage() for r in caplog.records)


async def test_a_reorg_is_logged_at_its_fork_not_at_the_new_head(
    caplog: pytest.LogCaptureFixture,
) -> None:
    chain = FakeChain(CHAIN)
    async with ingesting(chain) as (ingestion, _):
        for b in chain.mine(5):
            await ingestion.on_block(b)
        replacements = chain.reorg(2, 3, salt="b")  # 4 and 5 replaced; new head 6
        with caplog.at_level(logging.INFO, logger="broker"):
            await ingestion.on_block(replacements[-1])
    assert sample(ingestion, "scopecast_reorg_depth_sum") == 2
    assert any(
        "reorganisation of depth 2 at height 4 (reported head 6)" in r.getMessage()
        for r in caplog.records
    ), [r.getMessage() for r in caplog.records]


async def test_restarting_below_the_head_removes_orphaned_logs_and_counts_a_reorg(
    caplog: pytest.LogCaptureFixture,
) -> None:
    chain = FakeChain(CHAIN)
    mined = chain.mine(5)
    # a block at height 4 whose parent the node cannot produce (pruned, or another node's branch)
    stranger = make_block(4, "0x" + "ee" * 32, salt="x")
    async with ingesting(chain) as (ingestion, published):
        for b in mined:
            await ingestion.on_block(b)
        published.clear()
        with caplog.at_level(logging.INFO, logger="broker"):
            await ingestion.on_block(stranger)
    assert published == [
        LogsEvent(CHAIN, mined[3], removed=True),
        LogsEvent(CHAIN, mined[4], removed=True),
        HeadEvent(CHAIN, stranger),
        LogsEvent(CHAIN, stranger, removed=False),
    ]
    assert sample(ingestion, "scopecast_reorgs_total") == 1
    assert sample(ingestion, "scopecast_reorg_depth_sum") == 2
    assert sample(ingestion, "scopecast_skipped_heights_total") == 0
    assert any("restarting the window" in m for m in errors(caplog)), errors(caplog)
    assert any("reorganisation of depth 2" in m for m in errors(caplog)), errors(caplog)
