"""The Redis connection: the client, what counts as its failure, and waiting for it."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Final
from urllib.parse import urlsplit, urlunsplit

import anyio
import coredis
import trio
from coredis.exceptions import RedisError

from adapters.backoff import Backoff

log = logging.getLogger(__name__)

DEFAULT_PREFIX: Final = "scopecast"
CONNECT_TIMEOUT: Final = 2.0
BLOCK_MS: Final = 5_000
#: How long past its BLOCK a read may take before the connection is taken for dead (half-open TCP).
READ_GRACE: Final = 10.0

#: Redis errors and socket errors: the connection is gone or the server refuses for now (coredis
#: runs on anyio: a connection closed under a command surfaces as anyio's resource errors).
RedisFailure = (
    RedisError,
    OSError,
    trio.TooSlowError,
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
)

RedisClient = coredis.Redis[bytes]


# -- the connection ----------------------------------------------------------------------------


def redis_client(url: str) -> RedisClient:
    """A client for ``url`` (not connected yet: enter it with :func:`hold_redis`)."""
    # A reply slower than the longest blocking read means a dead (half-open) connection.
    reply_timeout = BLOCK_MS / 1000 + READ_GRACE
    return coredis.Redis.from_url(
        url, connect_timeout=CONNECT_TIMEOUT, stream_timeout=reply_timeout
    )


def redacted(url: str) -> str:
    """``url`` without its password, for logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rpartition("@")[2]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc}"))


async def wait_for_redis(client: RedisClient, url: str) -> None:
    """Return once Redis answers ``PING``; until then log an error and retry with backoff."""
    backoff = Backoff()
    while True:
        try:
            await client.ping()
        except RedisFailure as exc:
            delay = backoff.failed()
            log.error(
                "cannot reach Redis at %s (%s); retrying in %.1f s", redacted(url), exc, delay
            )
            await trio.sleep(delay)
        else:
            log.info("connected to Redis at %s", redacted(url))
            return


@asynccontextmanager
async def hold_redis(client: RedisClient, url: str) -> AsyncIterator[None]:
    """Keep ``client`` open (its connections live in this task) once Redis answers."""
    async with client:
        await wait_for_redis(client, url)
        yield
