"""What is kept of a webhook (its definition and its position) and where: in memory, or in Redis
(:mod:`broker.events.webhooks._redis_store`) so that a new delivering process takes over where the last
one stopped."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Protocol

import msgspec


class WebhookRecord(msgspec.Struct, kw_only=True, frozen=True):
    """A webhook as created: where to POST, what it follows, its signing secret."""

    id: str
    url: str
    chain: str
    method: str
    params: Any
    allowPrivate: bool = False
    secret: str
    created: float = 0.0

    def describe(self) -> dict[str, Any]:
        """What the operator sees of the definition (never the secret)."""
        return {
            "id": self.id,
            "url": self.url,
            "chain": self.chain,
            "subscription": {"method": self.method, "params": self.params},
            "allowPrivate": self.allowPrivate,
        }


record_encoder = msgspec.json.Encoder()
record_decoder = msgspec.json.Decoder(WebhookRecord)


class WebhookStore(ABC):
    """Webhook definitions and each one's position (the cursor of the last event all of whose
    deliveries were acknowledged)."""

    @abstractmethod
    async def load(self) -> list[tuple[WebhookRecord, str | None]]:
        """Every webhook, with its position (None: none yet)."""

    @abstractmethod
    async def save(self, record: WebhookRecord, position: str | None) -> None:
        """Keep a new webhook, delivering after ``position``."""

    @abstractmethod
    async def delete(self, webhook_id: str) -> bool:
        """Forget a webhook; False when there was none."""

    @abstractmethod
    async def set_position(self, webhook_id: str, position: str) -> None:
        """Record a webhook's new position."""


class SharedWebhookStore(WebhookStore):
    """A store several processes share: the operator API of any of them asks for replays, the
    one that delivers takes them and tells every webhook's state."""

    @abstractmethod
    async def request_replay(self, webhook_id: str, cursor: str) -> None: ...

    @abstractmethod
    async def take_replays(self) -> dict[str, str]:
        """The replays asked for since the last call (each taken once)."""

    @abstractmethod
    async def write_states(self, states: dict[str, dict[str, Any]]) -> None: ...

    @abstractmethod
    async def read_states(self) -> dict[str, dict[str, Any]]: ...


class MemoryWebhookStore(WebhookStore):
    """Webhooks of one process, gone when it stops."""

    def __init__(self) -> None:
        self._records: dict[str, WebhookRecord] = {}
        self._positions: dict[str, str] = {}

    async def load(self) -> list[tuple[WebhookRecord, str | None]]:
        return [(r, self._positions.get(r.id)) for r in self._records.values()]

    async def save(self, record: WebhookRecord, position: str | None) -> None:
        self._records[record.id] = record
        if position is not None:
            self._positions[record.id] = position

    async def delete(self, webhook_id: str) -> bool:
        self._positions.pop(webhook_id, None)
        return self._records.pop(webhook_id, None) is not None

    async def set_position(self, webhook_id: str, position: str) -> None:
        if webhook_id in self._records:
            self._positions[webhook_id] = position


class WebhookOperations(Protocol):
    """What the operator API does with webhooks (``admin_*Webhook``)."""

    async def create(
        self, url: str, chain: str, method: str, params: Any, *, allow_private: bool
    ) -> dict[str, str]:
        """A new webhook: ``{"id", "secret"}``."""
        ...

    async def describe(self) -> list[dict[str, Any]]:
        """Every webhook and its delivery state."""
        ...

    async def delete(self, webhook_id: str) -> bool: ...

    async def replay(self, webhook_id: str, cursor: str) -> dict[str, Any]:
        """Deliver again every event after ``cursor``: ``{"replayed"}``."""
        ...
