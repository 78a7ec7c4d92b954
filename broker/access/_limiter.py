"""Where the counts live: in this process (:class:`MemoryLimiter`) or in Redis, shared by every web
process (:class:`RedisLimiter`).

Both count the same two things: a GCRA bucket per key (:func:`broker.access._policy.gcra_take`;
in Redis, the same arithmetic in one Lua script on Redis's clock, so the processes' clocks never
matter: one round trip per key at a time, for every request and batch that came meanwhile) and the WebSockets open per key (in Redis, a sorted
set of slots, each kept alive by its process every ``SLOT_TTL / 3`` seconds, so the slots of a
process that died are reaped ``SLOT_TTL`` seconds later).
"""

from __future__ import annotations

import functools
import itertools
import logging
import time
import uuid
from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Awaitable, Callable
from typing import Final

import trio

from broker.access._policy import Rate, Taken, gcra_take, share
from broker.redis import DEFAULT_PREFIX, RedisClient, RedisFailure

log = logging.getLogger(__name__)

#: Longest a request waits for the limiter's Redis before the limits fail open or closed.
REDIS_TIMEOUT: Final = 0.5
#: After Redis failed, how long the limits are decided without asking it again.
RETRY_AFTER_FAILURE: Final = 1.0
#: Seconds a connection slot outlives the last refresh of its process (refreshed every third).
SLOT_TTL: Final = 30.0


class LimiterUnavailable(Exception):
    """The shared counts cannot be reached (Redis down or too slow)."""


class Limiter(ABC):
    """Counts calls and connections per key."""

    @abstractmethod
    async def take(self, key: str, rate: Rate, cost: int) -> Taken:
        """Take up to ``cost`` calls from the key's bucket (raises :class:`LimiterUnavailable`)."""

    @abstractmethod
    async def open_slot(self, key: str, limit: int) -> str | None:
        """A connection slot of the key (its id), or None when ``limit`` are taken."""

    @abstractmethod
    async def close_slot(self, key: str, slot: str) -> None:
        """Give back a slot :meth:`open_slot` gave."""

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Background upkeep, until cancelled (none by default)."""
        task_status.started()  # no upkeep: returns at once, started (no checkpoint needed)


class MemoryLimiter(Limiter):
    """The counts of one process (no ``--redis-url``)."""

    def __init__(self) -> None:
        self._tats: dict[str, int] = {}
        self._open: defaultdict[str, int] = defaultdict(int)
        self._ids = itertools.count(1)

    async def take(self, key: str, rate: Rate, cost: int) -> Taken:
        await trio.lowlevel.checkpoint()  # as the Redis limiter's (cancelled: nothing taken)
        return self.take_at(key, rate, cost, time.monotonic_ns() // 1000)

    def take_at(self, key: str, rate: Rate, cost: int, now: int) -> Taken:
        """:meth:`take` at ``now`` (microseconds of a monotonic clock)."""
        taken = gcra_take(self._tats.get(key, 0), now, rate, cost)
        self._tats[key] = taken.tat
        return taken

    async def open_slot(self, key: str, limit: int) -> str | None:
        await trio.lowlevel.checkpoint()
        if self._open[key] >= limit:
            return None
        self._open[key] += 1
        return str(next(self._ids))

    async def close_slot(self, key: str, slot: str) -> None:
        await trio.lowlevel.checkpoint()  # its caller shields it: a slot is always given back
        self._open[key] = max(0, self._open[key] - 1)


#: :func:`broker.access._policy.gcra_take` on Redis's clock. KEYS: the bucket; ARGV: interval and
#: tolerance (µs), cost. Returns {admitted, retry after (µs)}. Integers as %.0f: Lua's own number
#: formatting keeps 14 digits, and a time in µs has 16.
GCRA_SCRIPT: Final = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1])) or 0
if tat < now then tat = now end
local fits = math.floor((now + tolerance - tat) / interval)
if fits > cost then fits = cost end
if fits < 0 then fits = 0 end
tat = tat + fits * interval
if fits > 0 then
  redis.call('SET', KEYS[1], string.format('%.0f', tat), 'PX', math.floor((tat - now) / 1000) + 1)
end
local retry = 0
if fits < cost then retry = tat + interval - tolerance - now end
return {fits, retry}
"""

#: KEYS: the key's slots (a sorted set scored by expiry, ms); ARGV: limit, slot id, TTL (ms).
OPEN_SLOT_SCRIPT: Final = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"""

#: KEYS: the key's slots; ARGV: TTL (ms), 'XX' or 'NX', then the slots this process holds. XX (a
#: refresh): a slot given back meanwhile is not brought back; NX (after Redis lost its data): the
#: slots are written back.
REFRESH_SLOTS_SCRIPT: Final = """
local t = redis.call('TIME')
local expiry = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
for i = 3, #ARGV do redis.call('ZADD', KEYS[1], ARGV[2], expiry, ARGV[i]) end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
"""


class _Waiter:
    """A :meth:`RedisLimiter.take` waiting for its key's next round trip."""

    __slots__ = ("cost", "done", "outcome")

    def __init__(self, cost: int) -> None:
        self.cost = cost
        self.done = trio.Event()
        self.outcome: Taken | LimiterUnavailable | None = None


