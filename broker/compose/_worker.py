"""The ``scopecast worker`` role a config and options describe: the upstream networks' chain
adapters, the Redis the web processes read, a leader per chain (:class:`broker.worker.Worker`), and the
webhooks' leader."""

from __future__ import annotations

from broker.compose._networks import ServeOptions, build_network, redis_url, require_upstreams
from broker.compose._webhooks import redis_webhooks
from broker.config import Config, ConfigError, network_specs
from broker.redis import LeaseTiming
from broker.worker import DEFAULT_TIMING, Worker


def build_worker(
    config: Config, options: ServeOptions | None = None, *, timing: LeaseTiming = DEFAULT_TIMING
) -> Worker:
    """The worker of ``config``'s networks (upstream networks only: chain state never lives in a
    worker) on the Redis of ``options`` (or the config's), its leases timed by ``timing``."""
    specs, _default = network_specs(config)
    require_upstreams(specs, "worker")
    url = redis_url(options or ServeOptions(), config)
    if url is None:
        raise ConfigError("worker: needs --redis-url (or REDIS_URL)")
    worker = Worker(
        [build_network(spec) for spec in specs],
        url,
        maxlen=config.server.stream_maxlen,
        timing=timing,
        linger=config.server.resume_window,
    )
    # The worker competes for the webhooks' lease too (README "Webhooks").
    webhooks = redis_webhooks(worker.client, worker.networks, config.server, worker.activity)
    worker.services.append(webhooks.leader)
    return worker
