"""Which sessions a process watches the expiry of (sans-io: the clocks are given).

A process ends the sessions of the dapps connected to it when they expire (with Redis, every
process hears every change; each ends only its own dapps'). A dapp whose last connection closed
is still watched for ``linger`` seconds (the resume window), so that its expiry is announced on
time and a connection that resumes hears it in its place. A dapp that connects without having
called anything is looked up (its session may exist from an earlier connection); a change that
arrives while a lookup is under way makes the lookup stale.

Two clocks: expiries are wall-clock times (``datetime``, as sessions state them); lingering is
measured on the caller's monotonic clock (trio's), in seconds.
"""

from __future__ import annotations

from collections.abc import Callable, Container
from datetime import datetime

from broker.sessions.model import Identity


class ExpiryTracker:
    """The expiries this process watches, and the dapps it still has to look up."""

    def __init__(self, *, linger: float = 0.0) -> None:
        #: Seconds a dapp gone from this process is still watched (0: not at all).
        self.linger = linger
        self._expiries: dict[Identity, datetime] = {}
        self._unlooked: set[Identity] = set()
        self._looking: set[Identity] = set()
        self._lingering: dict[Identity, float] = {}
        #: Called when the next thing to do may have come nearer (a dapp to look up, a new
        #: expiry, a dapp lingering): the I/O shell's alarm clock wakes to recompute it.
        self.on_change: Callable[[], None] = _nothing

    def __len__(self) -> int:
        return len(self._expiries)

    def watches(self, identity: Identity) -> bool:
        return identity in self._expiries

    # -- connections ------------------------------------------------------------------------------

    def connected(self, identity: Identity) -> None:
        """A connection of ``identity`` opened here."""
        if self._lingering.pop(identity, None) is not None:
            self._expiries.pop(identity, None)  # back: looked up afresh, it may have changed
        if identity not in self._expiries:
            self._unlooked.add(identity)
            self.on_change()

    def gone(self, identity: Identity, now: float) -> bool:
        """The last connection of ``identity`` here closed at ``now``; True when it is no longer
        watched (False: it lingers)."""
        self._unlooked.discard(identity)
        if self.linger > 0 and identity in self._expiries:
            self._lingering[identity] = now + self.linger
            self.on_change()
            return False
        self._expiries.pop(identity, None)
        return True

    def lingering(self, identity: Identity) -> bool:
        return identity in self._lingering

    def forget_lingering(self, now: float) -> list[Identity]:
        """Stop watching the dapps gone longer than ``linger`` ago; returns them."""
        forgotten = [identity for identity, until in self._lingering.items() if until <= now]
        for identity in forgotten:
            del self._lingering[identity]
            self._expiries.pop(identity, None)
        return forgotten

    # -- what is learnt of sessions ----------------------------------------------------------------

    def watch(self, identity: Identity, expiry: datetime | None) -> None:
        """``identity``'s session now expires at ``expiry`` (None: it has none)."""
        self._looking.discard(identity)  # a lookup under way would be stale
        if expiry is None:
            self._expiries.pop(identity, None)
            self._lingering.pop(identity, None)
        else:
            self._expiries[identity] = expiry
            self.on_change()

    def to_look_up(self, connected: Container[Identity]) -> list[Identity]:
        """The connected dapps to look up now (each then :meth:`looked_up` or
        :meth:`look_up_failed`)."""
        unlooked, self._unlooked = self._unlooked, set()
        found = [i for i in unlooked if i not in self._expiries and i in connected]
        self._looking.update(found)
        return found

    def looked_up(self, identity: Identity, expiry: datetime | None, *, connected: bool) -> None:
        stale = identity not in self._looking  # a change came meanwhile, and was applied
        self._looking.discard(identity)
        if not stale and expiry is not None and connected:
            self._expiries.setdefault(identity, expiry)  # unless a call looked it up

    def look_up_failed(self, identity: Identity) -> None:
        self._looking.discard(identity)
        self._unlooked.add(identity)  # the next check tries again

    # -- when to act next ------------------------------------------------------------------------

    def has_to_look_up(self) -> bool:
        """Whether a connected dapp waits to be looked up (:meth:`to_look_up`)."""
        return bool(self._unlooked)

    def next_expiry(self) -> datetime | None:
        """The earliest expiry watched (wall clock); None: none is."""
        return min(self._expiries.values(), default=None)

    def next_forgetting(self) -> float | None:
        """When the first lingering dapp is to be forgotten (the caller's monotonic clock)."""
        return min(self._lingering.values(), default=None)

    # -- ending -----------------------------------------------------------------------------------

    def due(self, now: datetime) -> list[tuple[Identity, datetime]]:
        """The watched sessions expired at ``now``: (identity, the expiry watched)."""
        return [(i, expiry) for i, expiry in self._expiries.items() if expiry <= now]

    def still(self, identity: Identity, expiry: datetime) -> bool:
        """Whether ``expiry`` is still what is watched for ``identity`` (no change came since)."""
        return self._expiries.get(identity) == expiry

    def ended(self, identity: Identity) -> None:
        """The session of ``identity`` ended (its end is being announced)."""
        self._expiries.pop(identity, None)
        self._lingering.pop(identity, None)

    def end_failed(self, identity: Identity, expiry: datetime) -> None:
        """Announcing the end failed: watched again, the next check tries again."""
        self._expiries[identity] = expiry


def _nothing() -> None:
    pass
