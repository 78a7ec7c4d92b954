"""Which accounts the upstream adapter reads after each block: those with a subscriber, and those
whose last subscriber left less than ``linger`` seconds ago.

Reading every account a block writes would cost a mainnet node dozens of ``getMultipleAccounts``
a slot; an ``accountSubscribe`` names its account, so only watched ones are read. A
``programSubscribe`` matches by owner, which only the account itself tells: while one is open,
every written account is read. What is watched is read from the live indexes' groups when a block
is read (the broker also makes short-lived indexes to replay events to resumed subscriptions; they
count while they live, and are forgotten with them). A subscription dropped with its connection
may come back with ``?resume=`` within the resume window and must then find every change it
missed, so an account (or programs) stays watched for ``linger`` seconds after its last group goes.

Where a worker reads the blocks and web processes hold the subscriptions, each web process shares
what its own indexes watch (:meth:`WatchedAccounts.current`, the adapter's ``interests``), and the
worker's adapter asks their union (its ``source``) after each block it read, before it reads the
accounts the block wrote (:meth:`WatchedAccounts.refresh`).
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Hashable
from typing import Any

from adapters.base import EventMatcher, GroupedIndex, InterestSource

from .._pubsub import SolanaIndex, SolanaSubscriptions

log = logging.getLogger(__name__)

_PROGRAMS = "program"


def _watched(key: Hashable) -> str | None:
    """The account a matcher key watches, :data:`_PROGRAMS` for a program's, else None."""
    if not isinstance(key, tuple) or not key:
        return None
    if key[0] == "account":
        return str(key[1])
    return _PROGRAMS if key[0] == "program" else None


class WatchedAccounts:
    """The subscription indexes of one chain, read for what they watch."""

    def __init__(self, linger: float) -> None:
        self.linger = linger
        self.indexes: weakref.WeakSet[GroupedIndex[Any]] = weakref.WeakSet()
        #: Accounts (or :data:`_PROGRAMS`) no longer subscribed, and until when they stay read.
        self.lingering: dict[str, float] = {}
        #: The interests of the subscriptions other processes hold (None: none are shared).
        self.source: InterestSource | None = None
        #: Their union, as last asked.
        self.elsewhere: frozenset[str] = frozenset()

    def left(self, key: Hashable, now: float) -> None:
        """The last subscription of a group with ``key`` went away at ``now``."""
        watched = _watched(key)
        if watched is not None:
            self.lingering[watched] = now + self.linger

    def current(self, now: float) -> set[str]:
        """What this process's subscriptions watch at ``now`` (lingering ones included)."""
        for name in [n for n, until in self.lingering.items() if until <= now]:
            del self.lingering[name]
        accounts = set(self.lingering)
        for index in list(self.indexes):
            accounts.update(w for w in map(_watched, index.groups) if w is not None)
        return accounts

    async def refresh(self) -> None:
        """Ask what the subscriptions of other processes watch now (see the module)."""
        if self.source is not None:
            found = await self.source()
            if found != self.elsewhere:
                log.debug("accounts watched by other processes: %d", len(found))
            self.elsewhere = found

    def wanted(self, written: tuple[str, ...], now: float) -> list[str]:
        """Of the accounts a block wrote, those to read (in the block's order): those watched
        here, and those other processes watch (as last :meth:`refresh` ed)."""
        accounts = self.current(now) | self.elsewhere
        if _PROGRAMS in accounts:
            return list(written)
        return [address for address in written if address in accounts]


class _WatchingIndex(SolanaIndex[Any]):
    def __init__(self, watched: WatchedAccounts, clock: Callable[[], float]) -> None:
        super().__init__()
        self._watched = watched
        self._clock = clock

    def remove(self, sub: Any, matcher: EventMatcher) -> None:
        had = matcher.key in self.groups
        super().remove(sub, matcher)
        if had and matcher.key not in self.groups:
            self._watched.left(matcher.key, self._clock())


class UpstreamSubscriptions(SolanaSubscriptions):
    """Solana's PubSub, its indexes telling the adapter what to read (:class:`WatchedAccounts`).
    ``clock``: the time ``linger`` is counted in (``trio.current_time``)."""

    def __init__(self, watched: WatchedAccounts, clock: Callable[[], float]) -> None:
        # No status lookup: the node's statuses are not known synchronously, so a signature that
        # landed before its subscription is not notified at once here (it is on the dev chain).
        super().__init__()
        self.watched = watched
        self._clock = clock

    def interest(self, matcher: EventMatcher) -> str | None:
        return _watched(matcher.key)

    def new_index(self) -> SolanaIndex[Any]:
        index = _WatchingIndex(self.watched, self._clock)
        self.watched.indexes.add(index)
        return index
