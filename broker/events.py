"""Chain events as the fan-out consumes them: a new canonical head, or a block's logs
(``removed`` when a reorganisation orphaned the block). They travel through the bus (in memory,
or a Redis Stream per chain), so they are plain msgspec-encodable values."""

from __future__ import annotations

from dataclasses import dataclass

from adapters.base import ChainBlock


@dataclass(frozen=True, slots=True)
class HeadEvent:
    chain: str
    block: ChainBlock


@dataclass(frozen=True, slots=True)
class LogsEvent:
    chain: str
    block: ChainBlock
    removed: bool


ChainEvent = HeadEvent | LogsEvent
