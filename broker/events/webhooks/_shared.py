"""The operator's side of webhooks when several processes share them through Redis: any
process's operator API defines, lists, deletes and asks for replays in the shared store; the
process holding the webhooks' lease delivers (:mod:`broker.events.webhooks._leader`) and takes the
changes up within a sync interval."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from adapters.base import SubscriptionFamily
from broker.events.bus import EventBus
from broker.events.webhooks._records import SharedWebhookStore
from broker.events.webhooks._service import MAX_WEBHOOKS, define_webhook, matching_count
from schemas.errors import InvalidParams

ChainPosition = Callable[[str], Awaitable[str | None]]
"""The position of the newest event on a chain's log."""


class SharedWebhooks:
    """Webhooks defined in a shared store (:class:`~broker.events.webhooks._redis_store.RedisWebhookStore`)."""

    def __init__(
        self,
        store: SharedWebhookStore,
        families: Mapping[str, SubscriptionFamily],
        bus: EventBus,
        newest: ChainPosition,
    ) -> None:
        self._store = store
        self._families = dict(families)
        self._bus = bus
        self._newest = newest

    async def create(
        self, url: str, chain: str, method: str, params: Any, *, allow_private: bool
    ) -> dict[str, str]:
        if len(await self._store.load()) >= MAX_WEBHOOKS:
            raise InvalidParams(f"at most {MAX_WEBHOOKS} webhooks")
        record = define_webhook(url, chain, method, params, allow_private, self._families)
        await self._store.save(record, await self._newest(chain))
        return {"id": record.id, "secret": record.secret}

    async def describe(self) -> list[dict[str, Any]]:
        states = await self._store.read_states()
        described = []
        for record, position in await self._store.load():
            state = states.get(record.id, {})
            described.append(
                {
                    **record.describe(),
                    "state": state.get("state", "active"),
                    "position": position,
                    "backlog": state.get("backlog", 0),
                    "delivered": state.get("delivered", 0),
                    "lastError": state.get("lastError"),
                    "failedDeliveries": state.get("failedDeliveries", []),
                }
            )
        return described

    async def delete(self, webhook_id: str) -> bool:
        if not await self._store.delete(webhook_id):
            raise InvalidParams(f"invalid params: no webhook {webhook_id!r}")
        return True

    async def replay(self, webhook_id: str, cursor: str) -> dict[str, Any]:
        found = [r for r, _ in await self._store.load() if r.id == webhook_id]
        if not found:
            raise InvalidParams(f"invalid params: no webhook {webhook_id!r}")
        record = found[0]
        upto = await self._newest(record.chain)
        events = (
            []
            if upto is None or upto == cursor
            else await self._bus.read_range(record.chain, cursor, upto)
        )
        if events is None:
            raise InvalidParams(
                f"invalid params: cursor {cursor!r} is not on {record.chain}'s event log "
                "any more (or never was)"
            )
        await self._store.request_replay(webhook_id, cursor)
        return {"replayed": matching_count(self._families[record.chain], record, events)}
