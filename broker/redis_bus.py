"""Chain events and session changes through Redis Streams, for many web processes and one worker.

Every chain has a stream (``<prefix>:events:{<chain>}``) that the worker appends to and every web
process follows with a blocking ``XREAD`` from the last id it delivered; session changes share one
stream (``<prefix>:changes``). A reader that loses its connection resumes from its last id, so its
subscribers see neither a gap nor a repeat (as long as the stream's approximate ``MAXLEN`` keeps the
entries it missed). Appends go through one Lua script that also fences out a worker that lost its
lease (see :mod:`broker.worker`) and refuses to repeat the event it appended last, which makes a
retried append idempotent. The script also records which entry completed the published head, so a
new leader can read what its predecessor appended after it (:meth:`RedisEventBus.unfinished`) and
not append it again. Readers drop repeats of delivered events as a last safety net.
"""

from __future__ import annotations

import logging
import re
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Final, NoReturn
from urllib.parse import urlsplit, urlunsplit

import anyio
import coredis
import msgspec
import trio
from coredis.exceptions import RedisError
from coredis.response.types import StreamEntry

from adapters.base import ChainBlock
from broker.bus import DEFAULT_RESUME_WINDOW, EventBus, EventHandler, Position
from broker.events import ChainEvent, HeadEvent, LogsEvent
from broker.session_changes import ChangeHandler, SessionChange, SessionChangeBus

log = logging.getLogger(__name__)

DEFAULT_PREFIX: Final = "scopecast"
DEFAULT_EVENTS_MAXLEN: Final = 100_000
DEFAULT_CHANGES_MAXLEN: Final = 10_000
BLOCK_MS: Final = 5_000
READ_COUNT: Final = 500
#: How long past its BLOCK a read may take before the connection is taken for dead (half-open TCP).
READ_GRACE: Final = 10.0
CONNECT_TIMEOUT: Final = 2.0

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


class LeaseLost(Exception):
    """The append was refused: the lease token given is no longer the chain's lease."""


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


class Backoff:
    """Delays that double from ``first`` up to ``cap`` until :meth:`reset`."""

    def __init__(self, first: float = 0.5, cap: float = 10.0) -> None:
        self.first = first
        self.cap = cap
        self._next = first

    def next(self) -> float:
        delay, self._next = self._next, min(self._next * 2, self.cap)
        return delay

    def reset(self) -> None:
        self._next = self.first


async def wait_for_redis(client: RedisClient, url: str) -> None:
    """Return once Redis answers ``PING``; until then log an error and retry with backoff."""
    backoff = Backoff()
    while True:
        try:
            await client.ping()
        except RedisFailure as exc:
            delay = backoff.next()
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


# -- following streams ---------------------------------------------------------------------------


def _bytes(value: str | bytes) -> bytes:
    return value.encode() if isinstance(value, str) else value


def entry_fields(field_values: Mapping[str | bytes, str | bytes]) -> dict[bytes, bytes]:
    """A stream entry's fields as bytes (coredis may hand back str or bytes)."""
    return {_bytes(k): _bytes(v) for k, v in field_values.items()}


async def last_id(client: RedisClient, key: str) -> bytes:
    """The id of the newest entry of a stream (``0-0`` when it has none yet)."""
    newest = await client.xrevrange(key, count=1)
    return _bytes(newest[0].identifier) if newest else b"0-0"


async def _start_positions(client: RedisClient, keys: list[str]) -> dict[str | bytes, bytes]:
    backoff = Backoff(0.2, 5.0)
    while True:
        try:
            return {key.encode(): await last_id(client, key) for key in keys}
        except RedisFailure as exc:
            delay = backoff.next()
            log.warning("reading stream positions failed (%s); retrying in %.1f s", exc, delay)
            await trio.sleep(delay)


