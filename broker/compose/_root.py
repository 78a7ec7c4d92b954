"""The whole broker a config and options describe: the engine, then the Redis backends, sessions and
approvals, access control, the operator API and console, each built from what it uses and wired
to the others here."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta

import trio

from adapters.base import NetworkSpec
from adapters.evm.chain_adapter import BlockSource
from broker.access import (
    REFRESH_METHOD,
    AccessControl,
    AccessMetrics,
    MemoryLimiter,
    RedisLimiter,
    key_policies,
)
from broker.app import Broker, Service
from broker.compose._engine import build_engine
from broker.compose._networks import (
    DEV_ADMIN_TOKEN,
    ServeOptions,
    build_accounts,
    build_network,
    redis_url,
    require_upstreams,
    specs_to_serve,
)
from broker.compose._webhooks import local_webhooks, redis_webhooks
from broker.config import Config, ConfigError, ServerConfig, network_specs, port_error
from broker.connections import ConnectionHook
from broker.engine import Engine
from broker.events.activity import ActivityDemand, RedisActivityDemand
from broker.events.resume import RedisResumeStore, ResumeKeeper
from broker.events.session_changes import MemoryChangeBus
from broker.events.webhooks import WebhookOperations
from broker.operator.admin import AdminApi
from broker.operator.console import OperatorConsole, OperatorFeed
from broker.redis import (
    EpochWatch,
    InterestSharing,
    RedisChangeBus,
    RedisClient,
    RedisEventBus,
    RedisInterests,
    RedisSessionStore,
    Repair,
    hold_redis,
    process_name,
    redis_client,
)
from broker.rpc.networks import Network, Networks
from broker.sessions.approvals import ApprovalPolicy
from broker.sessions.service import SessionService
from broker.sessions.signing import SigningGateway
from broker.sessions.wall_clock import SYSTEM_CLOCK, WallClock
from broker.transport.limits import Limits
from broker.transport.start_up import is_loopback
from broker.worker import ChainLeaders

# -- Redis (README "Several processes (Redis)") -----------------------------------------------------


@dataclass(frozen=True)
class _RedisBackends:
    url: str
    client: RedisClient
    bus: RedisEventBus
    store: RedisSessionStore
    changes: RedisChangeBus
    #: Resume records: a connection dropped here resumes on any web process.
    resume: RedisResumeStore
    #: Notices that Redis lost its data, and runs the repairs (README "Redis in production").
    epoch: EpochWatch

    @classmethod
    def for_url(cls, url: str, config: Config) -> _RedisBackends:
        client = redis_client(url)
        window = config.server.resume_window
        epoch = EpochWatch(client)
        return cls(
            url,
            client,
            RedisEventBus(client, maxlen=config.server.stream_maxlen, window=window),
            RedisSessionStore(client, epoch=epoch),
            RedisChangeBus(client, window=window),
            RedisResumeStore(client),
            epoch,
        )

    def repair_after_loss(
        self, sessions: SessionService, resume: ResumeKeeper | None, access: AccessControl | None
    ) -> Service:
        """Register what this process writes back when Redis lost its data; the service that
        watches for the loss."""
        self.epoch.on_loss("sessions", sessions.restore_after_loss)
        if resume is not None:
            self.epoch.on_loss("resume records", resume.restore_after_loss)
        limiter = access.limiter if access is not None else None
        if isinstance(limiter, RedisLimiter):

            async def restore_slots() -> Repair:
                return Repair({"connection slots": await limiter.restore_slots()})

            self.epoch.on_loss("connection slots", restore_slots)

        async def watch(nursery: trio.Nursery) -> None:
            await nursery.start(self.epoch.serve)

        return watch


# -- end of Redis -------------------------------------------------------------------------------


def _announcer(activity: RedisActivityDemand, networks: Networks) -> Service:
    """The service that tells the chains' ingestion, through Redis, which chains this process's
    activity subscriptions follow (README "Webhooks")."""
    chains = [n.chain for n in networks if isinstance(n.adapter, BlockSource)]

    async def start(nursery: trio.Nursery) -> None:
        nursery.start_soon(activity.serve_announcer, chains)

    return start


def _limits(server: ServerConfig) -> Limits:
    return Limits(
        http_body=server.max_body_bytes,
        http_body_timeout=server.body_timeout,
        http_write_timeout=server.write_timeout,
        ws_message=server.max_message_bytes,
        outbox=server.outbox_limit_bytes,
        max_inflight=server.max_inflight,
        ping_interval=server.ping_interval,
        shutdown_grace=server.shutdown_grace,
        response_cache=server.response_cache_bytes,
        resume_window=server.resume_window,
    )


def _access_control(
    config: Config, engine: Engine, redis: RedisClient | None, clock: WallClock
) -> AccessControl:
    """The ``[keys.*]`` rules and limits (README "Keys and limits"), counted in Redis if given."""
    policies = key_policies(config.keys)
    return AccessControl(
        policies,
        RedisLimiter(redis) if redis is not None else MemoryLimiter(),
        AccessMetrics(engine.metrics.registry, policies),
        when_down=config.server.limits_when_redis_down,
        token_grace=config.server.token_grace,
        clock=clock,
    )


def _serve_sessions(engine: Engine, sessions: SessionService) -> None:
    """Give the dispatcher the ``wallet_*`` methods and the signing gateway, the metrics the
    sessions gauge, and resume the session side of its replays (they use each other)."""
    for name, handler in sessions.methods().items():
        engine.dispatcher.register(name, handler)
    signing = SigningGateway(engine.networks, engine.dispatcher, sessions.policy)
    engine.dispatcher.add_fallback(signing.call, signing.methods)
    engine.metrics.sessions.set_function(sessions.watched)  # read at every scrape
    if engine.resume is not None:
        engine.resume.sessions = sessions


def _admin_token(options: ServeOptions, config: Config, policy: ApprovalPolicy) -> str | None:
    """The operator API's token: the options', the config's, or on loopback the dev token."""
    host = options.host or config.server.host
    token = options.admin_token or config.server.admin_token
    if token is None and is_loopback(host):
        token = DEV_ADMIN_TOKEN
    if token is None and policy.mode == "manual":
        raise ConfigError(
            f'approval = "manual" on {host} needs the operator API, or every session and '
            "signature waits until it times out: set [server] admin_token (or --admin-token, "
            "or SCOPECAST_ADMIN_TOKEN)"
        )
    return token  # None (off loopback): every operator request gets 401


