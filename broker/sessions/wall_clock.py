"""Wall-clock time, for what is stated in wall-clock terms: session expiries, a token's ``exp``,
when an approval stops waiting.

Timers (the expiry checks, the token checks) sleep on trio's clock; what they compare against is
wall-clock time, read from one :class:`WallClock` that :mod:`broker.compose` hands to whoever
reads it. The broker's is the system's (:data:`SYSTEM_CLOCK`); a test can give one that follows
trio's clock, so that jumping trio's clock makes sessions and tokens expire without waiting.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final, Protocol


class WallClock(Protocol):
    """Where the current wall-clock time comes from."""

    def now(self) -> datetime:
        """The current time, timezone-aware."""
        ...


class SystemClock:
    """The system's wall clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)


SYSTEM_CLOCK: Final = SystemClock()
