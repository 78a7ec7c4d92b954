"""The webhooks a config describes (README "Webhooks"): in one process, a service that delivers
them from memory; with Redis, the shared definitions every operator API uses and, where this
process may deliver (``serve --role all`` and the worker), the leader that delivers them."""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass

from adapters.base import SubscriptionFamily
from adapters.evm.chain_adapter import BlockSource
from adapters.evm.subscriptions import follows_activity
from broker.config import ServerConfig
from broker.events.activity import ActivityDemand
from broker.events.bus import EventBus
from broker.events.event_path import node_call
from broker.events.family_codecs import travelling_codec
from broker.events.webhooks import (
    MemoryWebhookStore,
    RedisWebhookStore,
    RetryPolicy,
    SharedWebhooks,
    WebhookLeader,
    WebhookService,
    WebhookSettings,
    newest_position,
)
from broker.redis import RedisClient, RedisEventBus
from broker.rpc.networks import Network


def webhook_settings(server: ServerConfig) -> WebhookSettings:
    """The webhooks' retries and bounds (``[server] webhook_*``)."""
    policy = RetryPolicy(
        initial=server.webhook_backoff_initial,
        longest=server.webhook_backoff_max,
        retry_for=server.webhook_retry_for,
        backlog=server.webhook_backlog,
    )
    return WebhookSettings(policy, timeout=server.webhook_timeout)


def _on_bus(networks: Sequence[Network]) -> dict[str, tuple[Network, SubscriptionFamily]]:
    """The chains whose events travel on the bus (an EVM adapter's blocks, or a family's own
    events with the family's codec), with their subscription family."""
    found = {}
    for network in networks:
        family = network.adapter.subscription_family(network.chain)
        if family is None:
            continue
        if isinstance(network.adapter, BlockSource) or travelling_codec(network) is not None:
            found[network.chain] = (network, family)
    return found


def _service(
    bus: EventBus,
    networks: Sequence[Network],
    store: MemoryWebhookStore | RedisWebhookStore,
    server: ServerConfig,
    activity: ActivityDemand,
) -> WebhookService:
    chains = _on_bus(networks)
    service = WebhookService(
        bus,
        {chain: family for chain, (_, family) in chains.items()},
        store,
        webhook_settings(server),
        calls={chain: node_call(network) for chain, (network, _) in chains.items()},
    )
    # Its activity webhooks count while it lives (a deliverer's service lasts one lease term).
    index = weakref.WeakMethod(service.index)

    def follows(chain: str) -> bool:
        found = index()
        return found is not None and follows_activity(found(chain))

    activity.follow(follows)
    return service


def local_webhooks(
    bus: EventBus, networks: Sequence[Network], server: ServerConfig, activity: ActivityDemand
) -> WebhookService:
    """One process's webhooks, in memory, delivered by it; their activity subscriptions
    counted in ``activity``."""
    return _service(bus, networks, MemoryWebhookStore(), server, activity)


@dataclass(frozen=True)
class RedisWebhooks:
    """Webhooks shared through Redis: the operator's side, and the leader that delivers."""

    shared: SharedWebhooks
    leader: WebhookLeader


def redis_webhooks(
    client: RedisClient,
    networks: Sequence[Network],
    server: ServerConfig,
    activity: ActivityDemand,
) -> RedisWebhooks:
    """The webhooks of ``networks`` in the Redis of ``client``. Their bus reads the chains'
    streams back as far as a delivery is retried (``webhook_retry_for``), within what the
    streams keep (``stream_maxlen``). The activity subscriptions of those delivered here count
    in ``activity``."""
    store = RedisWebhookStore(client)
    bus = RedisEventBus(client, maxlen=server.stream_maxlen, window=server.webhook_retry_for)
    for network in networks:
        codec = travelling_codec(network)
        if codec is not None:
            bus.carry(network.chain, codec)  # to read a family's own events back
    families = {chain: family for chain, (_, family) in _on_bus(networks).items()}
    shared = SharedWebhooks(store, families, bus, newest_position(bus))
    leader = WebhookLeader(
        client,
        store,
        lambda: _service(bus, networks, store, server, activity),
        lease_key=store.lease,
        sync_every=webhook_settings(server).flush_every,
    )
    return RedisWebhooks(shared, leader)