def build_broker(
    config: Config,
    options: ServeOptions | None = None,
    *,
    clock: WallClock = SYSTEM_CLOCK,
    built: Sequence[Network] | None = None,
) -> Broker:
    """The broker ``config`` and ``options`` describe, every part built and wired here: networks
    and their adapters, the account adapter, the bus and stores (Redis or memory), sessions and
    approvals, access control, the operator API and console. ``clock``: the wall clock sessions,
    tokens and approvals go by (the system's). ``built``: networks whose chain adapters exist
    already, served instead of the config's (tests and benchmarks that run a fleet in one
    process, its web processes sharing one chain as a fleet shares its nodes)."""
    given = options or ServeOptions()
    server = config.server
    redis_at = redis_url(given, config)
    if given.role == "web" and redis_at is None:
        raise ConfigError("serve --role web: needs --redis-url (or REDIS_URL)")
    if built is None:
        specs, default = specs_to_serve(config, given)
        if given.role == "web":
            require_upstreams(network_specs(config)[0], "serve --role web")
        chain_networks = [build_network(spec) for spec in specs]
    else:
        specs = [NetworkSpec(n.name, n.chain, n.adapter.name, {}) for n in built]
        default, chain_networks = None, list(built)
    redis = _RedisBackends.for_url(redis_at, config) if redis_at else None
    accounts = build_accounts(config, specs, given.keystore)
    networks = Networks(
        chain_networks,
        default=default,
        accounts=[accounts] if accounts.chains() else [],
    )
    api_keys = [*given.api_keys] or server.api_keys
    api_keys = [*api_keys, *(name for name in config.keys if name not in api_keys)]
    process_id = uuid.uuid4().hex  # this process, in session changes and resume records
    changes = redis.changes if redis else MemoryChangeBus()
    window = server.resume_window
    # Which chains' blocks carry their transactions: with Redis, announced to the worker.
    announced = RedisActivityDemand(redis.client, process_name(), linger=window) if redis else None
    activity = announced or ActivityDemand(linger=window)
    engine = build_engine(
        networks,
        _limits(server),
        bus=redis.bus if redis else None,
        ingest=given.role == "all" and redis is None,
        resume_store=redis.resume if redis else None,
        process_id=process_id,
        changes=changes,
        operator_api=True,
        activity=activity,
    )
    policy = ApprovalPolicy(
        given.approval or server.approval, timeout=server.approval_timeout, clock=clock
    )
    sessions = SessionService(
        networks,
        engine.dispatcher,
        engine.hub,
        resume=engine.resume,
        store=redis.store if redis else None,
        changes=changes,
        policy=policy,
        max_expiry=timedelta(seconds=server.max_session_expiry),
        clock=clock,
        process_id=process_id,
    )
    _serve_sessions(engine, sessions)
    # In the order they run: a connection's session is tracked before anyone else hears of it.
    on_connect: list[ConnectionHook] = [sessions.track]
    on_disconnect: list[ConnectionHook] = [sessions.untrack]
    services: list[Service] = [sessions.start]
    resources: list[AbstractAsyncContextManager[object]] = []
    if redis is not None:
        resources.append(hold_redis(redis.client, redis.url))
        # What this process's subscriptions need a worker to read (Solana's watched accounts).
        sharing = InterestSharing(
            RedisInterests(redis.client),
            {network.chain: network.adapter for network in networks},
            f"{process_name()}/{process_id[:8]}",
            ttl=server.resume_window,
        )
        engine.hub.share_interest = sharing.include
        services.append(sharing.start)
        if given.role == "all":  # this process competes for the chains' leases like a worker
            services.append(
                ChainLeaders(list(networks), redis.bus, engine.metrics, activity=activity)
            )
    if announced is not None:
        services.append(_announcer(announced, networks))
    access = None
    if config.keys:
        access = _access_control(config, engine, redis.client if redis else None, clock)
        services.append(access.start)
        if access.uses_tokens:
            on_connect.append(access.watch)
            on_disconnect.append(access.unwatch)
            engine.dispatcher.register(REFRESH_METHOD, access.refresh_token)
    if redis is not None:
        services.append(redis.repair_after_loss(sessions, engine.resume, access))
    webhooks: WebhookOperations | None = None
    if redis is None:  # one process: it delivers them too
        local = local_webhooks(engine.bus, list(networks), server, activity)
        services.append(local.start)
        webhooks = local
    else:
        shared = redis_webhooks(redis.client, list(networks), server, activity)
        webhooks = shared.shared
        if given.role == "all":  # this process competes for their lease like a worker
            services.append(shared.leader)
    token = _admin_token(given, config, policy)
    admin = AdminApi(
        networks,
        engine.metrics,
        sessions,
        token,
        public_token=token == DEV_ADMIN_TOKEN,
        webhooks=webhooks,
    )
    feed = OperatorFeed(sessions)
    policy.watch(feed.on_approval)
    sessions.watch_changes(feed.on_session_change)
    on_connect.append(feed.on_connection)
    on_disconnect.append(feed.on_connection)
    shutdown = trio.Event()
    console = OperatorConsole(
        feed, admin, dev_token=admin.accepts(DEV_ADMIN_TOKEN), stopping=shutdown.wait
    )
    return Broker(
        engine,
        engine.connections(on_connect=on_connect, on_disconnect=on_disconnect),
        api_keys=api_keys,
        services=services,
        resources=resources,
        shutdown=shutdown,
        access=access,
        admin=admin,
        console=console,
        sessions=sessions,
    )


