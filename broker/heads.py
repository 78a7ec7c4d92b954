"""The head tracker: from the blocks an adapter reports to canonical, gap-free chain events (sans-io).

Adapters report blocks as they see them: sometimes with gaps (a reconnect, a slow poll), sometimes on
another branch (a reorganisation). The tracker keeps a window of recent canonical blocks and connects
each report to it by parent hash. When the parent is unknown it asks the caller for it
(:class:`NeedParent`); the caller fetches it from the adapter and offers the longer segment again.
Once connected, it emits, in order: the orphaned blocks' logs as removed (oldest first), then for each
new block its head and its logs. Every height is emitted once; a reorganisation deeper than the window
cannot be connected and is reported as such (the caller logs and counts it), never silently.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Final

from adapters.base import ChainBlock
from broker.events import ChainEvent, HeadEvent, LogsEvent

DEFAULT_WINDOW: Final = 128
MAX_BACKFILL: Final = 1024


@dataclass(frozen=True, slots=True)
class NeedParent:
    """Fetch the block with ``block_hash`` and call :meth:`HeadTracker.offer` with it prepended."""

    block_hash: str
    number: int


@dataclass(frozen=True, slots=True)
class Advanced:
    """The segment connected: the events to publish, and how many blocks were orphaned."""

    events: list[ChainEvent] = field(default_factory=list)
    reorg_depth: int = 0
    deep_reorg: bool = False


class HeadTracker:
    """Canonical chain state of one chain, fed with reported blocks."""

    def __init__(self, chain: str, *, window: int = DEFAULT_WINDOW) -> None:
        self.chain = chain
        self.window = window
        self._blocks: deque[ChainBlock] = deque(maxlen=window)
        self._index: dict[str, int] = {}  # hash -> number, for blocks in the window

    @property
    def head(self) -> ChainBlock | None:
        return self._blocks[-1] if self._blocks else None

    def knows(self, block_hash: str) -> bool:
        return block_hash in self._index

    def offer(self, segment: list[ChainBlock]) -> NeedParent | Advanced:
        """Offer blocks (oldest first, each the parent of the next) ending at a reported head."""
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
        oldest_known = self._blocks[0].number
        too_far = first.number - 1 < oldest_known or len(segment) >= MAX_BACKFILL
        if too_far:
            orphaned = len([b for b in self._blocks if b.number >= first.number])
            self._reset()
            advanced = self._extend(segment)
            return Advanced(advanced.events, orphaned, deep_reorg=True)
        return NeedParent(first.parent_hash, first.number - 1)

    def _extend(self, segment: list[ChainBlock]) -> Advanced:
        events: list[ChainEvent] = []
        for block in segment:
            self._push(block)
            events.append(HeadEvent(self.chain, block))
            if block.logs:
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
            LogsEvent(self.chain, block, removed=True) for block in orphaned if block.logs
        ]
        events.extend(self._extend(segment).events)
        return Advanced(events, reorg_depth=len(orphaned))

    def _push(self, block: ChainBlock) -> None:
        if len(self._blocks) == self._blocks.maxlen:
            evicted = self._blocks[0]
            self._index.pop(evicted.hash, None)
        self._blocks.append(block)
        self._index[block.hash] = block.number

    def _reset(self) -> None:
        self._blocks.clear()
        self._index.clear()
