"""Which accounts the upstream adapter reads after each block: those with a subscriber.

Reading every account a block writes would cost a mainnet node dozens of ``getMultipleAccounts``
a slot; an ``accountSubscribe`` names its account, so only watched ones are read. A
``programSubscribe`` matches by owner, which only the account itself tells: while one is open,
every written account is read. What is watched is read from the live indexes' groups when a block
is read (the broker also makes short-lived indexes to replay events to resumed subscriptions;
they count while they live, and are forgotten with them).
"""

from __future__ import annotations

import weakref
from typing import Any

from adapters.base import GroupedIndex, SubscriptionIndex

from .._pubsub import SolanaSubscriptions


class WatchedAccounts:
    """The subscription indexes of one chain, read for what they watch."""

    def __init__(self) -> None:
        self.indexes: weakref.WeakSet[GroupedIndex[Any]] = weakref.WeakSet()

    def wanted(self, written: tuple[str, ...]) -> list[str]:
        """Of the accounts a block wrote, those to read (in the block's order)."""
        accounts: set[str] = set()
        for index in list(self.indexes):
            for key in index.groups:
                if not isinstance(key, tuple) or not key:
                    continue
                if key[0] == "program":
                    return list(written)
                if key[0] == "account":
                    accounts.add(key[1])
        return [address for address in written if address in accounts]


class UpstreamSubscriptions(SolanaSubscriptions):
    """Solana's PubSub, its indexes telling the adapter what to read (:class:`WatchedAccounts`)."""

    def __init__(self, watched: WatchedAccounts) -> None:
        self.watched = watched

    def new_index(self) -> SubscriptionIndex[Any]:
        index: GroupedIndex[Any] = GroupedIndex()
        self.watched.indexes.add(index)
        return index
