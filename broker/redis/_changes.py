"""Session changes on one stream that every web process follows."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Final

import coredis
import msgspec
import trio

from broker.events.bus import DEFAULT_RESUME_WINDOW, Position
from broker.events.session_changes import ChangeHandler, SessionChange, SessionChangeBus
from broker.redis._client import BLOCK_MS, DEFAULT_PREFIX, RedisClient
from broker.redis._streams import (
    as_bytes,
    follow_streams,
    read_stream_range,
    start_positions,
    stream_holds,
)

log = logging.getLogger(__name__)

DEFAULT_CHANGES_MAXLEN: Final = 10_000

_encode = msgspec.msgpack.Encoder().encode
_decode_change = msgspec.msgpack.Decoder(SessionChange).decode


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
        positions = await start_positions(self.client, [self.key])

        def deliver(key: bytes, entry_id: str, fields: Mapping[bytes, bytes]) -> None:
            handler(_decode_change(fields[b"e"]), entry_id)

        task_status.started(as_bytes(positions[self.key.encode()]).decode())
        await follow_streams(self.client, positions, deliver, block_ms=self.block_ms)

    async def holds(self, position: Position) -> bool:
        return await stream_holds(self.client, self.key, position)

    async def read_range(
        self, after: Position, upto: Position
    ) -> list[tuple[Position, SessionChange]] | None:
        entries = await read_stream_range(self.client, self.key, after, upto, self.window)
        if entries is None:
            return None
        return [(position, _decode_change(fields[b"e"])) for position, fields in entries]