async def follow_streams(
    client: RedisClient,
    positions: dict[str | bytes, bytes],
    on_entry: Callable[[bytes, str, Mapping[bytes, bytes]], None],
    *,
    block_ms: int = BLOCK_MS,
) -> NoReturn:
    """Call ``on_entry(key, entry_id, fields)`` for every entry after ``positions``, in order,
    forever.

    ``positions`` (stream key → last delivered id) is advanced as entries are delivered, so that a
    read that fails is retried from exactly where delivery stopped.
    """
    backoff = Backoff(0.2, 5.0)
    while True:
        try:
            with trio.fail_after(block_ms / 1000 + READ_GRACE):
                reply = await client.xread(positions, count=READ_COUNT, block=block_ms)
        except RedisFailure as exc:
            delay = backoff.next()
            log.warning(
                "Redis stream read failed (%s); resuming in %.1f s from the last ids", exc, delay
            )
            await trio.sleep(delay)
            continue
        backoff.reset()
        for key, entries in (reply or {}).items():
            for entry in entries:
                identifier = _bytes(entry.identifier)
                positions[key] = identifier
                fields = entry_fields(entry.field_values)
                try:
                    on_entry(_bytes(key), identifier.decode(), fields)
                except Exception:
                    # One bad entry (or a bug in a subscriber) must not end the process's event path.
                    log.exception("dropping stream entry %s of %r", entry.identifier, key)


_STREAM_ID: Final = re.compile(r"\A([0-9]{1,20})-([0-9]{1,20})\Z")


async def read_stream_range(
    client: RedisClient, key: str, after: str, upto: str, window: float
) -> list[tuple[str, dict[bytes, bytes]]] | None:
    """The entries of stream ``key`` after id ``after`` up to id ``upto``, oldest first; None when
    ``after`` is malformed or is no longer on the stream (trimmed), or the entries after it are
    older than ``window`` seconds (the resume window)."""
    found = _STREAM_ID.match(after)
    if found is None or _STREAM_ID.match(upto) is None:
        return None
    if after == "0-0":
        first = await client.xrange(key, count=1)
        if first and entry_fields(first[0].field_values).get(b"n", b"1") != b"1":
            return None  # the stream was trimmed since it began
    elif not await client.xrange(key, after, after, count=1):
        return None
    entries: list[tuple[str, dict[bytes, bytes]]] = []
    start = "(" + after
    while True:
        batch = await client.xrange(key, start, upto, count=READ_COUNT)
        for entry in batch:
            entries.append((_bytes(entry.identifier).decode(), entry_fields(entry.field_values)))
        if len(batch) < READ_COUNT:
            break
        start = "(" + entries[-1][0]
    if entries and int(entries[0][0].split("-", 1)[0]) < (time.time() - window) * 1000:
        return None
    return entries


# -- chain events --------------------------------------------------------------------------------


class _WireEvent(msgspec.Struct, array_like=True):
    logs: bool
    removed: bool
    block: ChainBlock


class PublishedHead(msgspec.Struct, array_like=True, frozen=True):
    """The newest block whose events were all appended: where a new leader resumes."""

    number: int
    hash: str
    parent_hash: str


_encode = msgspec.msgpack.Encoder().encode
_decode_event = msgspec.msgpack.Decoder(_WireEvent).decode
_decode_head = msgspec.msgpack.Decoder(PublishedHead).decode
_decode_change = msgspec.msgpack.Decoder(SessionChange).decode

# KEYS: stream, last appended event, published head, lease, entry counter, published head's entry.
# ARGV: entry, event key, maxlen, published head ('' = unchanged), lease token ('' = unfenced).
# Each entry carries its number ('n') so that a reader notices entries trimmed before it read them.
_APPEND = """
if ARGV[5] ~= '' and redis.call('GET', KEYS[4]) ~= ARGV[5] then return -1 end
if redis.call('GET', KEYS[2]) == ARGV[2] then return 0 end
local n = redis.call('INCR', KEYS[5])
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[3], '*', 'e', ARGV[1], 'n', n)
redis.call('SET', KEYS[2], ARGV[2])
if ARGV[4] ~= '' then
  redis.call('SET', KEYS[3], ARGV[4])
  redis.call('SET', KEYS[6], id)
end
return 1
"""


def event_key(event: ChainEvent) -> bytes:
    """What makes an event distinct from the one before it on the stream."""
    if isinstance(event, HeadEvent):
        return b"h" + event.block.hash.encode()
    return (b"r" if event.removed else b"l") + event.block.hash.encode()


def decode_stream_event(chain: str, fields: Mapping[bytes, bytes]) -> ChainEvent:
    """The event a stream entry of ``chain`` carries."""
    wire = _decode_event(fields[b"e"])
    if wire.logs:
        return LogsEvent(chain, wire.block, wire.removed)
    return HeadEvent(chain, wire.block)


