"""Which accounts the upstream adapter reads after each block: those with a subscriber.

Reading every account a block writes would cost a mainnet node dozens of ``getMultipleAccounts``
a slot; an ``accountSubscribe`` names its account, so only watched ones are read. A
``programSubscribe`` matches by owner, which only the account itself tells: while one is open,
every written account is read. The family's index (one per chain, made by the broker) keeps the
counts as subscriptions come and go.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from adapters.base import EventMatcher, GroupedIndex, SubscriptionIndex

from .._pubsub import SolanaSubscriptions


class WatchedAccounts:
    """Subscriptions by watched account, and how many watch programs."""

    def __init__(self) -> None:
        self.accounts: Counter[str] = Counter()
        self.programs = 0

    def wanted(self, written: tuple[str, ...]) -> list[str]:
        """Of the accounts a block wrote, those to read."""
        if self.programs:
            return list(written)
        return [address for address in written if self.accounts[address] > 0]

    def change(self, matcher: EventMatcher, delta: int) -> None:
        key = matcher.key
        if not isinstance(key, tuple) or not key:
            return
        if key[0] == "account":
            self.accounts[key[1]] += delta
            if self.accounts[key[1]] <= 0:
                del self.accounts[key[1]]
        elif key[0] == "program":
            self.programs += delta


class _WatchingIndex(GroupedIndex[Any]):
    def __init__(self, watched: WatchedAccounts) -> None:
        super().__init__()
        self._watched = watched

    def add(self, sub: Any, matcher: EventMatcher) -> None:
        super().add(sub, matcher)
        self._watched.change(matcher, 1)

    def remove(self, sub: Any, matcher: EventMatcher) -> None:
        group = self.groups.get(matcher.key)
        if group is not None and sub in group[1]:
            self._watched.change(matcher, -1)
        super().remove(sub, matcher)


class UpstreamSubscriptions(SolanaSubscriptions):
    """Solana's PubSub, its index telling the adapter what to read (:class:`WatchedAccounts`)."""

    def __init__(self, watched: WatchedAccounts) -> None:
        self.watched = watched

    def new_index(self) -> SubscriptionIndex[Any]:
        return _WatchingIndex(self.watched)
