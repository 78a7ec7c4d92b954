"""The ``scopecast`` command: ``serve`` (the broker) and ``worker`` (event ingestion, with Redis)."""

from __future__ import annotations

import argparse
import errno
import gc
import json
import logging
import os
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from importlib import metadata
from pathlib import Path
from typing import Final, NoReturn

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
from broker.app import DEV_API_KEY, Broker, is_loopback
from broker.approvals import ApprovalPolicy
from broker.config import Config, ConfigError, env_list, load_config, network_specs
from broker.console import OperatorConsole
from broker.limits import Limits
from broker.networks import Network, Networks
from broker.redis_bus import RedisChangeBus, RedisClient, RedisEventBus, hold_redis, redis_client
from broker.redis_store import RedisSessionStore
from broker.resume import RedisResumeStore
from broker.session_service import SessionService
from broker.status_server import serve_status
from broker.worker import ChainLeaders, LeaseTiming, Worker

log = logging.getLogger("scopecast")

DEV_NETWORK = "dev"
DEV_CHAIN = "eip155:1337"
SOLANA_NETWORK = "solana"
#: Adapters whose chain lives inside the process (never shared between processes).
EMBEDDED_ADAPTERS = frozenset({"devchain", "solana-dev"})
DEV_ADMIN_TOKEN = "dev"

SETTINGS_HELP = """\
settings that matter for a deployment:
  --api-key / SCOPECAST_API_KEYS      the keys dapps put in their URLs (required off loopback)
  --admin-token / SCOPECAST_ADMIN_TOKEN  bearer token of POST /admin (required off loopback)
  --approval manual                   park every session and signature for the operator
  --config FILE                       networks (upstream nodes), accounts, limits: see README
                                      "Limits" and "Upstream nodes (the `upstream` adapter)"
  --redis-url / REDIS_URL             share sessions and events between web processes
  --role web                          one of several web processes: events come from a
                                      `scopecast worker` through Redis; needs --redis-url and
                                      upstream networks ([networks.*] upstreams) in --config
  [server] resume_window              seconds a dropped WebSocket can resume with its cursor
                                      (default 300; 0: no cursors)
  [server] stream_maxlen              entries kept per chain stream in Redis (default 100000):
                                      how far behind a web process may fall and still catch up
see README "Several processes (Redis)" for running several processes.
"""

WORKER_HELP = """\
settings that matter for a worker (see README "Several processes (Redis)"):
  --redis-url / REDIS_URL   the Redis the web processes read (required)
  --config FILE             the web processes' file: every [networks.*] an upstream network
                            (upstreams = [{http = ..., ws = ...}])
  [server] stream_maxlen    entries kept per chain stream (approximate, default 100000): how far
                            a web process cut off from Redis can fall behind and still catch up
  --lease-ttl S             how long a dead worker's chains wait for the standby (default 3)
  --metrics-port P          GET /metrics (reorgs, skipped heights...) and GET /healthz (which
                            chains this worker leads) for a scraper or a health check
run one worker and a second one as a standby: it takes each chain over within about
--lease-ttl seconds of the first one's death, resuming at the last published head.
"""


def _version() -> str:
    try:
        return metadata.version("scopecast")
    except metadata.PackageNotFoundError:
        return "unknown"


def _env_config() -> Path | None:
    value = os.environ.get("SCOPECAST_CONFIG")
    return Path(value) if value else None


