"""Following Redis Streams from a position, and reading a range of one back (for resume)."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Mapping
from typing import Final, NoReturn

import trio

from adapters.backoff import Backoff
from broker.redis._client import BLOCK_MS, READ_GRACE, RedisClient, RedisFailure
from broker.transport.outbox import corked

log = logging.getLogger(__name__)

READ_COUNT: Final = 500

# -- following streams ---------------------------------------------------------------------------


def as_bytes(value: str | bytes) -> bytes:
    return value.encode() if isinstance(value, str) else value


def entry_fields(field_values: Mapping[str | bytes, str | bytes]) -> dict[bytes, bytes]:
    """A stream entry's fields as bytes (coredis may hand back str or bytes)."""
    return {as_bytes(k): as_bytes(v) for k, v in field_values.items()}


async def last_id(client: RedisClient, key: str) -> bytes:
    """The id of the newest entry of a stream (``0-0`` when it has none yet)."""
    newest = await client.xrevrange(key, count=1)
    return as_bytes(newest[0].identifier) if newest else b"0-0"


async def start_positions(client: RedisClient, keys: list[str]) -> dict[str | bytes, bytes]:
    backoff = Backoff(0.2, 5.0)
    while True:
        try:
            return {key.encode(): await last_id(client, key) for key in keys}
        except RedisFailure as exc:
            delay = backoff.failed()
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
            delay = backoff.failed()
            log.warning(
                "Redis stream read failed (%s); resuming in %.1f s from the last ids", exc, delay
            )
            await trio.sleep(delay)
            continue
        backoff.succeeded()
        # What one read brought is one delivery step: a connection gets its frames of all of
        # it (a block's head and logs, a slot's account updates) in one write.
        with corked():
            for key, entries in (reply or {}).items():
                for entry in entries:
                    identifier = as_bytes(entry.identifier)
                    positions[key] = identifier
                    fields = entry_fields(entry.field_values)
                    try:
                        on_entry(as_bytes(key), identifier.decode(), fields)
                    except Exception:
                        # One bad entry (or a bug in a subscriber) must not end the event path.
                        log.exception("dropping stream entry %s of %r", entry.identifier, key)


_STREAM_ID: Final = re.compile(r"\A([0-9]{1,20})-([0-9]{1,20})\Z")


async def stream_holds(client: RedisClient, key: str, position: str) -> bool:
    """Whether stream ``key`` still has the entry ``position``."""
    if _STREAM_ID.match(position) is None:
        return False
    return bool(await client.xrange(key, position, position, count=1))


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
            entries.append((as_bytes(entry.identifier).decode(), entry_fields(entry.field_values)))
        if len(batch) < READ_COUNT:
            break
        start = "(" + entries[-1][0]
    if entries and int(entries[0][0].split("-", 1)[0]) < (time.time() - window) * 1000:
        return None
    return entries
