"""The import progress line: on a terminal only, throttled, with a summary at the end."""

from __future__ import annotations

import io

from adapters.devchain.progress import TerminalProgress, progress_line, summary_line


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_line_says_blocks_rate_and_time_left() -> None:
    assert progress_line(1_200, 5_000, 3.0) == (
        "importing blocks: 1,200/5,000 (400 blocks/s, 10 s left)"
    )
    assert summary_line(5_000, 12.5) == "imported 5,000 blocks in 12.5 s (400 blocks/s)"


def test_a_terminal_sees_a_throttled_line_and_a_summary() -> None:
    terminal, clock = Terminal(), Clock()
    progress = TerminalProgress(terminal, per_second=10, clock=clock)
    for done in range(1, 101):
        clock.now += 0.01  # 100 blocks in one second
        progress(done, 100)
    lines = terminal.getvalue().split("\r")
    assert 5 <= len([line for line in lines if line.startswith("importing")]) <= 12
    assert lines[-1].startswith("imported 100 blocks in 1.0 s")
    assert lines[-1].endswith("\n")


def test_not_a_terminal_is_quiet() -> None:
    quiet = io.StringIO()
    progress = TerminalProgress(quiet)
    for done in range(1, 11):
        progress(done, 10)
    assert quiet.getvalue() == ""
