"""Chain events on a stream per chain: the append script (fenced by the lease, idempotent), the
readers' deduper, and the event bus over them. A chain's entries are the EVM profile's block
events, or, on a chain whose family says how its events travel (:meth:`RedisEventBus.carry`), the
family's events as its codec encodes them, with the codec's version."""

from __future__ import annotations

import hashlib
import logging
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import msgspec
import trio
from coredis.response.types import StreamEntry

from adapters.base import EventCodec
from adapters.evm.blocks import ChainBlock
from broker.events.bus import DEFAULT_RESUME_WINDOW, EventBus, EventHandler, Position
from broker.events.chain_events import ChainEvent, FamilyEvent, HeadEvent, HubEvent, LogsEvent
from broker.redis._client import BLOCK_MS, DEFAULT_PREFIX, RedisClient
from broker.redis._streams import (
    READ_COUNT,
    as_bytes,
    entry_fields,
    follow_streams,
    read_stream_range,
    start_positions,
    stream_holds,
)

log = logging.getLogger(__name__)

DEFAULT_EVENTS_MAXLEN: Final = 100_000


class LeaseLost(Exception):
    """The append was refused: the lease token given is no longer the chain's lease."""


# -- chain events --------------------------------------------------------------------------------


class _WireEvent(msgspec.Struct, array_like=True):
    logs: bool
    removed: bool
    block: ChainBlock


class _WireFamilyEvent(msgspec.Struct, array_like=True):
    version: int
    data: bytes


class PublishedHead(msgspec.Struct, array_like=True, frozen=True):
    """The newest block whose events were all appended: where a new leader resumes."""

    number: int
    hash: str
    parent_hash: str


_encode = msgspec.msgpack.Encoder().encode
_decode_event = msgspec.msgpack.Decoder(_WireEvent).decode
_decode_family_event = msgspec.msgpack.Decoder(_WireFamilyEvent).decode
_decode_head = msgspec.msgpack.Decoder(PublishedHead).decode

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
    """What makes a block event distinct from the one before it on the stream."""
    if isinstance(event, HeadEvent):
        return b"h" + event.block.hash.encode()
    return (b"r" if event.removed else b"l") + event.block.hash.encode()


def decode_stream_event(chain: str, fields: Mapping[bytes, bytes]) -> ChainEvent:
    """The block event a stream entry of ``chain`` carries."""
    wire = _decode_event(fields[b"e"])
    if wire.logs:
        return LogsEvent(chain, wire.block, wire.removed)
    return HeadEvent(chain, wire.block)


class UnreadableEvent(ValueError):
    """A family event on the stream that this process cannot decode (another release's encoding
    version, or not the family's at all)."""


def decode_family_event(
    chain: str, codec: EventCodec, fields: Mapping[bytes, bytes]
) -> FamilyEvent:
    """The family event a stream entry of ``chain`` carries, decoded by the family's ``codec``.

    Raises:
        UnreadableEvent: the codec cannot read it.
    """
    try:
        wire = _decode_family_event(fields[b"e"])
        return FamilyEvent(chain, codec.decode(wire.data, wire.version))
    except (KeyError, msgspec.DecodeError, ValueError) as exc:
        raise UnreadableEvent(f"{chain}: an event this release cannot read ({exc})") from exc


def completes(event: HubEvent) -> ChainBlock | None:
    """The block whose events end with ``event`` (its head when it has no logs or transactions,
    else its logs event); None for a family's event (a family chain has no published head)."""
    if isinstance(event, FamilyEvent):
        return None
    if isinstance(event, HeadEvent):
        return None if event.block.has_activity else event.block
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


