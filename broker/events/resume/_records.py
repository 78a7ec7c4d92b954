"""Resume records: what a dropped connection followed, kept in memory or in Redis for the window.

A record is written whenever a connection's subscriptions change (before the call that changed them
is answered), so it survives the process being killed; when the connection ends it is kept for the
resume window, then forgotten.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Final

import msgspec
import trio

if TYPE_CHECKING:
    from broker.redis import RedisClient

#: How long the record of a connection that is still open (or whose process died) is kept.
LIVE_TTL: Final = 24 * 3600.0


class SubscriptionRecord(msgspec.Struct, array_like=True, frozen=True, gc=False):
    """One subscription: its id, chain, subscribe params (JSON), session scope, and for a chain
    family's subscription its subscribe method (None: ``eth_subscribe``)."""

    id: str
    chain: str
    params: bytes
    scope: str | None = None
    method: str | None = None


class ResumeRecord(msgspec.Struct, frozen=True, gc=False):
    """What a connection followed: enough to take its subscriptions over on another connection.

    Neither it nor its :class:`SubscriptionRecord` is tracked by the garbage collector
    (``gc=False``): strings, bytes and tuples of them, in no cycle; a memory store keeps one
    per connection.

    ``owner`` names the process and connection (``<process>:<id>``) that wrote it last: the session
    changes that connection caused itself were answered to it, not notified, and are not replayed.
    """

    api_key: str
    origin: str
    owner: str
    feeds: tuple[str, ...]
    since: tuple[str, ...]
    subscriptions: tuple[SubscriptionRecord, ...] = ()


_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(ResumeRecord).decode


class ResumeStore(ABC):
    @abstractmethod
    async def save(self, token: str, record: ResumeRecord, ttl: float) -> None:
        """Keep ``record`` under ``token`` for ``ttl`` seconds (replacing what was there)."""

    @abstractmethod
    async def load(self, token: str) -> ResumeRecord | None:
        """The record under ``token`` (None: never written, or expired)."""


class MemoryResumeStore(ResumeStore):
    """Records in this process (a resume works on this process only)."""

    def __init__(self, *, max_records: int = 100_000) -> None:
        self.max_records = max_records
        self._records: dict[str, tuple[float, ResumeRecord]] = {}

    async def save(self, token: str, record: ResumeRecord, ttl: float) -> None:
        # No checkpoint: in one process the record is in place before anything else runs, so a
        # client that reconnects at once finds it (with one, viem's reconnect in
        # tests/interop/test_viem_resume.py raced the save and missed a head about 4 times in 5).
        now = time.monotonic()
        if len(self._records) >= self.max_records and token not in self._records:
            self._records = {k: v for k, v in self._records.items() if v[0] > now}
            while len(self._records) >= self.max_records:  # oldest written first
                del self._records[next(iter(self._records))]
        self._records.pop(token, None)
        self._records[token] = (now + ttl, record)

    async def load(self, token: str) -> ResumeRecord | None:
        await trio.lowlevel.checkpoint()
        found = self._records.get(token)
        if found is None or found[0] <= time.monotonic():
            return None
        return found[1]


class RedisResumeStore(ResumeStore):
    """Records in Redis: a connection dropped by one web process resumes on any other."""

    def __init__(self, client: RedisClient, *, prefix: str = "scopecast") -> None:
        self.client = client
        self.prefix = prefix

    def _key(self, token: str) -> str:
        return f"{self.prefix}:resume:{token}"

    async def save(self, token: str, record: ResumeRecord, ttl: float) -> None:
        await self.client.set(self._key(token), _encode(record), px=max(int(ttl * 1000), 1))

    async def load(self, token: str) -> ResumeRecord | None:
        data = await self.client.get(self._key(token))
        if data is None:
            return None
        try:
            return _decode(data)
        except msgspec.DecodeError:
            return None
