"""Retry delays (sans-io): the one backoff of the broker and of the adapters that reconnect."""

from __future__ import annotations


class Backoff:
    """Exponential delays: ``base``, ``2 * base``, ... capped at ``cap``; reset after a success.

    ``now`` (any clock the caller keeps) is needed only by callers that ask :meth:`due`.
    """

    def __init__(self, base: float = 0.5, cap: float = 10.0) -> None:
        self.base = base
        self.cap = cap
        self.failures = 0
        self.not_before = float("-inf")

    def failed(self, now: float = 0.0) -> float:
        """Record a failure at ``now``; returns the delay before the next attempt."""
        delay: float = min(self.base * 2.0 ** min(self.failures, 62), self.cap)
        self.failures += 1
        self.not_before = now + delay
        return delay

    def succeeded(self) -> None:
        self.failures = 0
        self.not_before = float("-inf")

    def due(self, now: float) -> bool:
        """Whether the delay since the last failure (at ``now``) has passed."""
        return now >= self.not_before
