"""Noticing that Redis lost its data, and having each part of this process repair what it knows.

A Redis that keeps nothing on disk (the default of many container and managed images) and restarts,
or a failover to a replica that had not synced, comes back empty: sessions, streams, resume
records, connection slots, the worker's published head are gone, and nothing says so. The *epoch
key* says so: the first process to start writes a random value to it (``SET NX``), every process
remembers the value it saw, and checks it every :data:`EPOCH_CHECK` seconds and whenever a read
finds less than it expected (:meth:`EpochWatch.check`). A key that is gone, or holds another value,
means the data was lost: the process writes a new epoch (the first one wins; the others adopt it),
then runs the repairs that its parts registered (:meth:`EpochWatch.on_loss`) and logs, once, what
they repaired and what was lost.

The same check reads ``ROLE``: how many replicas the primary has now, so that writes that must
survive a failover wait for one (``WAIT``) only where there is one.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final

import trio
from coredis import PureToken

from broker.redis._client import DEFAULT_PREFIX, RedisClient, RedisFailure

log = logging.getLogger(__name__)

#: Seconds between two checks of the epoch (and of the replica count).
EPOCH_CHECK: Final = 1.0
#: Seconds between two checks while Redis fails (the first that succeeds follows a reconnect).
RECONNECT_CHECK: Final = 0.1


@dataclass(slots=True)
class Repair:
    """What one part of the process put back after a data loss, and what it could not."""

    repaired: dict[str, int] = field(default_factory=dict)
    lost: dict[str, int] = field(default_factory=dict)
    #: Losses that cannot be counted here (what no process held), said as they are.
    lost_uncounted: list[str] = field(default_factory=list)

    def merge(self, other: Repair) -> None:
        for mine, theirs in ((self.repaired, other.repaired), (self.lost, other.lost)):
            for what, count in theirs.items():
                mine[what] = mine.get(what, 0) + count
        self.lost_uncounted.extend(other.lost_uncounted)

    def summary(self) -> str:
        repaired = [f"{count} {what}" for what, count in self.repaired.items()]
        lost = [f"{count} {what}" for what, count in self.lost.items() if count]
        return f"repaired {', '.join(repaired) or 'nothing'}; lost {', '.join(lost + self.lost_uncounted)}"


RepairStep = Callable[[], Awaitable[Repair]]


class EpochWatch:
    """The epoch this process works in, checked; the repairs to run when it changes."""

    def __init__(
        self, client: RedisClient, *, prefix: str = DEFAULT_PREFIX, period: float = EPOCH_CHECK
    ) -> None:
        self.client = client
        self.key = f"{prefix}:epoch"
        self.period = period
        #: The epoch this process saw last (None: not read yet).
        self.epoch: bytes | None = None
        #: Replicas connected to the primary at the last check (0: none, or not known yet).
        self.replicas = 0
        #: Data losses noticed, and repairs run (the tests and the status endpoint read them).
        self.losses = 0
        self._steps: list[tuple[str, RepairStep]] = []
        self._lock = trio.Lock()

    def on_loss(self, name: str, step: RepairStep) -> None:
        """Run ``step`` after every data loss (in the order registered); ``name`` is for logs."""
        self._steps.append((name, step))

    async def check(self) -> bool:
        """Compare the epoch with the one seen last; on a loss, repair. Whether there was one.

        One check at a time: a caller that comes during another's repair waits for it and then
        finds the epoch it wrote. Raises what Redis raises (the caller retries)."""
        async with self._lock:
            current = await self.client.get(self.key)
            if current is None:
                await self.client.set(self.key, uuid.uuid4().hex.encode(), condition=PureToken.NX)
                current = await self.client.get(self.key)
                if current is None:  # deleted again at once: the next check sees to it
                    return False
            seen, self.epoch = self.epoch, current
            if seen is None or seen == current:
                return False
            self.losses += 1
            await self._repair(seen, current)
            return True

    async def _repair(self, old: bytes, new: bytes) -> None:
        total = Repair()
        failed: list[str] = []
        for name, step in self._steps:
            try:
                total.merge(await step())
            except Exception as exc:
                # The others still repair; this part's loss is said below, once.
                failed.append(f"{name} ({type(exc).__name__}: {exc})")
        log.warning(
            "Redis lost its data (epoch %s is gone, now %s): %s%s",
            old.decode(errors="replace")[:8],
            new.decode(errors="replace")[:8],
            total.summary(),
            f"; could not repair {', '.join(failed)}" if failed else "",
        )

    async def _read_replicas(self) -> None:
        role = await self.client.role()
        self.replicas = len(role.slaves or ()) if role.role == "master" else 0

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Check every ``period`` seconds, until cancelled; while Redis fails, every
        :data:`RECONNECT_CHECK` seconds, so that the first check after a reconnect comes at once
        (a Redis that restarted empty is repaired before most callers notice)."""
        task_status.started()
        while True:
            try:
                await self.check()
                await self._read_replicas()
            except RedisFailure as exc:
                # Said by whatever else uses Redis (streams, requests); retried soon.
                log.debug("epoch check failed (%s)", exc)
                await trio.sleep(RECONNECT_CHECK)
                continue
            await trio.sleep(self.period)
