"""The slot sequencer (sans-io): every slot with a block once, in order, whatever the sightings."""

from adapters.solana._events import SlotEvent
from adapters.solana.upstream._slots import NeedSlots, Sighting, SlotSequencer, Step


def run(sequencer: SlotSequencer, steps: list[Step]) -> list[tuple[int | None, int]]:
    for step in steps:
        sequencer.reported(step.opened.slot)
    return [(step.close, step.opened.slot) for step in steps]


def test_the_first_sighting_opens_its_slot_and_the_next_closes_it() -> None:
    sequencer = SlotSequencer()
    first = sequencer.plan(Sighting(10, 9, 8))
    assert first == [Step(None, SlotEvent(10, 9, 8))]
    run(sequencer, first)
    nxt = sequencer.plan(Sighting(11, 10, 10))
    assert nxt == [Step(10, SlotEvent(11, 10, 10))]


def test_a_gap_is_filled_from_the_slots_with_a_block_then_the_sighting() -> None:
    sequencer = SlotSequencer()
    run(sequencer, sequencer.plan(Sighting(10, 9, 9)))
    seen = Sighting(16, 15, 15)
    assert sequencer.plan(seen) == NeedSlots(11, 15)
    # 13 was skipped by its leader; 15, the notified parent, is not confirmed yet.
    steps = sequencer.plan(seen, [11, 12, 14])
    assert isinstance(steps, list)
    assert [(s.close, s.opened.slot, s.opened.parent) for s in steps] == [
        (10, 11, 10),
        (11, 12, 11),
        (12, 14, 12),
        (14, 15, 14),
        (15, 16, 15),
    ]
    assert all(s.opened.root <= s.opened.parent for s in steps)
    run(sequencer, steps)
    assert sequencer.last == 16


def test_a_lagging_node_after_a_switch_reports_nothing_twice() -> None:
    sequencer = SlotSequencer()
    run(sequencer, sequencer.plan(Sighting(20, 19, 19)))
    assert sequencer.plan(Sighting(18, 17, 17)) == []
    assert sequencer.plan(Sighting(20, 19, 19)) == []
    assert sequencer.plan(Sighting(21, 20, 20)) == [Step(20, SlotEvent(21, 20, 20))]


def test_a_polled_slot_without_parent_follows_or_needs_the_range() -> None:
    sequencer = SlotSequencer()
    run(sequencer, sequencer.plan(Sighting(5, None, 3)))
    assert sequencer.plan(Sighting(6, None, 4)) == [Step(5, SlotEvent(6, 5, 4))]
    assert sequencer.plan(Sighting(9, None, 4)) == NeedSlots(6, 8)
    steps = sequencer.plan(Sighting(9, None, 4), [6, 7, 8])
    assert run(sequencer, steps) == [(5, 6), (6, 7), (7, 8), (8, 9)]


def test_a_plan_cut_short_is_planned_again_from_where_it_stopped() -> None:
    sequencer = SlotSequencer()
    run(sequencer, sequencer.plan(Sighting(1, 0, 0)))
    steps = sequencer.plan(Sighting(4, 3, 3), [2, 3])
    assert isinstance(steps, list)
    run(sequencer, steps[:1])  # slot 2 went out, then the upstream failed
    again = sequencer.plan(Sighting(5, 4, 4), [3, 4])
    assert run(sequencer, again) == [(2, 3), (3, 4), (4, 5)]


def test_a_gap_longer_than_the_fill_limit_starts_again_at_the_sighting() -> None:
    sequencer = SlotSequencer(max_fill=5)
    run(sequencer, sequencer.plan(Sighting(10, 9, 9)))
    assert sequencer.plan(Sighting(16, 15, 15)) == NeedSlots(11, 15)  # 5 between: filled
    assert sequencer.given_up is None
    assert sequencer.plan(Sighting(17, 16, 16)) == [Step(None, SlotEvent(17, 16, 16))]
    assert sequencer.given_up == (11, 16)