@asynccontextmanager
async def open_broker(
    config: Config,
    options: ServeOptions | None = None,
    *,
    host: str | None = None,
    port: int | None = None,
    clock: WallClock = SYSTEM_CLOCK,
    built: Sequence[Network] | None = None,
) -> AsyncIterator[Broker]:
    """The broker ``config`` and ``options`` describe (:func:`build_broker`), running: its
    adapters started, its services running and its port bound (``broker.host``,
    ``broker.port``) when the block begins. When the block ends it stops as for a deploy: it
    stops accepting, closes every WebSocket with 1012 "service restart" (resume contract
    included), gives connections ``[server] shutdown_grace`` seconds, then closes the adapters
    once each.

    ``host`` and ``port`` (0: any free port) override where it listens, else the options' and
    the config's; ``built`` as for :func:`build_broker`. A configuration mistake raises :class:`~schemas.errors.ConfigError` itself,
    not inside an exception group (a port that cannot be had, too: the adapters started are
    closed): the adapters start and the port is bound before the serving task does."""
    given = options or ServeOptions()
    host = host or given.host or config.server.host
    if port is None:
        port = given.port if given.port is not None else config.server.port
    mistake = port_error(port, "port")
    if mistake is not None:
        raise ConfigError(mistake)
    broker = build_broker(config, given, clock=clock, built=built)
    await broker.start_adapters()  # closes those it started when one fails
    try:
        listeners = await broker.listen(host, port)
    except BaseException:
        await broker.close_adapters()
        raise
    async with trio.open_nursery() as nursery:
        await nursery.start(broker.serve, host, port, listeners)
        try:
            yield broker
        finally:
            broker.shutdown()  # the nursery then waits for the drain
