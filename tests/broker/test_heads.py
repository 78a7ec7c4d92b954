"""The head tracker: ordering, gaps, reorganisations (sans-io)."""

from adapters.base import ChainBlock, LogRecord
from broker.events import HeadEvent
from broker.heads import Advanced, HeadTracker, NeedParent

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


def describe(outcome: NeedParent | Advanced) -> list[tuple[str, int, bool]]:
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