def _completes(event: ChainEvent) -> ChainBlock | None:
    """The block whose events end with ``event`` (its head when it has no logs, else its logs)."""
    if isinstance(event, HeadEvent):
        return None if event.block.logs else event.block
    return None if event.removed else event.block


class EventDeduper:
    """Drops an event a reader already delivered (sans-io).

    A head is a repeat when the same block is the newest head delivered at its height; a block's
    logs are a repeat when the last logs delivered for that block had the same ``removed`` flag.
    A reorganisation back to an earlier branch therefore still gets through.
    """

    def __init__(self, window: int = 512) -> None:
        self.window = window
        self._heads: dict[int, str] = {}
        self._logs: OrderedDict[str, bool] = OrderedDict()

    def admit(self, event: ChainEvent) -> bool:
        """Whether ``event`` is new; a new one is recorded as delivered."""
        if self.is_repeat(event):
            return False
        self.record(event)
        return True

    def is_repeat(self, event: ChainEvent) -> bool:
        """Whether ``event`` was delivered already (records nothing)."""
        block = event.block
        if isinstance(event, HeadEvent):
            return self._heads.get(block.number) == block.hash
        return self._logs.get(block.hash) is event.removed

    def record(self, event: ChainEvent) -> None:
        """Remember ``event`` as delivered."""
        block = event.block
        if isinstance(event, HeadEvent):
            # A head at this height ends whatever was delivered at or above it (a reorganisation);
            # so the dict stays in ascending height order and both ends are cheap to trim.
            while self._heads and next(reversed(self._heads)) >= block.number:
                self._heads.popitem()
            self._heads[block.number] = block.hash
            while len(self._heads) > self.window:
                del self._heads[next(iter(self._heads))]
            return
        self._logs[block.hash] = event.removed
        self._logs.move_to_end(block.hash)
        while len(self._logs) > self.window:
            self._logs.popitem(last=False)


@dataclass(frozen=True, slots=True)
class ChainKeys:
    """The Redis keys of one chain; the ``{chain}`` hash tag keeps them in one cluster slot."""

    events: str
    last: str
    head: str
    lease: str
    count: str
    head_entry: str


