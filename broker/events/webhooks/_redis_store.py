"""Webhooks in Redis: every process's operator API writes and reads them, the one process that
holds the webhooks' lease delivers them (:mod:`broker.events.webhooks._leader`).

Keys (``<prefix>:webhooks:…``): ``defs`` (id → the definition's JSON), ``positions`` (id → the
cursor of the last event fully acknowledged: a new deliverer starts after it), ``replays`` (id →
a cursor an operator asked to replay from, taken by the deliverer), ``states`` (id → what the
deliverer last said of it: state, backlog, errors), ``lease``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from broker.events.webhooks._records import (
    SharedWebhookStore,
    WebhookRecord,
    record_decoder,
    record_encoder,
)
from broker.redis import DEFAULT_PREFIX, RedisClient, RedisEventBus

_states = msgspec.json.Decoder(dict[str, Any])


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class RedisWebhookStore(SharedWebhookStore):
    """Webhook definitions, positions, replay requests and states in Redis hashes."""

    def __init__(self, client: RedisClient, *, prefix: str = DEFAULT_PREFIX) -> None:
        self.client = client
        base = f"{prefix}:webhooks:"
        self.defs = base + "defs"
        self.positions = base + "positions"
        self.replays = base + "replays"
        self.states = base + "states"
        self.lease = base + "lease"

    async def load(self) -> list[tuple[WebhookRecord, str | None]]:
        defs = await self.client.hgetall(self.defs)
        positions = {
            _text(k): _text(v) for k, v in (await self.client.hgetall(self.positions)).items()
        }
        records = [record_decoder.decode(data) for data in defs.values()]
        return [(r, positions.get(r.id)) for r in sorted(records, key=lambda r: r.created)]

    async def save(self, record: WebhookRecord, position: str | None) -> None:
        if position is not None:
            await self.client.hset(self.positions, {record.id: position})
        await self.client.hset(self.defs, {record.id: record_encoder.encode(record)})

    async def delete(self, webhook_id: str) -> bool:
        gone = await self.client.hdel(self.defs, [webhook_id])
        for key in (self.positions, self.replays, self.states):
            await self.client.hdel(key, [webhook_id])
        return bool(gone)

    async def set_position(self, webhook_id: str, position: str) -> None:
        # Only for a webhook still defined: a delete must not be undone by a late flush.
        if await self.client.hexists(self.defs, webhook_id):
            await self.client.hset(self.positions, {webhook_id: position})

    async def request_replay(self, webhook_id: str, cursor: str) -> None:
        await self.client.hset(self.replays, {webhook_id: cursor})

    async def take_replays(self) -> dict[str, str]:
        found = await self.client.hgetall(self.replays)
        if found:
            await self.client.hdel(self.replays, list(found))
        return {_text(k): _text(v) for k, v in found.items()}

    async def write_states(self, states: dict[str, dict[str, Any]]) -> None:
        if states:
            await self.client.hset(
                self.states, {k: msgspec.json.encode(v) for k, v in states.items()}
            )

    async def read_states(self) -> dict[str, dict[str, Any]]:
        found = await self.client.hgetall(self.states)
        return {_text(k): _states.decode(v) for k, v in found.items()}


def newest_position(bus: RedisEventBus) -> Callable[[str], Awaitable[str]]:
    """The id of the newest entry of a chain's stream (``0-0`` before the first)."""

    async def newest(chain: str) -> str:
        found = await bus.client.xrevrange(bus.keys(chain).events, count=1)
        return _text(found[0].identifier) if found else "0-0"

    return newest
