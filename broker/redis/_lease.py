"""A chain's lease in Redis (``SET NX PX`` by script): which process ingests the chain. The
holder renews it well before it expires; any other process stands by and takes it once it is
free; every term has a token of its own, which the event append script checks (fencing: see
:mod:`broker.redis._events`)."""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass

from broker.redis._client import RedisClient

# KEYS: lease. ARGV: token, ttl ms. Returns 1 when the token holds the lease, else the holder.
_ACQUIRE = """
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end
if holder then return holder end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
"""
# KEYS: lease. ARGV: token, ttl ms ('' = release). Returns 1 when the token held the lease.
_RENEW = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('DEL', KEYS[1]) else redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 1
"""


@dataclass(frozen=True, slots=True)
class LeaseTiming:
    """How long a lease lives unrenewed, how often it is renewed, how often a standby tries."""

    ttl: float = 3.0
    renew_every: float = 1.0
    standby_poll: float = 0.5

    @classmethod
    def for_ttl(cls, ttl: float) -> LeaseTiming:
        """Renew three times per lease; poll six times per lease (at most every half second)."""
        return cls(ttl, ttl / 3, min(ttl / 6, 0.5))


def process_name() -> str:
    """``host:pid``, how leases name their holder in logs and in ``redis-cli``."""
    return f"{socket.gethostname()}:{os.getpid()}"


class ChainLease:
    """One chain's lease, as one process holds it or waits for it; a new token every term."""

    def __init__(self, client: RedisClient, key: str, timing: LeaseTiming, owner: str) -> None:
        self.key = key
        self.timing = timing
        self.owner = owner
        self.token = ""
        self._acquire = client.register_script(_ACQUIRE)
        self._renew = client.register_script(_RENEW)

    @property
    def _ttl_ms(self) -> int:
        return int(self.timing.ttl * 1000)

    def new_term(self) -> None:
        self.token = f"{self.owner}/{uuid.uuid4().hex[:12]}"

    async def acquire(self) -> bytes | None:
        """Take the lease if it is free (None), else name its holder."""
        outcome: object = await self._acquire([self.key], [self.token, self._ttl_ms])
        if outcome == 1:
            return None
        return outcome if isinstance(outcome, bytes) else str(outcome).encode()

    async def renew(self) -> bool:
        """Extend the lease; False when it is not ours any more."""
        return bool(await self._renew([self.key], [self.token, self._ttl_ms]) == 1)

    async def release(self) -> None:
        """Give the lease up at once (a standby takes over without waiting for it to expire)."""
        await self._renew([self.key], [self.token, ""])
