"""The expiry tracker, sans-io: plain calls, both clocks given."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from broker.sessions import Identity
from broker.sessions.expiry import ExpiryTracker

DAPP = Identity.of("k", "https://dapp.example")
OTHER = Identity.of("k", "https://other.example")
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_a_connected_dapp_is_looked_up_once_and_then_watched() -> None:
    tracker = ExpiryTracker()
    tracker.connected(DAPP)
    assert tracker.to_look_up({DAPP}) == [DAPP]
    assert tracker.to_look_up({DAPP}) == []  # not twice
    tracker.looked_up(DAPP, T0, connected=True)
    assert tracker.watches(DAPP)
    assert tracker.due(T0 - timedelta(seconds=1)) == []
    assert tracker.due(T0) == [(DAPP, T0)]
    tracker.ended(DAPP)
    assert not tracker.watches(DAPP)
    assert len(tracker) == 0


def test_a_dapp_gone_before_its_lookup_is_not_looked_up() -> None:
    tracker = ExpiryTracker()
    tracker.connected(DAPP)
    assert tracker.gone(DAPP, now=0.0)
    assert tracker.to_look_up(set()) == []


def test_a_change_during_a_lookup_makes_it_stale() -> None:
    tracker = ExpiryTracker()
    tracker.connected(DAPP)
    assert tracker.to_look_up({DAPP}) == [DAPP]
    tracker.watch(DAPP, None)  # the session ended while the lookup was under way
    tracker.looked_up(DAPP, T0, connected=True)  # what the lookup read is older than that
    assert not tracker.watches(DAPP)


def test_a_failed_lookup_is_tried_at_the_next_check() -> None:
    tracker = ExpiryTracker()
    tracker.connected(DAPP)
    assert tracker.to_look_up({DAPP}) == [DAPP]
    tracker.look_up_failed(DAPP)
    assert tracker.to_look_up({DAPP}) == [DAPP]


def test_without_lingering_a_gone_dapp_is_forgotten_at_once() -> None:
    tracker = ExpiryTracker(linger=0.0)
    tracker.watch(DAPP, T0)
    assert tracker.gone(DAPP, now=10.0)
    assert tracker.due(T0) == []


def test_a_gone_dapp_lingers_for_the_window_and_its_changes_are_followed() -> None:
    tracker = ExpiryTracker(linger=300.0)
    tracker.watch(DAPP, T0)
    assert not tracker.gone(DAPP, now=10.0)
    assert tracker.lingering(DAPP)
    later = T0 + timedelta(hours=1)
    tracker.watch(DAPP, later)  # renewed by another process meanwhile
    assert tracker.due(T0) == []
    assert tracker.due(later) == [(DAPP, later)]
    assert tracker.forget_lingering(now=309.9) == []
    assert tracker.forget_lingering(now=310.0) == [DAPP]
    assert not tracker.watches(DAPP)
    assert not tracker.lingering(DAPP)


def test_a_lingering_dapp_that_comes_back_is_looked_up_afresh() -> None:
    tracker = ExpiryTracker(linger=300.0)
    tracker.watch(DAPP, T0)
    tracker.gone(DAPP, now=0.0)
    tracker.connected(DAPP)
    assert not tracker.lingering(DAPP)
    assert not tracker.watches(DAPP)  # what it had may have changed while it was away
    assert tracker.to_look_up({DAPP}) == [DAPP]


def test_an_end_that_failed_to_be_announced_stays_due() -> None:
    tracker = ExpiryTracker()
    tracker.watch(DAPP, T0)
    tracker.watch(OTHER, T0 + timedelta(days=1))
    assert tracker.due(T0) == [(DAPP, T0)]
    tracker.ended(DAPP)
    tracker.end_failed(DAPP, T0)
    assert tracker.due(T0) == [(DAPP, T0)]
    assert tracker.still(DAPP, T0)
    tracker.watch(DAPP, T0 + timedelta(days=2))
    assert not tracker.still(DAPP, T0)  # a change came meanwhile


def test_it_says_when_it_next_has_something_to_do_and_raises_the_alarm_when_that_may_be_sooner() -> (
    None
):
    tracker = ExpiryTracker(linger=10.0)
    alarms: list[str] = []
    tracker.on_change = lambda: alarms.append("!")
    assert (tracker.has_to_look_up(), tracker.next_expiry(), tracker.next_forgetting()) == (
        False,
        None,
        None,
    )
    tracker.connected(DAPP)
    assert tracker.has_to_look_up()
    assert alarms == ["!"]
    tracker.to_look_up({DAPP})
    assert not tracker.has_to_look_up()
    tracker.watch(DAPP, T0 + timedelta(seconds=30))
    tracker.connected(OTHER)
    tracker.watch(OTHER, T0)
    assert tracker.next_expiry() == T0  # the earliest
    assert len(alarms) == 4
    assert not tracker.gone(OTHER, now=5.0)  # lingers until 15.0
    assert tracker.next_forgetting() == 15.0
    assert len(alarms) == 5
    tracker.watch(OTHER, None)  # no session: nothing sooner, no alarm
    assert (tracker.next_expiry(), tracker.next_forgetting()) == (T0 + timedelta(seconds=30), None)
    assert len(alarms) == 5
