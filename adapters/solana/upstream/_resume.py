"""Where a new leader's reports continue a previous leader's: after the last slot on the chain's
stream (sans-io, but for reading the stream's tail).

The follower reports a slot's step as the closed block's transactions and watched accounts, then
the next slot's :class:`SlotEvent`. The last :class:`SlotEvent` the stream holds is the last slot
reported whole: the new leader's follower starts there (its sequencer fills the slots from it to
the node's present from ``getBlocks``), and its first step closes that slot again. Its events
the previous leader appended before it died (a step cut short) are on the stream already, so
they are not reported again (:class:`AlreadyAppended`)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Final

from adapters.base import EventHandler, StreamTail

from .._events import AccountEvent, SlotEvent, TransactionEvent

#: Events read back first; four times more each time no slot is among them, up to MAX_TAIL (a
#: block of a few thousand transactions cut short).
FIRST_TAIL: Final = 64
MAX_TAIL: Final = 16_384


def _key(event: object) -> Hashable:
    if isinstance(event, TransactionEvent):
        return ("transaction", event.record.signature)
    if isinstance(event, AccountEvent):
        return ("account", event.address, event.slot)
    return ("other", type(event).__name__)


@dataclass(frozen=True, slots=True)
class ResumePoint:
    """The last slot on the stream, and the events of its step appended after it."""

    slot: int
    appended: frozenset[Hashable]


def resume_point(tail: Sequence[object]) -> ResumePoint | None:
    """Where to resume after ``tail`` (the stream's last events, oldest first); None: no slot."""
    for at in range(len(tail) - 1, -1, -1):
        event = tail[at]
        if isinstance(event, SlotEvent):
            return ResumePoint(event.slot, frozenset(_key(e) for e in tail[at + 1 :]))
    return None


async def find_resume_point(tail: StreamTail) -> ResumePoint | None:
    """The resume point of the stream ``tail`` reads (None: it holds no slot, as far as read)."""
    count = FIRST_TAIL
    while True:
        events = await tail(count)
        point = resume_point(events)
        if point is not None or len(events) < count or count >= MAX_TAIL:
            return point
        count *= 4


class AlreadyAppended:
    """Passes events on, less those of the resumed step the stream holds already."""

    def __init__(self, point: ResumePoint, on_event: EventHandler) -> None:
        self._pending = set(point.appended)
        self._on_event = on_event

    async def __call__(self, event: object) -> None:
        if self._pending:
            if isinstance(event, SlotEvent):
                self._pending.clear()  # the resumed step is over
            else:
                key = _key(event)
                if key in self._pending:
                    self._pending.discard(key)
                    return
        await self._on_event(event)
