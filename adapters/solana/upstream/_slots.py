"""Slots as subscribers see them: every slot with a block once, in order (sans-io).

The upstream's PubSub says a slot opened (``slotNotification``: slot, parent, root), or polling
says how far the node is. :class:`SlotSequencer` turns each such sighting into a plan: the steps
that take the reported chain from the last slot it reported to the new one. A step *closes* a slot
(its block is complete: its transactions and written accounts are reported) and *opens* the next
one (its :class:`SlotEvent`), the order in which the dev chain reports them. When the new slot
does not follow the last one (a notification dropped behind a slow consumer, a reconnect, a switch
to another upstream, polling), the plan needs the slots with a block in between first
(:class:`NeedSlots`: the shell asks ``getBlocks``). A slot at or below the last one reported is
ignored: a lagging node after a switch must not report anything twice. A gap longer than
``max_fill`` slots is given up: the plan starts again at the new slot.

The shell reports each step's slot back (:meth:`SlotSequencer.reported`) only once its events
went out, so a plan cut short by a failure is planned again from where it stopped.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Final

from .._events import SlotEvent


@dataclass(frozen=True, slots=True)
class Sighting:
    """A slot the upstream reached. ``parent`` and ``root`` come with a notification; None when
    polled. ``source``: the upstream that reached it (None: not known)."""

    slot: int
    parent: int | None = None
    root: int | None = None
    source: int | None = None


@dataclass(frozen=True, slots=True)
class Step:
    """Report the events of ``close``'s block (None: nothing to close), then ``opened``."""

    close: int | None
    opened: SlotEvent


@dataclass(frozen=True, slots=True)
class NeedSlots:
    """The slots with a block from ``first`` to ``last`` (inclusive) are needed to plan."""

    first: int
    last: int


#: The longest gap filled slot by slot (about an hour of Solana's 400 ms slots); past it the
#: reported chain starts again at the new slot, as the EVM ingestion restarts its window.
MAX_FILL: Final = 10_000


class SlotSequencer:
    """Plans the steps from the last reported slot to each new sighting."""

    def __init__(self, *, max_fill: int = MAX_FILL) -> None:
        self.max_fill = max_fill
        #: The last slot whose :class:`SlotEvent` went out (None: none yet).
        self.last: int | None = None
        #: The slots given up by the last plan (a gap longer than ``max_fill``), for the log.
        self.given_up: tuple[int, int] | None = None

    def plan(self, seen: Sighting, between: list[int] | None = None) -> list[Step] | NeedSlots:
        """The steps to ``seen``; :class:`NeedSlots` first when slots in between must be known
        (then call again with ``between``: ``getBlocks`` over that range). An empty plan: nothing
        new."""
        last = self.last
        self.given_up = None
        if last is not None and seen.slot - last - 1 > self.max_fill:
            self.given_up = (last + 1, seen.slot - 1)
            last = None
        if last is None:
            # The first sighting: report from here on (what came before is history).
            parent = seen.parent if seen.parent is not None else max(seen.slot - 1, 0)
            root = seen.root if seen.root is not None else parent
            return [Step(None, SlotEvent(seen.slot, parent, min(root, parent)))]
        if seen.slot <= last:
            return []
        if seen.parent == last or seen.slot == last + 1:
            parent = last
            return [Step(last, SlotEvent(seen.slot, parent, self._root(seen, parent)))]
        if between is None:
            return NeedSlots(last + 1, seen.slot - 1)
        chain = [last, *sorted(s for s in set(between) if last < s < seen.slot)]
        # The notified parent has a block even when the node cannot confirm it yet.
        if seen.parent is not None and last < seen.parent < seen.slot and seen.parent > chain[-1]:
            chain.append(seen.parent)
        chain.append(seen.slot)
        return [
            Step(before, SlotEvent(slot, before, self._root(seen, before)))
            for before, slot in itertools.pairwise(chain)
        ]

    @staticmethod
    def _root(seen: Sighting, parent: int) -> int:
        # A filled slot's root is not known; the sighting's is an upper bound of it, and a root
        # is never past the parent.
        return parent if seen.root is None else min(seen.root, parent)

    def reported(self, slot: int) -> None:
        """``slot``'s :class:`SlotEvent` went out."""
        if self.last is None or slot > self.last:
            self.last = slot
