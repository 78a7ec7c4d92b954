"""Encoded answers of chain calls, kept while they are true (sans-io).

:class:`ResponseStore` is an LRU bounded in bytes, keyed by (chain, method, raw params), each entry
stamped with the :class:`~adapters.base.CacheEpoch` its call started in and the
:class:`~adapters.base.Lifetime` its adapter gave it. A lookup compares the stamp with the chain's
epoch now: an ``UNTIL_HEAD`` answer is gone once the head moved, an ``UNTIL_REORG`` one once a
reorganisation happened; nothing stale is ever returned, because the comparison is made at the
lookup rather than by an invalidation that might arrive late.

:class:`HeadEpochs` derives epochs from head events, for adapters that cannot say synchronously
what they serve (an upstream node followed over the network).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Final

from adapters.base import CacheEpoch, Lifetime

Key = tuple[str, str, bytes]
_ENTRY_OVERHEAD: Final = 200  # bytes of bookkeeping per entry, counted against the bound


@dataclass(slots=True)
class _Entry:
    value: bytes
    lifetime: Lifetime
    head_id: str
    reorgs: int
    size: int


@dataclass(frozen=True, slots=True)
class CacheStatistics:
    hits: int
    misses: int
    evictions: int
    entries: int
    bytes: int


class ResponseStore:
    """An LRU of encoded answers, at most ``max_bytes`` (keys and values counted)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[Key, _Entry] = OrderedDict()
        self._bytes = 0
        self.hits = 0
        self.misses = 0
        self.evictions = 0

    def get(
        self, key: Key, epoch: CacheEpoch, *, count_miss: bool = True, count_hit: bool = True
    ) -> bytes | None:
        """The answer stored under ``key`` if it is still true in ``epoch``. A hit is counted
        unless ``count_hit`` is false (:meth:`count_hits` counts it later); a miss too, unless
        ``count_miss`` is false (a lookup that the caller will make again)."""
        entry = self._entries.get(key)
        if entry is None:
            self.misses += count_miss
            return None
        if entry.lifetime is not Lifetime.FOREVER and (
            entry.reorgs != epoch.reorgs
            or (entry.lifetime is Lifetime.UNTIL_HEAD and entry.head_id != epoch.head_id)
        ):
            self._drop(key, entry)
            self.misses += count_miss
            return None
        self._entries.move_to_end(key)
        self.hits += count_hit
        return entry.value

    def count_hits(self, hits: int) -> None:
        """Count ``hits`` answers looked up with ``count_hit=False`` and served."""
        self.hits += hits

    def put(self, key: Key, value: bytes, lifetime: Lifetime, epoch: CacheEpoch) -> None:
        """Keep ``value``, true as of ``epoch`` (the epoch its call started in), for ``lifetime``."""
        if lifetime is Lifetime.NEVER:
            return
        size = len(value) + len(key[2]) + _ENTRY_OVERHEAD
        if size > self.max_bytes:
            return
        old = self._entries.pop(key, None)
        if old is not None:
            self._bytes -= old.size
        self._entries[key] = _Entry(value, lifetime, epoch.head_id, epoch.reorgs, size)
        self._bytes += size
        while self._bytes > self.max_bytes:
            _, evicted = self._entries.popitem(last=False)
            self._bytes -= evicted.size
            self.evictions += 1

    def _drop(self, key: Key, entry: _Entry) -> None:
        del self._entries[key]
        self._bytes -= entry.size

    def statistics(self) -> CacheStatistics:
        return CacheStatistics(
            self.hits, self.misses, self.evictions, len(self._entries), self._bytes
        )


class HeadEpochs:
    """Epochs of chains followed through their head events: a head at or below the last one, or a
    block whose logs were removed, is a reorganisation."""

    def __init__(self) -> None:
        self._epochs: dict[str, CacheEpoch] = {}

    def epoch(self, chain: str) -> CacheEpoch | None:
        """None until the first head of ``chain`` arrived: nothing is cached before."""
        return self._epochs.get(chain)

    def on_head(self, chain: str, number: int, block_hash: str) -> None:
        last = self._epochs.get(chain)
        if last is None:
            self._epochs[chain] = CacheEpoch(number, block_hash, 0)
        elif block_hash != last.head_id:
            reorgs = last.reorgs + (1 if number <= last.head else 0)
            self._epochs[chain] = CacheEpoch(number, block_hash, reorgs)

    def on_removed(self, chain: str) -> None:
        last = self._epochs.get(chain)
        if last is not None:
            self._epochs[chain] = CacheEpoch(last.head, last.head_id, last.reorgs + 1)


@dataclass(slots=True)
class Recent:
    """What a request body seen before came to: its store key, its id, and the reply built from
    the stored answer it was given (valid while the store gives the same answer object)."""

    key: Key
    raw_id: bytes
    answer: bytes
    reply: bytes


class RecentBodies:
    """Request bodies answered from the cache lately, so that the same body sent again (a client
    polling ``eth_blockNumber``) is neither decoded nor its reply built again. Bounded in bytes:
    full, it starts over (what is here is rebuilt from the store in a few microseconds)."""

    def __init__(self, max_bytes: int = 4 * 1024 * 1024, max_body: int = 1024) -> None:
        self.max_bytes = max_bytes
        self.max_body = max_body
        self._bodies: dict[bytes, Recent] = {}
        self._bytes = 0

    def get(self, body: bytes) -> Recent | None:
        return self._bodies.get(body)

    def keep(self, body: bytes, recent: Recent) -> None:
        if len(body) > self.max_body:
            return
        size = len(body) + len(recent.reply) + _ENTRY_OVERHEAD
        if self._bytes + size > self.max_bytes:
            self._bodies.clear()
            self._bytes = 0
            if size > self.max_bytes:
                return
        old = self._bodies.get(body)
        if old is not None:
            self._bytes -= len(body) + len(old.reply) + _ENTRY_OVERHEAD
        self._bodies[body] = recent
        self._bytes += size