LOG_LEVELS: Final = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class _Parser(argparse.ArgumentParser):
    """argparse, with a mistake reported on one line (and exit status 2, as argparse's)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _log_level(text: str) -> str:
    level = text.upper()
    if level not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(
            f"invalid log level {text!r}: choose from {', '.join(LOG_LEVELS).lower()}"
        )
    return level


def _add_log_level(parser: argparse.ArgumentParser, default: str | None) -> None:
    parser.add_argument(
        "--log-level",
        type=_log_level,
        default=default if default is not None else argparse.SUPPRESS,
        help=f"{', '.join(LOG_LEVELS).lower()} (default: info; also $SCOPECAST_LOG_LEVEL)",
    )


def parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="scopecast",
        description="A broker for CAIP-25 dapp sessions, chain notifications and node queries.",
        epilog=SETTINGS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_log_level(parser, os.environ.get("SCOPECAST_LOG_LEVEL", "INFO"))
    parser.add_argument("--version", action="version", version=f"scopecast {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    serve = commands.add_parser(
        "serve",
        help="serve HTTP and WebSocket JSON-RPC",
        epilog=SETTINGS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_log_level(serve, None)  # before or after the command, as the user types it
    serve.add_argument(
        "--config",
        type=Path,
        default=_env_config(),
        help="TOML settings file (flags override it; default: $SCOPECAST_CONFIG)",
    )
    serve.add_argument("--host", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port to bind (default 8545; 0 = any free port)")
    serve.add_argument(
        "--api-key",
        action="append",
        default=[],
        help="accepted API key (repeatable; also SCOPECAST_API_KEYS, comma-separated); "
        f"none configured: the key {DEV_API_KEY!r}, loopback only",
    )
    serve.add_argument(
        "--block-time",
        type=float,
        help="dev chains: mine a block with demo token transfers (Solana: a slot with demo SOL "
        "transfers) every S seconds (0: on demand, each transaction at once)",
    )
    serve.add_argument("--genesis", type=Path, help="dev chain: start from this geth genesis file")
    serve.add_argument("--chain-file", type=Path, help="dev chain: import these RLP-encoded blocks")
    serve.add_argument("--forkchoice", type=Path, help="dev chain: forkchoice JSON naming the head")
    serve.add_argument(
        "--approval", choices=["auto", "manual"], help="who approves sessions and signatures"
    )
    serve.add_argument("--admin-token", help="bearer token of the operator API (POST /admin)")
    serve.add_argument(
        "--keystore",
        type=Path,
        help="keyring: sign with the encrypted JSON keystores in DIR, unlocked with the passphrase "
        "in $SCOPECAST_KEYSTORE_PASSPHRASE ([accounts] passphrase_env names another variable)",
    )
    serve.add_argument("--redis-url", help="Redis for sessions and events shared between processes")
    serve.add_argument(
        "--role",
        choices=["all", "web"],
        default="all",
        help="all: also ingest chain events (one process); web: events come from a worker via Redis",
    )

    worker = commands.add_parser(
        "worker",
        help="ingest chain events once per chain and publish them to Redis for the web processes",
        epilog=WORKER_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_log_level(worker, None)
    worker.add_argument(
        "--config",
        type=Path,
        default=_env_config(),
        help="TOML settings file: its upstream networks (default: $SCOPECAST_CONFIG)",
    )
    worker.add_argument("--redis-url", help="Redis shared with the web processes (or REDIS_URL)")
    worker.add_argument(
        "--metrics-port",
        type=int,
        help="serve GET /metrics and GET /healthz on this port (default: none; 0 = any free port)",
    )
    worker.add_argument(
        "--metrics-host",
        default="127.0.0.1",
        help="address of the status endpoint (default %(default)s; 0.0.0.0 for a remote scraper)",
    )
    worker.add_argument(
        "--lease-ttl",
        type=float,
        default=LeaseTiming().ttl,
        help="seconds a chain's lease outlives a dead worker (default %(default)s)",
    )
    return parser


def _chain_import_flags(args: argparse.Namespace) -> list[str]:
    """The dev chain import flags given (``--genesis``, ``--chain-file``, ``--forkchoice``)."""
    flags = (
        ("--genesis", args.genesis),
        ("--chain-file", args.chain_file),
        ("--forkchoice", args.forkchoice),
    )
    return [flag for flag, value in flags if value]


def _dev_network(args: argparse.Namespace) -> NetworkSpec:
    options: dict[str, object] = {"block_time": args.block_time or 0.0}
    chain = DEV_CHAIN
    given = _chain_import_flags(args)
    if args.genesis is None and given:  # said in flag terms; the options would say it in TOML terms
        raise ConfigError(f"{', '.join(given)}: only with --genesis")
    if args.genesis is not None:
        try:
            genesis = json.loads(args.genesis.read_text())
            chain = f"eip155:{int(genesis['config']['chainId'])}"
        except OSError as exc:
            raise ConfigError(f"--genesis {args.genesis}: {exc.strerror}") from None
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(
                f"--genesis {args.genesis}: not a geth genesis file ({exc})"
            ) from None
        options["genesis"] = str(args.genesis)
        if args.chain_file is not None:
            options["chain_file"] = str(args.chain_file)
        if args.forkchoice is not None:
            options["forkchoice"] = str(args.forkchoice)
    return NetworkSpec(DEV_NETWORK, chain, "devchain", options)


def _solana_network(args: argparse.Namespace) -> NetworkSpec:
    """The Solana dev network served beside the dev chain when no network is configured."""
    from adapters.solana import dev_chain_id

    options: dict[str, object] = {"block_time": args.block_time or 0.0}
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


def _redis_url(args: argparse.Namespace, config: Config) -> str | None:
    url: str | None = args.redis_url or os.environ.get("REDIS_URL") or config.server.redis_url
    return url


def _require_upstreams(specs: Sequence[NetworkSpec], what: str) -> None:
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


def _install_access(broker: Broker, config: Config, redis: RedisClient | None) -> None:
    """The ``[keys.*]`` rules and limits (README "Keys and limits"), counted in Redis if given."""
    policies = key_policies(config.keys)
    limiter = RedisLimiter(redis) if redis is not None else MemoryLimiter()
    access = broker.access = AccessControl(
        policies,
        limiter,
        AccessMetrics(broker.metrics.registry, policies),
        when_down=config.server.limits_when_redis_down,
        token_grace=config.server.token_grace,
    )
    broker.add_service(access.serve)
    if access.uses_tokens:
        broker.on_connect(access.watch)
        broker.on_disconnect(access.unwatch)
        broker.dispatcher.register(REFRESH_METHOD, access.refresh_token)


def build_broker(args: argparse.Namespace, config: Config) -> Broker:
    """The broker the command line and the config file describe."""
    specs, default = network_specs(config)
    given = _chain_import_flags(args)
    if specs and given:
        # They describe the embedded dev chain, which the config's networks replace.
        raise ConfigError(
            f"{', '.join(given)}: only for the embedded dev chain, and "
            "--config has [networks.*]; set genesis, chain_file and forkchoice in the devchain "
            "network's table instead"
        )
    if not specs:
        specs = [_dev_network(args), _solana_network(args)]
    elif args.block_time is not None:
        specs = [
            NetworkSpec(s.name, s.chain, s.adapter, {**s.options, "block_time": args.block_time})
            if s.adapter in EMBEDDED_ADAPTERS
            else s
            for s in specs
        ]
    server = config.server
    redis_url = _redis_url(args, config)
    if args.role == "web":
        if redis_url is None:
            raise ConfigError("serve --role web: needs --redis-url (or REDIS_URL)")
        _require_upstreams(network_specs(config)[0], "serve --role web")
    redis = _RedisBackends.for_url(redis_url, config) if redis_url else None
    accounts = _accounts(config, specs, args.keystore)
    networks = Networks(
        [build_network(spec) for spec in specs],
        default=default,
        accounts=[accounts] if accounts.chains() else [],
    )
    api_keys = [*args.api_key, *env_list("SCOPECAST_API_KEYS")] or server.api_keys
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
        ingest=args.role == "all" and redis is None,
    )
    policy = ApprovalPolicy(args.approval or server.approval, timeout=server.approval_timeout)
    sessions = broker.sessions = SessionService(
        broker,
        store=redis.store if redis else None,
        changes=redis.changes if redis else None,
        policy=policy,
        max_expiry=timedelta(seconds=server.max_session_expiry),
    )
    if redis is not None:
        redis.attach(broker, ingest=args.role == "all")
    if config.keys:
        _install_access(broker, config, redis.client if redis else None)
    host = args.host or server.host
    token = args.admin_token or os.environ.get("SCOPECAST_ADMIN_TOKEN") or server.admin_token
    if token is None and is_loopback(host):
        token = DEV_ADMIN_TOKEN
    if token is None and policy.mode == "manual":
        raise ConfigError(
            f'approval = "manual" on {host} needs the operator API, or every session and '
            "signature waits until it times out: set [server] admin_token (or --admin-token, "
            "or SCOPECAST_ADMIN_TOKEN)"
        )
    admin = AdminApi(broker, sessions, token)  # no token (off loopback): every request gets 401
    broker.console = OperatorConsole(
        broker, sessions, admin, dev_token=admin.accepts(DEV_ADMIN_TOKEN)
    )
    return broker


def _print_endpoints(broker: Broker, host: str, *, operator: bool) -> None:
    shown = host if ":" not in host else f"[{host}]"
    base = f"{shown}:{broker.port}"
    key = DEV_API_KEY if broker.dev_mode else "<API_KEY>"
    print(f"scopecast listening on http://{base}", flush=True)
    for network in broker.networks:
        prefix = "" if network is broker.networks.default else f"/{network.name}"
        print(f"  network {network.name} ({network.chain})", flush=True)
        print(f"    HTTP       POST http://{base}{prefix}/v3/{key}", flush=True)
        print(f"    WebSocket  ws://{base}{prefix}/ws/v3/{key}", flush=True)
    print(
        f"  health     GET http://{base}/healthz   metrics  GET http://{base}/metrics", flush=True
    )
    mode = broker.sessions.policy.mode if broker.sessions is not None else "auto"
    if operator:
        admin = broker.admin
        dev = isinstance(admin, AdminApi) and admin.accepts(DEV_ADMIN_TOKEN)
        note = "; the dev token, for loopback only" if dev else ""
        token = DEV_ADMIN_TOKEN if dev else "<token>"
        print(
            f"  operator   POST http://{base}/admin (Authorization: Bearer {token}{note})",
            flush=True,
        )
        print(f"  console    GET http://{base}/console (sign in with the admin token)", flush=True)
    else:
        print("  operator   disabled: set --admin-token to enable POST /admin", flush=True)
    waiting = "the operator answers each" if mode == "manual" else "granted at once"
    print(f"  approval   {mode}: sessions and signatures are {waiting}", flush=True)
    if broker.dev_mode:
        print(
            f"  dev API key: {DEV_API_KEY} (configure --api-key to serve beyond loopback)",
            flush=True,
        )


async def _serve(args: argparse.Namespace, config: Config) -> None:
    broker = build_broker(args, config)
    host = args.host or config.server.host
    port = args.port if args.port is not None else config.server.port
    # Started here, outside the server's nursery, so that a configuration error (an upstream on the
    # wrong chain, a bad keystore passphrase) reaches the user as one clear line.
    await broker.start_adapters()
    async with trio.open_nursery() as nursery:
        try:
            await nursery.start(broker.serve, host, port)
        except* OSError as group:
            raise ConfigError(_bind_error(group, host, port)) from None
        _log_signing_accounts(broker)
        freeze_startup_objects()
        operator = isinstance(broker.admin, AdminApi) and broker.admin.enabled
        _print_endpoints(broker, host, operator=operator)
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for signum in signals:
                log.info("received %s: draining connections", signal.Signals(signum).name)
                broker.shutdown()
                break


async def _work(args: argparse.Namespace, config: Config) -> None:
    specs, _default = network_specs(config)
    _require_upstreams(specs, "worker")
    redis_url = _redis_url(args, config)
    if redis_url is None:
        raise ConfigError("worker: needs --redis-url (or REDIS_URL)")
    worker = Worker(
        [build_network(spec) for spec in specs],
        redis_url,
        maxlen=config.server.stream_maxlen,
        timing=LeaseTiming.for_ttl(args.lease_ttl),
    )
    await worker.start_adapters()  # as in _serve: a configuration error is one clear line
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:
            if args.metrics_port is not None:
                port = await nursery.start(
                    serve_status,
                    worker.metrics,
                    worker.health,
                    args.metrics_host,
                    args.metrics_port,
                )
                log.info(
                    "worker status on http://%s:%d (/metrics, /healthz)", args.metrics_host, port
                )
            nursery.start_soon(worker.serve)
            async for signum in signals:
                # The leases held are released, so a standby takes over at once.
                log.info("received %s: releasing the chains", signal.Signals(signum).name)
                worker.shutdown()
                nursery.cancel_scope.deadline = trio.current_time() + 5
                break


def _log_signing_accounts(broker: Broker) -> None:
    """Say, per network, whether sessions there can sign (a deployment on upstream networks
    holds no keys unless [accounts] gives some: its sessions then offer no signing methods)."""
    for network in broker.networks:
        holder = broker.networks.accounts_for(network.chain)
        count = len(holder.accounts(network.chain)) if holder is not None else 0
        if count:
            log.info("network %s (%s): %d signing accounts", network.name, network.chain, count)
        else:
            log.info(
                "network %s (%s): no signing accounts, so sessions there offer no signing "
                "methods (configure [accounts] to sign)",
                network.name,
                network.chain,
            )


def _bind_error(group: BaseExceptionGroup[OSError], host: str, port: int) -> str:
    """One line for a port that cannot be had (in use, not permitted, no such address)."""
    exc: BaseException = group
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    assert isinstance(exc, OSError)
    if exc.errno == errno.EADDRINUSE:
        return f"cannot listen on {host}:{port}: the address is in use; choose another --port"
    return f"cannot listen on {host}:{port}: {(exc.strerror or str(exc)).lower()}"


def freeze_startup_objects() -> None:
    """Move what start-up built (modules, a chain, keys: it lives as long as the process) out of
    the garbage collector's sight, so that full collections scan only what connections add."""
    gc.collect()
    gc.freeze()


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``scopecast`` command."""
    args = parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    # httpx logs every request's full URL at INFO, and upstream URLs carry provider API keys.
    logging.getLogger("httpx").setLevel(max(logging.WARNING, logging.getLogger().level))
    # coredis reports each reconnect at INFO; the bus logs what matters (lost and resumed streams).
    logging.getLogger("coredis").setLevel(max(logging.WARNING, logging.getLogger().level))
    try:
        config = load_config(getattr(args, "config", None))
        if args.command == "serve":
            trio.run(_serve, args, config)
        elif args.command == "worker":
            trio.run(_work, args, config)
    except* ConfigError as group:
        _mistake(str(group.exceptions[0]))


def _mistake(message: str) -> NoReturn:
    """An operator's mistake: one line on stderr, exit status 2, no traceback."""
    print(f"scopecast: {message}", file=sys.stderr)
    raise SystemExit(2)


if __name__ == "__main__":
    main()
