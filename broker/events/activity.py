"""Whether a chain's blocks must carry their transactions: only while some ``activity``
subscription (a connection's or a webhook's) follows an address on the chain, since fetching a
block again with its whole transactions costs the node a call and the bus the transactions' bytes
at every block.

The subscriptions live where they were made (a web process's hub, the webhooks' deliverer); the
ingestion runs in one place per chain (this process without Redis, the leading worker with it).
:class:`ActivityDemand` answers from this process's subscriptions; :class:`RedisActivityDemand`
also announces them in Redis (a sorted set per chain: process → until when, renewed every
``every`` seconds) and reads every process's announcements. A chain stays followed for ``linger``
seconds after its last activity subscription goes, so a client that drops and resumes within the
resume window still finds the transactions it missed.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable
from typing import Final

import trio
from coredis.tokens import PureToken

from broker.redis import RedisClient, RedisFailure

#: Seconds between two announcements (a new subscription is announced within this).
ANNOUNCE_EVERY: Final = 0.5
#: Seconds an announcement holds without renewal (a dead process's, then forgotten).
ANNOUNCE_TTL: Final = 10.0

Source = Callable[[str], bool]
"""Whether some of this process's activity subscriptions follow a chain."""


class ActivityDemand:
    """Which chains this process's activity subscriptions follow (``linger`` seconds after the
    last one goes); ``clock``: monotonic seconds."""

    def __init__(self, *, linger: float = 0.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.linger = linger
        self._clock = clock
        self._sources: list[Source] = []
        #: Chains followed lately, and until when they count as followed.
        self._until: dict[str, float] = {}

    def follow(self, source: Source) -> None:
        """Count the activity subscriptions ``source`` tells of."""
        self._sources.append(source)

    def here(self, chain: str) -> bool:
        """Whether this process follows ``chain``'s activity (or did, ``linger`` seconds ago)."""
        now = self._clock()
        if any(source(chain) for source in self._sources):
            self._until[chain] = now + self.linger
            return True
        until = self._until.get(chain)
        if until is None:
            return False
        if until <= now:
            del self._until[chain]
            return False
        return True

    async def wanted(self, chain: str) -> bool:
        """Whether the ingestion of ``chain`` must fetch its blocks' transactions."""
        await trio.lowlevel.checkpoint()
        return self.here(chain)


class RedisActivityDemand(ActivityDemand):
    """:class:`ActivityDemand` across processes, through Redis (every process runs
    :meth:`serve_announcer`; the ingesting one asks :meth:`wanted`). ``wall``: wall-clock seconds
    (announcements are compared across processes)."""

    def __init__(
        self,
        client: RedisClient,
        process: str,
        *,
        prefix: str = "scopecast",
        linger: float = 0.0,
        every: float = ANNOUNCE_EVERY,
        ttl: float = ANNOUNCE_TTL,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(linger=linger, clock=clock)
        self.client = client
        self.process = process
        self.prefix = prefix
        self.every = every
        self.ttl = ttl
        self._wall = wall

    def key(self, chain: str) -> str:
        return f"{self.prefix}:activity:{{{chain}}}"

    async def wanted(self, chain: str) -> bool:
        if self.here(chain):
            return True
        now_ms = int(self._wall() * 1000)
        # Any announcement that still holds; a failing Redis fails the ingestion's append too.
        found = await self.client.zrange(
            self.key(chain), now_ms, "+inf", sortby=PureToken.BYSCORE, offset=0, count=1
        )
        return bool(found)

    async def announce(self, chains: Iterable[str]) -> None:
        """Say in Redis which of ``chains`` this process follows now."""
        until_ms = int((self._wall() + self.ttl) * 1000)
        for chain in chains:
            if self.here(chain):
                key = self.key(chain)
                await self.client.zadd(key, {self.process: until_ms})
                # Announcements of processes long dead go (the set stays small).
                stale_ms = until_ms - 10 * int(self.ttl * 1000)
                await self.client.zremrangebyscore(key, float("-inf"), stale_ms)
                await self.client.pexpire(key, 2 * int(self.ttl * 1000))

    async def serve_announcer(self, chains: list[str]) -> None:
        """Announce every ``every`` seconds until cancelled (Redis failing: tried again)."""
        while True:
            # Redis down: the chains' ingestion waits for it too; announced again next time.
            with contextlib.suppress(*RedisFailure):
                await self.announce(chains)
            await trio.sleep(self.every)
