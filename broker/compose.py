"""The composition root: a broker built from a config and what a command line adds, every part
built and wired in one place (:func:`build_broker`), and served as a managed resource
(:func:`open_broker`). ``scopecast serve``, the tests and the benchmarks all build through it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Literal

import trio

from adapters.base import AccountAdapter, ChainAdapter, NetworkSpec
from adapters.registry import AdapterNotFound, load
from broker.access import (
    REFRESH_METHOD,
    AccessControl,
    AccessMetrics,
    MemoryLimiter,
    RedisLimiter,
    key_policies,
)
from broker.admin import AdminApi
from broker.app import Broker
from broker.approvals import ApprovalPolicy
from broker.config import Config, ConfigError, network_specs
from broker.console import OperatorConsole
from broker.limits import Limits
from broker.networks import Network, Networks
from broker.redis import (
    RedisChangeBus,
    RedisClient,
    RedisEventBus,
    RedisSessionStore,
    hold_redis,
    redis_client,
)
from broker.resume import RedisResumeStore
from broker.session_service import SessionService
from broker.signing import SigningGateway
from broker.start_up import is_loopback
from broker.wall_clock import SYSTEM_CLOCK, WallClock
from broker.worker import ChainLeaders

DEV_NETWORK = "dev"
DEV_CHAIN = "eip155:1337"
SOLANA_NETWORK = "solana"
#: Adapters whose chain lives inside the process (never shared between processes).
EMBEDDED_ADAPTERS = frozenset({"devchain", "solana-dev"})
DEV_ADMIN_TOKEN = "dev"


@dataclass(frozen=True, kw_only=True)
class ServeOptions:
    """What a command line adds to a config file, or overrides in it (``scopecast serve``'s flags
    and environment, already read: this module reads no environment)."""

    host: str | None = None
    api_keys: Sequence[str] = ()
    admin_token: str | None = None
    approval: Literal["auto", "manual"] | None = None
    role: Literal["all", "web"] = "all"
    redis_url: str | None = None
    block_time: float | None = None
    keystore: Path | None = None
    genesis: Path | None = None
    chain_file: Path | None = None
    forkchoice: Path | None = None


def _chain_import_flags(options: ServeOptions) -> list[str]:
    """The dev chain import flags given (``--genesis``, ``--chain-file``, ``--forkchoice``)."""
    flags = (
        ("--genesis", options.genesis),
        ("--chain-file", options.chain_file),
        ("--forkchoice", options.forkchoice),
    )
    return [flag for flag, value in flags if value]


def _dev_network(given: ServeOptions) -> NetworkSpec:
    options: dict[str, object] = {"block_time": given.block_time or 0.0}
    chain = DEV_CHAIN
    flags = _chain_import_flags(given)
    if given.genesis is None and flags:  # said in flag terms; options would say it in TOML terms
        raise ConfigError(f"{', '.join(flags)}: only with --genesis")
    if given.genesis is not None:
        try:
            genesis = json.loads(given.genesis.read_text())
            chain = f"eip155:{int(genesis['config']['chainId'])}"
        except OSError as exc:
            raise ConfigError(f"--genesis {given.genesis}: {exc.strerror}") from None
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(
                f"--genesis {given.genesis}: not a geth genesis file ({exc})"
            ) from None
        options["genesis"] = str(given.genesis)
        if given.chain_file is not None:
            options["chain_file"] = str(given.chain_file)
        if given.forkchoice is not None:
            options["forkchoice"] = str(given.forkchoice)
    return NetworkSpec(DEV_NETWORK, chain, "devchain", options)


def _solana_network(given: ServeOptions) -> NetworkSpec:
    """The Solana dev network served beside the dev chain when no network is configured."""
    from adapters.solana import dev_chain_id

    options: dict[str, object] = {"block_time": given.block_time or 0.0}
    return NetworkSpec(SOLANA_NETWORK, dev_chain_id(options), "solana-dev", options)


def build_network(spec: NetworkSpec) -> Network:
    """Build the chain adapter a network spec names."""
    try:
        cls = load(spec.adapter)
    except AdapterNotFound as exc:
        raise ConfigError(f"network {spec.name}: {exc}") from None
    if not issubclass(cls, ChainAdapter):
        raise ConfigError(f"network {spec.name}: adapter {spec.adapter!r} is not a chain adapter")
    adapter = cls.from_spec(spec)
    direct = spec.adapter in EMBEDDED_ADAPTERS
    return Network(spec.name, spec.chain, adapter, direct_signing=direct)


#: The embedded dev chain has no SimpleAccountFactory and no bundler: nothing ever runs a user
#: operation's initCode there. So that smart-account addresses are still deterministic per owner, the
#: dev keyring computes them with this stand-in proxy creation code (one STOP opcode: deploys no code).
#: On a real network the factory answers getAddress, or the operator configures the real proxy code.
DEV_PROXY_CREATION_CODE = "0x00"


def _accounts(
    config: Config, specs: Sequence[NetworkSpec], keystore: Path | None
) -> AccountAdapter:
    """The account adapter ``[accounts]`` names (``adapter``, default the keyring)."""
    from adapters.keyring import DEV_MNEMONIC

    options = dict(config.accounts or {})
    name = options.pop("adapter", "keyring")
    chains = options.pop("chains", None)
    dev_chains = [s.chain for s in specs if s.adapter in EMBEDDED_ADAPTERS]
    if chains is None:
        chains = dev_chains
    if name == "keyring":
        if keystore is not None:
            options["keystore_dir"] = str(keystore)
        if not options.get("mnemonic") and not options.get("keystore_dir"):
            if not set(chains) <= set(dev_chains):
                raise ConfigError(
                    "[accounts]: the keyring needs a mnemonic or keystore_dir (or --keystore) for "
                    f"{', '.join(c for c in chains if c not in dev_chains)}; the public development "
                    "mnemonic serves only the embedded dev chain"
                )
            options["mnemonic"] = DEV_MNEMONIC
        if config.accounts is None:
            options["userop"] = {"proxy_creation_code": DEV_PROXY_CREATION_CODE}
    try:
        cls = load(name)
    except AdapterNotFound as exc:
        raise ConfigError(f"[accounts]: {exc}") from None
    if not issubclass(cls, AccountAdapter):
        raise ConfigError(f"[accounts]: adapter {name!r} is not an account adapter")
    try:
        return cls.from_options(chains, options)
    except ValueError as exc:
        raise ConfigError(f"[accounts]: {exc}") from None


# -- Redis (README "Several processes (Redis)") -----------------------------------------------------


def redis_url(options: ServeOptions, config: Config) -> str | None:
    """The Redis of a deployment: the options' (flag or ``REDIS_URL``), else the config's."""
    return options.redis_url or config.server.redis_url


def require_upstreams(specs: Sequence[NetworkSpec], what: str) -> None:
    # Chain state never lives in a web process or a worker: each would have a chain of its own.
    if not specs:
        raise ConfigError(
            f"{what}: configure upstream networks ([networks.*] upstreams) in --config"
        )
    for spec in specs:
        if spec.adapter in EMBEDDED_ADAPTERS:
            raise ConfigError(
                f"{what}: network {spec.name} is an embedded dev chain; with several processes "
                "every network is an upstream network (serve a dev chain with its own "
                "`scopecast serve` and list it in upstreams)"
            )


@dataclass(frozen=True)
class _RedisBackends:
    url: str
    client: RedisClient
    bus: RedisEventBus
    store: RedisSessionStore
    changes: RedisChangeBus

    @classmethod
    def for_url(cls, url: str, config: Config) -> _RedisBackends:
        client = redis_client(url)
        window = config.server.resume_window
        return cls(
            url,
            client,
            RedisEventBus(client, maxlen=config.server.stream_maxlen, window=window),
            RedisSessionStore(client),
            RedisChangeBus(client, window=window),
        )

    def attach(self, broker: Broker, *, ingest: bool) -> None:
        broker.add_resource(hold_redis(self.client, self.url))
        if broker.resume is not None:  # a connection dropped here resumes on any web process
            broker.resume.store = RedisResumeStore(self.client)
        if ingest:  # --role all: this process competes for the chains' leases like a worker
            broker.add_service(ChainLeaders(list(broker.networks), self.bus, broker.metrics))


# -- end of Redis -------------------------------------------------------------------------------


def _install_access(
    broker: Broker, config: Config, redis: RedisClient | None, clock: WallClock
) -> None:
    """The ``[keys.*]`` rules and limits (README "Keys and limits"), counted in Redis if given."""
    policies = key_policies(config.keys)
    limiter = RedisLimiter(redis) if redis is not None else MemoryLimiter()
    access = broker.access = AccessControl(
        policies,
        limiter,
        AccessMetrics(broker.metrics.registry, policies),
        when_down=config.server.limits_when_redis_down,
        token_grace=config.server.token_grace,
        clock=clock,
    )
    broker.add_service(access.serve)
    if access.uses_tokens:
        broker.on_connect(access.watch)
        broker.on_disconnect(access.unwatch)
        broker.dispatcher.register(REFRESH_METHOD, access.refresh_token)


def _install_sessions(broker: Broker, sessions: SessionService) -> None:
    """The ``wallet_*`` methods, the signing gateway, the connections' sessions and the replay of
    session changes on resume."""
    for name, handler in sessions.methods().items():
        broker.dispatcher.register(name, handler)
    signing = SigningGateway(broker.networks, broker.dispatcher, sessions.policy)
    broker.dispatcher.add_fallback(signing.call, signing.methods)
    broker.on_connect(sessions.track)
    broker.on_disconnect(sessions.untrack)
    broker.add_service(sessions.start)
    broker.metrics.sessions.set_function(sessions.watched)  # read at every scrape
    if broker.resume is not None:
        broker.resume.process_id = sessions.process_id
        broker.resume.changes = sessions.changes
        broker.resume.sessions = sessions


def build_broker(
    config: Config, options: ServeOptions | None = None, *, clock: WallClock = SYSTEM_CLOCK
) -> Broker:
    """The broker ``config`` and ``options`` describe, every part built and wired here: networks
    and their adapters, the account adapter, the bus and stores (Redis or memory), sessions and
    approvals, access control, the operator API and console. ``clock``: the wall clock sessions,
    tokens and approvals go by (the system's)."""
    given = options or ServeOptions()
    specs, default = network_specs(config)
    flags = _chain_import_flags(given)
    if specs and flags:
        # They describe the embedded dev chain, which the config's networks replace.
        raise ConfigError(
            f"{', '.join(flags)}: only for the embedded dev chain, and "
            "--config has [networks.*]; set genesis, chain_file and forkchoice in the devchain "
            "network's table instead"
        )
    if not specs:
        specs = [_dev_network(given), _solana_network(given)]
    elif given.block_time is not None:
        specs = [
            NetworkSpec(s.name, s.chain, s.adapter, {**s.options, "block_time": given.block_time})
            if s.adapter in EMBEDDED_ADAPTERS
            else s
            for s in specs
        ]
    server = config.server
    redis_at = redis_url(given, config)
    if given.role == "web":
        if redis_at is None:
            raise ConfigError("serve --role web: needs --redis-url (or REDIS_URL)")
        require_upstreams(network_specs(config)[0], "serve --role web")
    redis = _RedisBackends.for_url(redis_at, config) if redis_at else None
    accounts = _accounts(config, specs, given.keystore)
    networks = Networks(
        [build_network(spec) for spec in specs],
        default=default,
        accounts=[accounts] if accounts.chains() else [],
    )
    api_keys = [*given.api_keys] or server.api_keys
    api_keys = [*api_keys, *(name for name in config.keys if name not in api_keys)]
    limits = Limits(
        http_body=server.max_body_bytes,
        http_body_timeout=server.body_timeout,
        ws_message=server.max_message_bytes,
        outbox=server.outbox_limit_bytes,
        max_inflight=server.max_inflight,
        ping_interval=server.ping_interval,
        shutdown_grace=server.shutdown_grace,
        response_cache=server.response_cache_bytes,
        resume_window=server.resume_window,
    )
    broker = Broker(
        networks,
        api_keys=api_keys,
        limits=limits,
        bus=redis.bus if redis else None,
        ingest=given.role == "all" and redis is None,
    )
    policy = ApprovalPolicy(
        given.approval or server.approval, timeout=server.approval_timeout, clock=clock
    )
    sessions = broker.sessions = SessionService(
        broker.networks,
        broker.dispatcher,
        broker.hub,
        resume=broker.resume,
        store=redis.store if redis else None,
        changes=redis.changes if redis else None,
        policy=policy,
        max_expiry=timedelta(seconds=server.max_session_expiry),
        clock=clock,
    )
    _install_sessions(broker, sessions)
    if redis is not None:
        redis.attach(broker, ingest=given.role == "all")
    if config.keys:
        _install_access(broker, config, redis.client if redis else None, clock)
    host = given.host or server.host
    token = given.admin_token or server.admin_token
    if token is None and is_loopback(host):
        token = DEV_ADMIN_TOKEN
    if token is None and policy.mode == "manual":
        raise ConfigError(
            f'approval = "manual" on {host} needs the operator API, or every session and '
            "signature waits until it times out: set [server] admin_token (or --admin-token, "
            "or SCOPECAST_ADMIN_TOKEN)"
        )
    # No token (off loopback): every request gets 401.
    admin = broker.admin = AdminApi(broker.networks, broker.metrics, sessions, token)
    broker.console = OperatorConsole(
        broker, sessions, admin, dev_token=admin.accepts(DEV_ADMIN_TOKEN)
    )
    return broker


@asynccontextmanager
async def open_broker(
    config: Config,
    options: ServeOptions | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    clock: WallClock = SYSTEM_CLOCK,
) -> AsyncIterator[Broker]:
    """Build a broker, start its adapters and serve it on ``host``:``port`` (0: any free port,
    then ``broker.port``) until the block ends, then stop it gracefully."""
    broker = build_broker(config, options, clock=clock)
    await broker.start_adapters()
    async with trio.open_nursery() as nursery:
        await nursery.start(broker.serve, host, port)
        try:
            yield broker
        finally:
            broker.shutdown()
            nursery.cancel_scope.cancel()
