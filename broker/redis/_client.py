"""The Redis connection: the client (one server, or the primary Sentinel names), what counts as
its failure, and waiting for it."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Final, Self
from urllib.parse import unquote

import anyio
import coredis
import trio
from coredis.commands import CommandRequest
from coredis.connection import TCPLocation
from coredis.exceptions import ReadOnlyError, RedisError
from coredis.typing import R

from adapters.backoff import Backoff
from schemas.errors import ConfigError

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

SENTINEL_SCHEME: Final = "redis+sentinel"


# -- the connection ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SentinelUrl:
    """``redis+sentinel://[[USER]:PASSWORD@]HOST:PORT[,HOST:PORT...]/MASTER_NAME[/DB]``."""

    sentinels: tuple[tuple[str, int], ...]
    master: str
    db: int = 0
    username: str | None = None
    password: str | None = None

    @classmethod
    def parse(cls, url: str) -> SentinelUrl:
        """Raises ConfigError, saying what is wrong, for a malformed URL."""
        try:
            return cls._parse(url)
        except ValueError as exc:
            raise ConfigError(f"redis_url {redacted(url)}: {exc}") from None

    @classmethod
    def _parse(cls, url: str) -> SentinelUrl:
        scheme, _, rest = url.partition("://")
        if scheme != SENTINEL_SCHEME or not rest:
            raise ValueError(f"not a {SENTINEL_SCHEME}:// URL")
        netloc, _, path = rest.partition("/")
        credentials, _, hosts = netloc.rpartition("@")
        username = password = None
        if credentials:
            user, colon, secret = credentials.partition(":")
            username = unquote(user) or None
            password = unquote(secret) if colon else None
        sentinels: list[tuple[str, int]] = []
        for part in hosts.split(","):
            host, colon, port = part.rpartition(":")
            if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise ValueError(f"sentinel {part!r} is not HOST:PORT")
            sentinels.append((host.strip("[]"), int(port)))
        segments = [unquote(s) for s in path.split("/") if s]
        if not segments or len(segments) > 2:
            raise ValueError("the path must be /MASTER_NAME or /MASTER_NAME/DB")
        if len(segments) == 2 and not segments[1].isdigit():
            raise ValueError(f"database {segments[1]!r} is not a number")
        db = int(segments[1]) if len(segments) == 2 else 0
        return cls(tuple(sentinels), segments[0], db, username, password)


class _FailoverAwareRedis(coredis.Redis[bytes]):
    """A client whose connections are dropped when the server it writes to turned replica
    (``READONLY``: a failover demoted it), so that the next command finds the new primary."""

    _sentinel: coredis.Sentinel[bytes] | None = None

    async def execute_command(self, command: CommandRequest[R]) -> R:
        try:
            return await super().execute_command(command)
        except ReadOnlyError:
            # Behind a Sentinel the pool asks the sentinels again for every new connection;
            # with a plain URL the same server is tried again (a managed failover moves its name).
            log.warning("Redis answered READONLY (a failover?); reconnecting to the primary")
            self.connection_pool.disconnect()
            raise

    @asynccontextmanager
    async def __asynccontextmanager__(self) -> AsyncGenerator[Self]:
        async with AsyncExitStack() as stack:
            if self._sentinel is not None:
                await stack.enter_async_context(self._sentinel)
            await stack.enter_async_context(self.connection_pool)
            yield self


def redis_client(url: str) -> RedisClient:
    """A client for ``url`` (not connected yet: enter it with :func:`hold_redis`): a
    ``redis://`` (``rediss://``, ``unix://``) server, or the primary that the sentinels of a
    ``redis+sentinel://`` URL name, found again after every failover.

    Raises:
        ConfigError: a malformed ``redis+sentinel://`` URL.
    """
    # A reply slower than the longest blocking read means a dead (half-open) connection.
    options: dict[str, Any] = {
        "connect_timeout": CONNECT_TIMEOUT,
        "stream_timeout": BLOCK_MS / 1000 + READ_GRACE,
    }
    if not url.startswith(SENTINEL_SCHEME + "://"):
        return _FailoverAwareRedis.from_url(url, **options)
    parsed = SentinelUrl.parse(url)
    sentinel: coredis.Sentinel[bytes] = coredis.Sentinel(
        [TCPLocation(host, port) for host, port in parsed.sentinels],
        sentinel_kwargs={"connect_timeout": CONNECT_TIMEOUT, "stream_timeout": CONNECT_TIMEOUT},
        **options,
    )
    client = sentinel.primary_for(
        parsed.master,
        redis_class=_FailoverAwareRedis,
        db=parsed.db,
        username=parsed.username,
        password=parsed.password,
    )
    assert isinstance(client, _FailoverAwareRedis)
    client._sentinel = sentinel
    return client


def redacted(url: str) -> str:
    """``url`` without its password, for logs."""
    scheme, sep, rest = url.partition("://")
    credentials, at, _ = rest.partition("/")[0].rpartition("@")
    if not at or ":" not in credentials:
        return url
    user = credentials.partition(":")[0]
    return f"{scheme}{sep}{user}:***@{rest[len(credentials) + 1 :]}"


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
