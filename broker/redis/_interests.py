"""What the subscriptions of each web process need a chain's ingestion to read (Solana's upstream:
the accounts they watch), shared through Redis with the worker that ingests the chain.

Per chain, a hash holds each web process's interests (a field per process, its interests as a
MessagePack list), a second hash when each field lapses (Redis's own clock, so no two processes'
clocks are compared), and a counter that moves whenever the union may have changed (it starts at
Redis's clock, so a counter read before Redis lost its data never matches the new one). A web process
writes its field when its interests change, before it answers a subscribe call that adds one
(:class:`InterestSharing`), and renews its lapse every second: a process that dies stops renewing
and its interests lapse ``ttl`` seconds later (the resume window: its subscribers may resume on
another process meanwhile, and must find every change they missed). The leading worker asks the
union after each block it read (:class:`SharedInterests`), which costs one short script call while
nothing changed: the hashes are read only when the counter moved.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Final

import msgspec
import trio

from adapters.base import ChainAdapter
from broker.redis._client import DEFAULT_PREFIX, RedisClient, RedisFailure

log = logging.getLogger(__name__)

#: Seconds between two renewals of a web process's interests.
HEARTBEAT: Final = 1.0
#: The shortest lapse: a few renewals, so that one late renewal loses nothing.
MIN_TTL: Final = 3 * HEARTBEAT
#: Seconds a subscribe call waits for its interest to be written before it is answered anyway.
WRITE_TIMEOUT: Final = 2.0
#: Seconds the worker waits for the union before it reads with the one it had.
READ_TIMEOUT: Final = 2.0

_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(list[str]).decode

_NOW_MS = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""
# KEYS: interests, lapses, counter. ARGV: process, ttl ms, interests, '1' (given) or '0' (renew
# only). Returns 0 when only renewing a field that is gone (lapsed): the caller writes it whole.
_WRITE = (
    _NOW_MS
    + """
if ARGV[4] == '0' then
  if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
elseif redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[3] then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
  if redis.call('EXISTS', KEYS[3]) == 0 then
    -- A new counter (or one Redis lost) starts at the clock: never a value a reader holds.
    redis.call('SET', KEYS[3], string.format('%.0f', now))
  end
  redis.call('INCR', KEYS[3])
end
redis.call('HSET', KEYS[2], ARGV[1], string.format('%.0f', now + tonumber(ARGV[2])))
return 1
"""
)
# KEYS: interests, lapses, counter. ARGV: the counter as the caller last read it. Drops lapsed
# fields; returns {counter} when it did not move, else {counter, every field's interests}.
_READ = (
    _NOW_MS
    + """
local lapses = redis.call('HGETALL', KEYS[2])
for i = 1, #lapses, 2 do
  if tonumber(lapses[i + 1]) <= now then
    redis.call('HDEL', KEYS[2], lapses[i])
    redis.call('HDEL', KEYS[1], lapses[i])
    redis.call('INCR', KEYS[3])
  end
