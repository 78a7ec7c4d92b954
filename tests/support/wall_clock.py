"""A wall clock on trio's clock, for brokers whose test drives trio's clock (``MockClock``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Final

import trio

#: The wall-clock time at trio time 0: fixed, and years away from the system's time, so that a
#: time a test takes from the system's clock instead of the broker's shows at once.
EPOCH: Final = datetime(2030, 1, 1, tzinfo=UTC)


class TrioWallClock:
    """Wall-clock time that follows trio's clock: :data:`EPOCH` plus ``trio.current_time()``.

    Given to a broker (:func:`broker.compose.build_broker`'s ``clock``), it makes sessions and
    tokens expire when the test jumps trio's clock, and never by themselves.
    """

    def __init__(self, epoch: datetime = EPOCH) -> None:
        self.epoch = epoch

    def now(self) -> datetime:
        return self.epoch + timedelta(seconds=trio.current_time())
