"""The head tracker: from the blocks an adapter reports to canonical, gap-free chain events (sans-io).

Adapters report blocks as they see them: sometimes with gaps (a reconnect, a slow poll), sometimes on
another branch (a reorganisation). The tracker keeps a window of recent canonical blocks and connects
each report to it by parent hash. When the parent is unknown it asks the caller for it
(:class:`NeedParent`); the caller fetches it from the adapter and offers the longer segment again. A gap
longer than one backfill batch is filled forwards instead, a batch at a time (:class:`NeedRange`), so
the segment held in memory stays bounded however long the gap.
Once connected, it emits, in order: the orphaned blocks' logs (and transactions, where fetched) as
removed (oldest first), then for each new block its head and its logs (and transactions). Every height is emitted once. What cannot be connected is reported
(the caller logs and counts it), never silent: a reorganisation whose fork point is out of reach
(:attr:`Advanced.deep_reorg`: deeper than the window, or its blocks could not be fetched), and
heights given up on (:attr:`Advanced.skipped`: a gap longer than ``max_catch_up``, or blocks the
adapter could not produce).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Final

from adapters.evm.blocks import ChainBlock, ChainEvent, HeadEvent, LogsEvent

DEFAULT_WINDOW: Final = 128
#: Blocks fetched per catch-up batch, and the longest segment walked back by parent hash.
MAX_BACKFILL: Final = 1024
#: The longest gap filled: past it the tracker jumps to the reported head (catching up further
#: would hold back live heads for too long) and reports the heights it skipped.
MAX_CATCH_UP: Final = 16 * MAX_BACKFILL


@dataclass(frozen=True, slots=True)
class NeedParent:
    """Fetch the block with ``block_hash`` and call :meth:`HeadTracker.offer` with it prepended."""

    block_hash: str
    number: int


@dataclass(frozen=True, slots=True)
class NeedRange:
    """Fetch the canonical blocks ``first``..``last`` (inclusive) by number and offer them, oldest
    first; then offer the reported head again (the next batch, until the gap is closed)."""

    first: int
    last: int


@dataclass(frozen=True, slots=True)
class Advanced:
    """The segment connected: the events to publish, how many blocks were orphaned, and the
    heights that will never be emitted (empty unless the tracker had to give up on a gap).

    On a reorganisation ``fork_height`` is the first height whose block was replaced; when
    ``deep_reorg`` the fork point was out of reach, so the fork is at that height or below it and
    ``reorg_depth`` counts only the orphaned blocks the window held.
    """

    events: list[ChainEvent] = field(default_factory=list)
    reorg_depth: int = 0
    deep_reorg: bool = False
    skipped: range = range(0)
    fork_height: int | None = None


class HeadTracker:
    """Canonical chain state of one chain, fed with reported blocks."""

    def __init__(
        self,
        chain: str,
        *,
        window: int = DEFAULT_WINDOW,
        backfill: int = MAX_BACKFILL,
        max_catch_up: int = MAX_CATCH_UP,
    ) -> None:
        self.chain = chain
        self.window = window
        self.backfill = backfill
        self.max_catch_up = max_catch_up
        self._blocks: deque[ChainBlock] = deque(maxlen=window)
        self._index: dict[str, int] = {}  # hash -> number, for blocks in the window

    @property
    def head(self) -> ChainBlock | None:
        return self._blocks[-1] if self._blocks else None

    def knows(self, block_hash: str) -> bool:
        return block_hash in self._index

    def offer(self, segment: list[ChainBlock]) -> NeedParent | NeedRange | Advanced:
        """Offer blocks (oldest first, each the parent of the next) ending at a reported head.

        A segment whose blocks stop linking up (a batch fetched by number while the chain
        reorganised) is cut at the first break: the rest is asked for again.
        """
        segment = _linked_prefix(segment)
        if not segment:
            return Advanced()
        newest = segment[-1]
        if newest.hash in self._index:
            return Advanced()  # already canonical (a repeated report)
        head = self.head
        first = segment[0]
        if head is None:
            return self._extend([newest])  # first block seen: start there, no history to replay
        if first.parent_hash == head.hash:
            return self._extend(segment)
        if first.parent_hash in self._index:
            return self._reorg(segment)
        gap = range(head.number + 1, first.number)
        if len(gap) > self.max_catch_up:
            return self._replace_window(segment, gap)
        if gap and newest.number - head.number > self.backfill:
            return NeedRange(gap.start, min(gap.start + self.backfill, gap.stop) - 1)
        if first.number - 1 < self._blocks[0].number or len(segment) > self.backfill + self.window:
            # The fork point is older than the window: nothing left to connect to.
            return self._replace_window(segment, range(0))
        return NeedParent(first.parent_hash, first.number - 1)

    def restart(self, block: ChainBlock) -> Advanced:
        """Start again at ``block`` (the blocks to connect it could not be fetched)."""
        head = self.head
        gap = range(head.number + 1, block.number) if head is not None else range(0)
        return self._replace_window([block], gap)

    def _replace_window(self, segment: list[ChainBlock], skipped: range) -> Advanced:
        """Start the window again with ``segment``, which does not connect to it.

        The window's blocks from the segment's height on are orphaned (none of the segment is
        known): their logs are removed, oldest first. Those of older orphaned blocks (the fork
        point is out of reach) cannot be, hence ``deep_reorg``.
        """
        first = segment[0].number
        orphaned = [b for b in self._blocks if b.number >= first]
        self._reset()
        events: list[ChainEvent] = [
            LogsEvent(self.chain, block, removed=True) for block in orphaned if block.has_activity
        ]
        events.extend(self._extend(segment).events)
        if not orphaned:
            return Advanced(events, skipped=skipped)
        return Advanced(events, len(orphaned), deep_reorg=True, skipped=skipped, fork_height=first)

    def _extend(self, segment: list[ChainBlock]) -> Advanced:
        events: list[ChainEvent] = []
        for block in segment:
            self._push(block)
            events.append(HeadEvent(self.chain, block))
            if block.has_activity:
                events.append(LogsEvent(self.chain, block, removed=False))
        return Advanced(events)

    def _reorg(self, segment: list[ChainBlock]) -> Advanced:
        fork_number = self._index[segment[0].parent_hash]
        orphaned: list[ChainBlock] = []
        while self._blocks and self._blocks[-1].number > fork_number:
            block = self._blocks.pop()
            del self._index[block.hash]
            orphaned.append(block)
        orphaned.reverse()
        events: list[ChainEvent] = [
            LogsEvent(self.chain, block, removed=True) for block in orphaned if block.has_activity
        ]
        events.extend(self._extend(segment).events)
        return Advanced(events, reorg_depth=len(orphaned), fork_height=fork_number + 1)

    def _push(self, block: ChainBlock) -> None:
        if len(self._blocks) == self._blocks.maxlen:
            evicted = self._blocks[0]
            self._index.pop(evicted.hash, None)
        self._blocks.append(block)
        self._index[block.hash] = block.number

    def _reset(self) -> None:
        self._blocks.clear()
        self._index.clear()


def _linked_prefix(segment: list[ChainBlock]) -> list[ChainBlock]:
    for i in range(1, len(segment)):
        if segment[i].parent_hash != segment[i - 1].hash:
            return segment[:i]
    return segment