class RedisLimiter(Limiter):
    """The counts of every web process sharing ``client``'s Redis."""

    def __init__(
        self, client: RedisClient, prefix: str = DEFAULT_PREFIX, *, slot_ttl: float = SLOT_TTL
    ) -> None:
        self._client = client
        self._prefix = prefix
        self._slot_ttl_ms = int(slot_ttl * 1000)
        self._gcra = client.register_script(GCRA_SCRIPT)
        self._open = client.register_script(OPEN_SLOT_SCRIPT)
        self._refresh = client.register_script(REFRESH_SLOTS_SCRIPT)
        self._process = uuid.uuid4().hex[:12]
        self._ids = itertools.count(1)
        self._held: defaultdict[str, set[str]] = defaultdict(set)
        self._retry_at = 0.0
        self._nursery: trio.Nursery | None = None
        #: Per key, the requests waiting for its next round trip, and the keys with one under way.
        self._waiting: defaultdict[str, list[_Waiter]] = defaultdict(list)
        self._flushing: set[str] = set()

    def _key(self, kind: str, key: str) -> str:
        return f"{self._prefix}:{kind}:{{{key}}}"

    async def take(self, key: str, rate: Rate, cost: int) -> Taken:
        """Join the key's next round trip: the requests that arrive while one is under way go
        together in the next (one script call for all of them). Needs :meth:`serve` running."""
        assert self._nursery is not None, "RedisLimiter.serve is not running"
        waiter = _Waiter(cost)
        self._waiting[key].append(waiter)
        if key not in self._flushing:
            self._flushing.add(key)
            self._nursery.start_soon(self._flush, key, rate)
        await waiter.done.wait()
        outcome = waiter.outcome
        if isinstance(outcome, LimiterUnavailable):
            raise LimiterUnavailable(*outcome.args)
        assert outcome is not None
        return outcome

    async def _flush(self, key: str, rate: Rate) -> None:
        try:
            while waiting := self._waiting.pop(key, None):
                costs = [waiter.cost for waiter in waiting]
                outcomes: list[Taken | LimiterUnavailable]
                try:
                    outcomes = [*share(await self._take_now(key, rate, sum(costs)), costs)]
                except LimiterUnavailable as exc:
                    outcomes = [exc] * len(waiting)
                except Exception as exc:
                    # A bug must neither stop the limiter nor leave these requests waiting.
                    log.exception("the rate script failed")
                    outcomes = [LimiterUnavailable(repr(exc))] * len(waiting)
                for waiter, outcome in zip(waiting, outcomes, strict=True):
                    waiter.outcome = outcome
                    waiter.done.set()
        finally:
            self._flushing.discard(key)

    async def _take_now(self, key: str, rate: Rate, cost: int) -> Taken:
        keys, args = [self._key("rate", key)], [rate.interval_us, rate.tolerance_us, cost]
        reply = await self._run(lambda: self._gcra(keys, args))
        assert isinstance(reply, list)
        admitted, retry = (int(value) for value in reply)
        return Taken(admitted, retry, 0)

    async def open_slot(self, key: str, limit: int) -> str | None:
        slot = f"{self._process}:{next(self._ids)}"
        args: list[int | str] = [limit, slot, self._slot_ttl_ms]
        if await self._run(lambda: self._open([self._key("conns", key)], args)) != 1:
            return None
        self._held[key].add(slot)
        return slot

    async def close_slot(self, key: str, slot: str) -> None:
        self._held[key].discard(slot)
        await self._run(lambda: self._client.zrem(self._key("conns", key), [slot]))

    async def _run(self, call: Callable[[], Awaitable[object]]) -> object:
        # Right after a failure, fail at once: while Redis hangs, every request would otherwise
        # wait REDIS_TIMEOUT for it.
        if trio.current_time() < self._retry_at:
            raise LimiterUnavailable("Redis failed less than a second ago")
        try:
            with trio.fail_after(REDIS_TIMEOUT):
                result = await call()
        except RedisFailure as exc:
            self._retry_at = trio.current_time() + RETRY_AFTER_FAILURE
            raise LimiterUnavailable(str(exc) or type(exc).__name__) from exc
        if self._retry_at:
            self._retry_at = 0.0
            log.warning("limits counted in Redis again")
        return result

    async def restore_slots(self) -> int:
        """Redis lost its data: write back the connection slots this process holds (else other
        processes could open a key's ``max_connections`` again). How many."""
        restored = 0
        for key, slots in list(self._held.items()):
            if slots:
                await self._refresh([self._key("conns", key)], [self._slot_ttl_ms, "NX", *slots])
                restored += len(slots)
        return restored

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run the round trips of :meth:`take` and keep this process's slots alive (every third
        of their TTL), until cancelled."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            await self._refresh_slots()

    async def _refresh_slots(self) -> None:
        ttl = self._slot_ttl_ms
        while True:
            await trio.sleep(ttl / 3000)
            for key, slots in list(self._held.items()):
                if not slots:
                    continue
                try:
                    refresh = functools.partial(
                        self._refresh, [self._key("conns", key)], [ttl, "XX", *slots]
                    )
                    await self._run(refresh)
                except LimiterUnavailable as exc:
                    log.warning("cannot refresh the connection slots of a key: %s", exc)
