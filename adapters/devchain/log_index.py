"""An append-only index of the canonical chain's logs, and the ``eth_getLogs`` scan over it (sans-io).

Each canonical block with logs has one immutable :class:`BlockLogs` entry holding its pre-encoded
logs and the sets of addresses and topics they use, so a scan skips blocks that cannot match without
looking at their logs. A reorganisation truncates the index back to the fork point; new blocks are
appended. A scan works on a slice taken from the index (a list of immutable entries), so it can run
in a worker thread while the index moves on.
"""

from __future__ import annotations

import time
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from adapters.evm.blocks import LogRecord
from adapters.evm.log_filter import LogCriteria

MAX_RESULTS: Final = 10_000
MAX_SECONDS: Final = 10.0
_CLOCK_EVERY: Final = 256  # blocks between deadline checks


class TooManyResults(Exception):
    """More than the allowed number of logs matched."""


class QueryTimeout(Exception):
    """The scan ran past its deadline."""


@dataclass(frozen=True, slots=True)
class BlockLogs:
    """The logs of one canonical block."""

    number: int
    logs: tuple[LogRecord, ...]
    addresses: frozenset[str]
    topics: frozenset[str]


class LogIndex:
    """The canonical blocks' logs, by block number."""

    def __init__(self) -> None:
        self._blocks: list[BlockLogs] = []  # only blocks with logs, ascending
        self._numbers: list[int] = []  # their numbers, for bisection
        self._cumulative: list[int] = []  # logs in the entries up to and including each one

    def __len__(self) -> int:
        """The number of logs indexed."""
        return self._cumulative[-1] if self._cumulative else 0

    def append(self, number: int, logs: Sequence[LogRecord]) -> None:
        """Add the logs of the new canonical block ``number``."""
        if self._numbers and number <= self._numbers[-1]:
            raise ValueError(f"block {number} is not above the indexed head {self._numbers[-1]}")
        if not logs:
            return
        self._blocks.append(
            BlockLogs(
                number=number,
                logs=tuple(logs),
                addresses=frozenset(log.address for log in logs),
                topics=frozenset(topic for log in logs for topic in log.topics),
            )
        )
        self._numbers.append(number)
        self._cumulative.append(len(self) + len(logs))

    def truncate(self, first_removed: int) -> None:
        """Forget the blocks from ``first_removed`` on (they left the canonical chain)."""
        cut = bisect_left(self._numbers, first_removed)
        del self._blocks[cut:]
        del self._numbers[cut:]
        del self._cumulative[cut:]

    def _span(self, first: int, last: int) -> tuple[int, int]:
        return bisect_left(self._numbers, first), bisect_right(self._numbers, last)

    def blocks(self, first: int, last: int) -> list[BlockLogs]:
        """The entries of the blocks from ``first`` to ``last`` inclusive that have logs."""
        start, stop = self._span(first, last)
        return self._blocks[start:stop]

    def count(self, first: int, last: int) -> int:
        """How many logs the blocks from ``first`` to ``last`` inclusive hold."""
        start, stop = self._span(first, last)
        if start >= stop:
            return 0
        before = self._cumulative[start - 1] if start else 0
        return self._cumulative[stop - 1] - before


def scan(
    blocks: Sequence[BlockLogs],
    matcher: LogCriteria,
    *,
    limit: int = MAX_RESULTS,
    timeout: float = MAX_SECONDS,
) -> list[bytes]:
    """The encoded logs of ``blocks`` that match, oldest first.

    Raises :class:`TooManyResults` as soon as more than ``limit`` match (never holding more than
    ``limit + 1``) and :class:`QueryTimeout` once ``timeout`` seconds have passed.
    """
    deadline = time.monotonic() + timeout
    found: list[bytes] = []
    unfiltered = matcher.unfiltered
    for position, block in enumerate(blocks):
        if position % _CLOCK_EVERY == 0 and time.monotonic() > deadline:
            raise QueryTimeout
        if unfiltered:
            if len(found) + len(block.logs) > limit:
                raise TooManyResults
            found.extend(log.json for log in block.logs)
        elif matcher.may_match(block.addresses, block.topics):
            room = limit - len(found)
            matched = [log.json for log in block.logs if matcher.matches(log.address, log.topics)]
            if len(matched) > room:
                raise TooManyResults
            found.extend(matched)
    return found
