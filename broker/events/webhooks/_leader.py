"""Which process delivers the webhooks when they are shared through Redis: the one holding the
webhooks' lease (``SET NX PX``, as a chain's ingestion: :class:`broker.redis.ChainLease`). It runs a
:class:`~broker.events.webhooks._service.WebhookService` over the shared store for as long as it renews
the lease; any other process stands by and takes over within ``ttl + standby_poll`` seconds of
its death, starting each webhook after its stored position (so a ``kill -9`` loses nothing: what
was delivered after the last position written is delivered again, with the same delivery ids)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable

import trio

from broker.events.webhooks._records import SharedWebhookStore
from broker.events.webhooks._service import WebhookService
from broker.redis import ChainLease, LeaseTiming, RedisClient, RedisFailure, process_name

log = logging.getLogger(__name__)


class WebhookLeader:
    """Stands by for the webhooks' lease and delivers them while holding it (a broker or worker
    service: ``await leader(nursery)``)."""

    def __init__(
        self,
        client: RedisClient,
        store: SharedWebhookStore,
        new_service: Callable[[], WebhookService],
        *,
        lease_key: str,
        timing: LeaseTiming | None = None,
        sync_every: float = 0.5,
    ) -> None:
        """``new_service``: a fresh service for every term (it reads the store as it starts)."""
        self._store = store
        self._new_service = new_service
        self._timing = timing or LeaseTiming()
        self._sync_every = sync_every
        self.lease = ChainLease(client, lease_key, self._timing, process_name())
        #: Whether this process delivers the webhooks now.
        self.leading = False

    async def __call__(self, nursery: trio.Nursery) -> None:
        nursery.start_soon(self.serve)

    async def serve(self) -> None:
        """Deliver whenever the lease is ours, until cancelled (then give it up at once)."""
        try:
            await self._serve()
        finally:
            with trio.move_on_after(1.0) as scope:
                scope.shield = True
                with contextlib.suppress(*RedisFailure):
                    await self.lease.release()

    async def _serve(self) -> None:
        while True:
            self.lease.new_term()
            try:
                await self._wait_for_lease()
                log.info("webhooks: delivering here (%s)", self.lease.owner)
                self.leading = True
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._keep_lease, nursery.cancel_scope)
                    service = self._new_service()
                    await service.start(nursery)
                    nursery.start_soon(service.serve_sync, self._store, self._sync_every)
            except* RedisFailure as group:
                log.warning("webhooks: Redis failed (%s); standing by", group.exceptions[0])
                await trio.sleep(self._timing.standby_poll)
            finally:
                self.leading = False

    async def _wait_for_lease(self) -> None:
        while True:
            if await self.lease.acquire() is None:
                return
            await trio.sleep(self._timing.standby_poll)

    async def _keep_lease(self, leading: trio.CancelScope) -> None:
        while True:
            await trio.sleep(self._timing.renew_every)
            with trio.move_on_after(self._timing.renew_every):
                if await self.lease.renew():
                    continue
            log.warning("webhooks: the lease was lost; standing by")
            leading.cancel()
            return
