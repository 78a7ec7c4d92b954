"""The sans-io parts of resuming: cursors, memory logs and what a process remembers of what it
delivered (plain calls, a clock passed in)."""

from __future__ import annotations

import pytest

from broker.events.bus import MemoryLog
from broker.events.cursors import (
    TOKEN_LENGTH,
    FeedPositions,
    ResumeState,
    format_cursor,
    new_token,
    parse_cursor,
    position_order,
    with_cursor,
)

TOKEN = "0123456789abcdef01234567"


def test_a_cursor_reads_back_as_written() -> None:
    text = format_cursor(TOKEN, ["1700000000000-0", "m0a1b2c-17"])
    cursor = parse_cursor(text)
    assert cursor is not None
    assert cursor.token == TOKEN
    assert cursor.positions == ("1700000000000-0", "m0a1b2c-17")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "garbage",
        TOKEN,  # no position
        f"{TOKEN}.",  # an empty position
        f"{TOKEN}.abc",  # not a position of either bus
        f"{TOKEN}.12-x",
        f"{TOKEN.upper()}.1-0",  # the token is lowercase hex
        f"{TOKEN[:-1]}.1-0",
        f"{TOKEN}." + ".".join(["1-0"] * 33),  # more logs than a connection may follow
        f"{TOKEN}.1-0" + ".1-0" * 2000,
    ],
)
def test_a_malformed_cursor_is_none(text: str) -> None:
    assert parse_cursor(text) is None


def test_positions_order_by_time_within_a_bus() -> None:
    assert position_order("1700000000000-1") < position_order("1700000000001-0")
    assert position_order("1700000000000-1") > position_order("1700000000000-0")
    assert position_order("mabc-9") < position_order("mdef-10")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_two_memory_logs_number_their_entries_in_the_order_they_came() -> None:
    first, second = MemoryLog[str](), MemoryLog[str]()
    a = first.append("a")
    b = second.append("b")
    c = first.append("c")
    assert sorted([c, b, a], key=position_order) == [a, b, c]


def test_a_memory_log_reads_a_range_and_refuses_what_it_no_longer_holds() -> None:
    clock = Clock()
    log = MemoryLog[str](window=10.0, retained=3, clock=clock)
    start = log.position
    one = log.append("one")
    two = log.append("two")
    assert log.read_range(start, two) == [(one, "one"), (two, "two")]
    assert log.read_range(one, two) == [(two, "two")]
    assert log.read_range(two, two) == []
    three = log.append("three")
    four = log.append("four")  # "one" is dropped: at most three kept
    assert log.read_range(start, four) is None
    assert log.read_range(one, four) == [(two, "two"), (three, "three"), (four, "four")]
    clock.now = 11.0
    five = log.append("five")  # the others are older than the window now
    assert log.read_range(three, five) is None
    assert log.read_range(four, five) == [(five, "five")]


def test_a_memory_log_refuses_positions_of_another_log() -> None:
    log, other = MemoryLog[str](), MemoryLog[str]()
    theirs = other.append("x")
    log.append("y")
    assert log.read_range(theirs, log.position) is None
    assert log.read_range("1700000000000-0", log.position) is None
    assert log.read_range(log.position.replace("-", "-9"), log.position) is None  # the future


def test_recent_entries_fill_the_last_stretch_or_say_they_cannot() -> None:
    live = FeedPositions(recent=3)
    live.advance("eip155:1", "1-0")  # a reader starting: a position, nothing before it known
    assert live.recent_after("eip155:1", "1-0") == []
    assert live.recent_after("eip155:1", "0-5") is None
    for n in range(2, 6):
        live.advance("eip155:1", f"{n}-0", f"event {n}")
    assert live.recent_after("eip155:1", "5-0") == []
    assert live.recent_after("eip155:1", "3-0") == [("4-0", "event 4"), ("5-0", "event 5")]
    assert live.recent_after("eip155:1", "2-0") is None  # no longer held (three kept)
    assert live.recent_after("eip155:2", "2-0") is None  # a feed it never delivered
    live.advance("eip155:1", "9-0")  # a reader restarting: what came before is forgotten
    assert live.recent_after("eip155:1", "5-0") is None


def test_recent_entries_are_kept_for_a_while_only() -> None:
    """Entries older than ``recent_seconds`` go as the next one is delivered: a resume whose
    last stretch reaches that far back reads the log once more instead."""
    now = [100.0]
    live = FeedPositions(recent=1024, recent_seconds=30.0, clock=lambda: now[0])
    live.advance("eip155:1", "1-0")
    for n in range(2, 5):
        live.advance("eip155:1", f"{n}-0", f"event {n}")
        now[0] += 10.0
    assert live.recent_after("eip155:1", "2-0") == [("3-0", "event 3"), ("4-0", "event 4")]
    now[0] += 15.0  # as event 5 comes, event 2 is 45 s old, event 3 35 s, event 4 25 s
    live.advance("eip155:1", "5-0", "event 5")
    assert live.recent_after("eip155:1", "2-0") is None  # what followed 2-0 is gone
    assert live.recent_after("eip155:1", "3-0") is None  # 3-0 itself is: no longer placed
    assert live.recent_after("eip155:1", "4-0") == [("5-0", "event 5")]


def test_a_cursor_follows_the_live_positions_unless_pinned() -> None:
    live = FeedPositions()
    live.advance("changes", "1-0")
    state = ResumeState(live, TOKEN)
    state.follow("changes")
    live.advance("eip155:1", "5-0")
    assert state.follow("eip155:1")
    assert not state.follow("eip155:1")
    assert state.cursor() == f"{TOKEN}.1-0.5-0".encode()
    live.advance("eip155:1", "6-0", "event")
    assert state.cursor() == f"{TOKEN}.1-0.6-0".encode()
    state.pinned = {"eip155:1": "5-3"}
    assert state.cursor() == f"{TOKEN}.1-0.5-3".encode()
    state.pinned = None
    assert state.cursor() == f"{TOKEN}.1-0.6-0".encode()


def test_a_resume_token_is_always_of_one_length() -> None:
    assert len(new_token()) == TOKEN_LENGTH
    with pytest.raises(ValueError, match="24 hex digits"):
        ResumeState(FeedPositions(), "ab" * 13)


def test_a_cursor_goes_into_a_notifications_params() -> None:
    message = b'{"jsonrpc":"2.0","method":"wallet_sessionChanged","params":{"sessionScopes":{}}}'
    assert with_cursor(message, b"abc") == (
        b'{"jsonrpc":"2.0","method":"wallet_sessionChanged",'
        b'"params":{"sessionScopes":{},"cursor":"abc"}}'
    )