class RedisEventBus(EventBus):
    """Chain events on a Redis Stream per chain."""

    def __init__(
        self,
        client: RedisClient,
        *,
        prefix: str = DEFAULT_PREFIX,
        maxlen: int = DEFAULT_EVENTS_MAXLEN,
        block_ms: int = BLOCK_MS,
        window: float = DEFAULT_RESUME_WINDOW,
    ) -> None:
        self.client = client
        self.prefix = prefix
        self.maxlen = maxlen
        self.block_ms = block_ms
        #: Seconds an event stays readable by :meth:`read_range` (the resume window).
        self.window = window
        self._append = client.register_script(_APPEND)

    def keys(self, chain: str) -> ChainKeys:
        def key(kind: str) -> str:
            return f"{self.prefix}:{kind}:{{{chain}}}"

        return ChainKeys(
            key("events"), key("last"), key("head"), key("lease"), key("count"), key("head-entry")
        )

    async def publish(self, event: ChainEvent) -> None:
        await self.append(event)

    async def append(self, event: ChainEvent, *, lease_token: str | None = None) -> bool:
        """Append ``event`` to its chain's stream; False when it repeats the last one appended.

        Raises:
            LeaseLost: ``lease_token`` is not (any more) the chain's lease.
        """
        keys = self.keys(event.chain)
        wire = _WireEvent(
            isinstance(event, LogsEvent), getattr(event, "removed", False), event.block
        )
        done = _completes(event)
        head = (
            b""
            if done is None
            else _encode(PublishedHead(done.number, done.hash, done.parent_hash))
        )
        outcome: object = await self._append(
            [keys.events, keys.last, keys.head, keys.lease, keys.count, keys.head_entry],
            [_encode(wire), event_key(event), self.maxlen, head, lease_token or ""],
        )
        if outcome == -1:
            raise LeaseLost(event.chain)
        return outcome == 1

    async def published_head(self, chain: str) -> PublishedHead | None:
        """The newest block of ``chain`` whose events were all appended (None: none yet)."""
        data = await self.client.get(self.keys(chain).head)
        return None if data is None else _decode_head(data)

    async def unfinished(self, chain: str) -> list[ChainEvent]:
        """The events appended after the published head: a batch whose leader did not finish it.

        Empty when the stream predates the record of the published head's entry.
        """
        keys = self.keys(chain)

        def events_of(entries: tuple[StreamEntry, ...]) -> list[ChainEvent]:
            return [decode_stream_event(chain, entry_fields(e.field_values)) for e in entries]

        entry = await self.client.get(keys.head_entry)
        if entry is None:
            if await self.client.exists([keys.head]):
                return []
            # No block was ever completed: what the stream holds (its newest entries) is unfinished.
            return events_of(await self.client.xrevrange(keys.events, count=READ_COUNT))[::-1]
        events: list[ChainEvent] = []
        start = b"(" + entry
        while True:
            entries = await self.client.xrange(keys.events, start, b"+", count=READ_COUNT)
            events.extend(events_of(entries))
            if len(entries) < READ_COUNT:
                return events
            start = b"(" + _bytes(entries[-1].identifier)

    async def serve_reader(
        self,
        chains: list[str],
        handler: EventHandler,
        *,
        task_status: trio.TaskStatus[dict[str, Position]] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        by_key = {self.keys(chain).events.encode(): chain for chain in chains}
        dedupers = {chain: EventDeduper() for chain in chains}
        numbers: dict[str, int] = {}
        positions = await _start_positions(self.client, [self.keys(c).events for c in chains])

        def deliver(key: bytes, entry_id: str, fields: Mapping[bytes, bytes]) -> None:
            chain = by_key[key]
            number, previous = int(fields.get(b"n", b"0")), numbers.get(chain)
            if previous is not None and number > previous + 1:
                log.error(
                    "%s: %d events were trimmed from the stream before this process read them "
                    "(it fell behind by more than [server] stream_maxlen)",
                    chain,
                    number - previous - 1,
                )
            elif previous is not None and number <= previous:
                log.warning("%s: the stream's entry count restarted (Redis lost its data?)", chain)
            numbers[chain] = number
            event = decode_stream_event(chain, fields)
            if dedupers[chain].admit(event):
                handler(event, entry_id)
            else:
                log.info("%s: dropped a repeated event for block %s", chain, event.block.hash)

        task_status.started({by_key[_bytes(k)]: _bytes(v).decode() for k, v in positions.items()})
        await follow_streams(self.client, positions, deliver, block_ms=self.block_ms)

    async def read_range(
        self, chain: str, after: Position, upto: Position
    ) -> list[tuple[Position, ChainEvent]] | None:
        entries = await read_stream_range(
            self.client, self.keys(chain).events, after, upto, self.window
        )
        if entries is None:
            return None
        deduper = EventDeduper()
        events: list[tuple[Position, ChainEvent]] = []
        for position, fields in entries:
            event = decode_stream_event(chain, fields)
            if deduper.admit(event):
                events.append((position, event))
        return events


# -- session changes -------------------------------------------------------------------------------


class RedisChangeBus(SessionChangeBus):
    """Session changes on one Redis Stream that every web process follows."""

    def __init__(
        self,
        client: RedisClient,
        *,
        prefix: str = DEFAULT_PREFIX,
        maxlen: int = DEFAULT_CHANGES_MAXLEN,
        block_ms: int = BLOCK_MS,
        window: float = DEFAULT_RESUME_WINDOW,
    ) -> None:
        self.client = client
        self.key = f"{prefix}:changes"
        self.maxlen = maxlen
        self.block_ms = block_ms
        self.window = window

    async def publish(self, change: SessionChange) -> None:
        await self.client.xadd(
            self.key,
            {"e": _encode(change)},
            trim_strategy=coredis.PureToken.MAXLEN,
            trim_operator=coredis.PureToken.APPROXIMATELY,
            threshold=self.maxlen,
        )

    async def serve_reader(
        self,
        handler: ChangeHandler,
        *,
        task_status: trio.TaskStatus[Position] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        positions = await _start_positions(self.client, [self.key])

        def deliver(key: bytes, entry_id: str, fields: Mapping[bytes, bytes]) -> None:
            handler(_decode_change(fields[b"e"]), entry_id)

        task_status.started(_bytes(positions[self.key.encode()]).decode())
        await follow_streams(self.client, positions, deliver, block_ms=self.block_ms)

    async def read_range(
        self, after: Position, upto: Position
    ) -> list[tuple[Position, SessionChange]] | None:
        entries = await read_stream_range(self.client, self.key, after, upto, self.window)
        if entries is None:
            return None
        return [(position, _decode_change(fields[b"e"])) for position, fields in entries]