class FamilyRepeats:
    """Drops a family event published again after Redis lost the stream (sans-io).

    A leader that finds the stream empty resumes after the tail it remembers, which may be a little
    stale (a standby's last look): the restarted stream may then begin with events this reader
    delivered already. After a restart (:meth:`restarted`), an entry equal, as encoded, to one of
    the last ``window`` delivered before it is a repeat, each matched once. An equal family event
    is the same event (the same slot, the same account at the same slot, the same transaction).
    """

    def __init__(self, window: int = 1024) -> None:
        self._recent: OrderedDict[bytes, None] = OrderedDict()
        self._before: set[bytes] = set()
        self._window = window

    def restarted(self) -> None:
        """The stream started over: what follows may repeat what was delivered before."""
        self._before = set(self._recent)
        self._recent.clear()

    def admit(self, entry: bytes) -> bool:
        """Whether the family event encoded as ``entry`` is new; a new one is recorded."""
        if entry in self._before:
            self._before.discard(entry)
            return False
        self._recent[entry] = None
        self._recent.move_to_end(entry)
        while len(self._recent) > self._window:
            self._recent.popitem(last=False)
        return True


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
        self._codecs: dict[str, EventCodec] = {}

    def carry(self, chain: str, codec: EventCodec) -> None:
        self._codecs[chain] = codec

    def carries(self, chain: str) -> bool:
        """Whether ``chain``'s entries are family events (see :meth:`carry`)."""
        return chain in self._codecs

    def _decode(self, chain: str, fields: Mapping[bytes, bytes]) -> HubEvent:
        codec = self._codecs.get(chain)
        if codec is None:
            return decode_stream_event(chain, fields)
        return decode_family_event(chain, codec, fields)

    def _entry(self, event: HubEvent) -> tuple[bytes, bytes]:
        """The stream entry of ``event`` and its key (what the append script compares)."""
        if isinstance(event, FamilyEvent):
            codec = self._codecs[event.chain]
            data = codec.encode(event.event)
            # Consecutive events of a family differ in their bytes: equal bytes are a retried
            # append (or a new leader repeating the last one), refused by the script.
            key = b"f" + hashlib.blake2b(data, digest_size=16).digest()
            return _encode(_WireFamilyEvent(codec.version, data)), key
        wire = _WireEvent(
            isinstance(event, LogsEvent), getattr(event, "removed", False), event.block
        )
        return _encode(wire), event_key(event)

    def keys(self, chain: str) -> ChainKeys:
        def key(kind: str) -> str:
            return f"{self.prefix}:{kind}:{{{chain}}}"

        return ChainKeys(
            key("events"), key("last"), key("head"), key("lease"), key("count"), key("head-entry")
        )

    async def publish(self, event: HubEvent) -> None:
        await self.append(event)

    async def append(self, event: HubEvent, *, lease_token: str | None = None) -> bool:
        """Append ``event`` to its chain's stream; False when it repeats the last one appended.

        Raises:
            LeaseLost: ``lease_token`` is not (any more) the chain's lease.
        """
        keys = self.keys(event.chain)
        entry, key = self._entry(event)
        done = completes(event)
        head = (
            b""
            if done is None
            else _encode(PublishedHead(done.number, done.hash, done.parent_hash))
        )
        outcome: object = await self._append(
            [keys.events, keys.last, keys.head, keys.lease, keys.count, keys.head_entry],
            [entry, key, self.maxlen, head, lease_token or ""],
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
            start = b"(" + as_bytes(entries[-1].identifier)

    async def tail(self, chain: str, count: int) -> list[HubEvent]:
        """Up to the last ``count`` events of ``chain``'s stream, oldest first (an entry this
        process cannot read is left out)."""
        entries = await self.client.xrevrange(self.keys(chain).events, count=count)
        events: list[HubEvent] = []
        for entry in reversed(entries):
            try:
                events.append(self._decode(chain, entry_fields(entry.field_values)))
            except UnreadableEvent as exc:
                log.error("%s; entry %s left out of the stream's tail", exc, entry.identifier)
        return events

    async def serve_reader(
        self,
        chains: list[str],
        handler: EventHandler,
        *,
        task_status: trio.TaskStatus[dict[str, Position]] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        by_key = {self.keys(chain).events.encode(): chain for chain in chains}
        dedupers = {chain: EventDeduper() for chain in chains}
        family_repeats = {chain: FamilyRepeats() for chain in chains}
        numbers: dict[str, int] = {}
        positions = await start_positions(self.client, [self.keys(c).events for c in chains])

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
                family_repeats[chain].restarted()
            numbers[chain] = number
            try:
                event = self._decode(chain, fields)
            except UnreadableEvent as exc:
                log.error("%s; entry %s dropped", exc, entry_id)
                return
            if isinstance(event, FamilyEvent):
                # The append script refused repeats already, but for those after a restart.
                if family_repeats[chain].admit(fields.get(b"e", b"")):
                    handler(event, entry_id)
                else:
                    log.info("%s: dropped a family event published again after a restart", chain)
            elif dedupers[chain].admit(event):
                handler(event, entry_id)
            else:
                log.info("%s: dropped a repeated event for block %s", chain, event.block.hash)

        task_status.started(
            {by_key[as_bytes(k)]: as_bytes(v).decode() for k, v in positions.items()}
        )
        await follow_streams(self.client, positions, deliver, block_ms=self.block_ms)

    async def holds(self, chain: str, position: Position) -> bool:
        return await stream_holds(self.client, self.keys(chain).events, position)

    async def read_range(
        self, chain: str, after: Position, upto: Position
    ) -> list[tuple[Position, HubEvent]] | None:
        entries = await read_stream_range(
            self.client, self.keys(chain).events, after, upto, self.window
        )
        if entries is None:
            return None
        deduper = EventDeduper()
        events: list[tuple[Position, HubEvent]] = []
        for position, fields in entries:
            try:
                event = self._decode(chain, fields)
            except UnreadableEvent as exc:
                # The resume cannot be complete: the client is told so (``complete: false``).
                log.error("%s; entry %s cannot be replayed", exc, position)
                return None
            if isinstance(event, FamilyEvent) or deduper.admit(event):
                events.append((position, event))
        return events