end
local counter = redis.call('GET', KEYS[3]) or '0'
if counter == ARGV[1] then return {counter} end
return {counter, redis.call('HVALS', KEYS[1])}
"""
)


class RedisInterests:
    """The interests of every web process, per chain (see the module)."""

    def __init__(self, client: RedisClient, *, prefix: str = DEFAULT_PREFIX) -> None:
        self.client = client
        self.prefix = prefix
        self._write = client.register_script(_WRITE)
        self._read = client.register_script(_READ)

    def keys(self, chain: str) -> list[str]:
        return [
            f"{self.prefix}:{kind}:{{{chain}}}"
            for kind in ("interests", "interests-lapse", "interests-counter")
        ]

    async def write(
        self, chain: str, process: str, ttl: float, interests: Iterable[str] | None
    ) -> bool:
        """Write ``process``'s interests in ``chain`` (None: renew them only), lapsing ``ttl``
        seconds from now; False when renewing interests that lapsed already."""
        payload = b"" if interests is None else _encode(sorted(interests))
        given = b"0" if interests is None else b"1"
        done: object = await self._write(
            self.keys(chain), [process, int(ttl * 1000), payload, given]
        )
        return done == 1

    async def union(self, chain: str, known: bytes) -> tuple[bytes, frozenset[str]] | None:
        """The counter and the union of every process's interests in ``chain``; None when the
        counter is still ``known`` (nothing changed since)."""
        found: object = await self._read(self.keys(chain), [known])
        assert isinstance(found, list | tuple)
        counter = bytes(found[0]) if not isinstance(found[0], int) else str(found[0]).encode()
        if len(found) == 1:
            return None
        union: set[str] = set()
        for payload in found[1]:
            union.update(_decode(payload))
        return counter, frozenset(union)


class SharedInterests:
    """What the worker's adapter asks (:meth:`adapters.base.ChainAdapter.set_interest_source`):
    the union of the web processes' interests in one chain, as Redis holds it now; the last one
    read when Redis cannot say: unreachable (the worker cannot publish meanwhile either), or
    emptied by a loss of its data until the web processes have written theirs again."""

    def __init__(self, store: RedisInterests, chain: str) -> None:
        self.store = store
        self.chain = chain
        self.union: frozenset[str] = frozenset()
        self._counter = b""
        self._lost = False

    async def __call__(self) -> frozenset[str]:
        try:
            with trio.fail_after(READ_TIMEOUT):
                found = await self.store.union(self.chain, self._counter)
        except RedisFailure as exc:
            log.warning("%s: cannot read the web processes' interests (%r)", self.chain, exc)
            return self.union
        if found is None:
            return self.union
        counter, union = found
        if counter == b"0" and self._counter not in (b"", b"0"):
            # Redis had a counter and has none now: it lost its data, and the web processes
            # write theirs again within a renewal. Until then the union read is empty because
            # Redis cannot say, not because no one subscribes: keep reading what was wanted.
            if not self._lost:
                log.warning("%s: Redis lost the interests; reading the last known", self.chain)
                self._lost = True
            return self.union
        self._lost = False
        self._counter, self.union = counter, union
        return self.union


class InterestSharing:
    """A web process's share: its interests in each chain whose adapter has some, written when
    they change and renewed every :data:`HEARTBEAT` seconds; :meth:`include` writes one before a
    subscribe call is answered."""

    def __init__(
        self,
        store: RedisInterests,
        adapters: Mapping[str, ChainAdapter],
        process: str,
        ttl: float,
    ) -> None:
        """``adapters``: each chain's; ``process``: this process's name in the hashes; ``ttl``:
        seconds its interests outlive it (at least :data:`MIN_TTL`)."""
        self.store = store
        self.process = process
        self.ttl = max(ttl, MIN_TTL)
        self._adapters = dict(adapters)
        #: Each chain's interests as this process last wrote them.
        self.written: dict[str, frozenset[str]] = {}
        self._locks = {chain: trio.Lock() for chain in self._adapters}
        self._failing: set[str] = set()

    async def include(self, chain: str, interest: str) -> None:
        """Have ``interest`` written before a subscription that needs it is answered. Redis
        unreachable for :data:`WRITE_TIMEOUT`: it is answered anyway (the renewals write it once
        Redis is back; meanwhile the worker cannot publish either)."""
        lock = self._locks.get(chain)
        if lock is None or interest in self.written.get(chain, ()):
            return
        with trio.move_on_after(WRITE_TIMEOUT):
            async with lock:
                if interest in self.written.get(chain, ()):
                    return
                found = self._adapters[chain].interests(chain) or frozenset()
                wanted = found | self.written.get(chain, frozenset()) | {interest}
                try:
                    await self._write(chain, wanted)
                    return
                except RedisFailure as exc:
                    log.warning("%s: cannot share a subscription's interest (%r)", chain, exc)
                    return
        log.warning("%s: sharing a subscription's interest took too long; answered anyway", chain)

    async def start(self, nursery: trio.Nursery) -> None:
        nursery.start_soon(self.serve)

    async def serve(self) -> None:
        """Write or renew each chain's interests every :data:`HEARTBEAT` seconds."""
        while True:
            for chain, adapter in self._adapters.items():
                interests = adapter.interests(chain)
                if interests is None:
                    continue
                async with self._locks[chain]:
                    try:
                        with trio.fail_after(WRITE_TIMEOUT):
                            await self._write(chain, interests)
                    except RedisFailure as exc:
                        if chain not in self._failing:
                            log.warning(
                                "%s: cannot share this process's interests (%r)", chain, exc
                            )
                            self._failing.add(chain)
                        continue
                if chain in self._failing:
                    log.info("%s: sharing this process's interests again", chain)
                    self._failing.discard(chain)
            await trio.sleep(HEARTBEAT)

    async def _write(self, chain: str, interests: frozenset[str]) -> None:
        if interests == self.written.get(chain) and await self.store.write(
            chain, self.process, self.ttl, None
        ):
            return
        await self.store.write(chain, self.process, self.ttl, interests)
        self.written[chain] = interests
