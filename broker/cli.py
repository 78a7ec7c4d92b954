"""The ``scopecast`` command: ``serve`` (the broker) and ``worker`` (event ingestion, with Redis)."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Final, NoReturn

import trio

from broker import compose
from broker.app import DEV_API_KEY, Broker
from broker.compose import (
    DEV_ADMIN_TOKEN,
    ServeOptions,
    open_broker,
)
from broker.config import PORT_RANGE, Config, ConfigError, env_list, load_config
from broker.operator.admin import AdminApi
from broker.operator.gc_keeper import serve_gc_keeper
from broker.operator.status_server import serve_status
from broker.redis import LeaseTiming

log = logging.getLogger("scopecast")

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


def _port(text: str) -> int:
    """A TCP port, 0..65535 (a larger one would be taken modulo 65536 by the socket layer)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid port {text!r}: want a number") from None
    if port not in PORT_RANGE:
        raise argparse.ArgumentTypeError(f"port {port} is outside the range 0..65535")
    return port


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
    serve.add_argument("--port", type=_port, help="port to bind (default 8545; 0 = any free port)")
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
        "--state-dir",
        type=Path,
        help="dev chain: keep its blocks and state in DIR; a restart continues the same chain",
    )
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
        type=_port,
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


def options_of_worker_args(args: argparse.Namespace) -> ServeOptions:
    """What ``scopecast worker``'s flags and environment add to the config file."""
    return ServeOptions(redis_url=args.redis_url or os.environ.get("REDIS_URL"))


def options_of_serve_args(args: argparse.Namespace) -> ServeOptions:
    """What ``scopecast serve``'s flags and environment add to the config file."""
    return ServeOptions(
        host=args.host,
        port=args.port,
        api_keys=[*args.api_key, *env_list("SCOPECAST_API_KEYS")],
        admin_token=args.admin_token or os.environ.get("SCOPECAST_ADMIN_TOKEN"),
        approval=args.approval,
        role=args.role,
        redis_url=args.redis_url or os.environ.get("REDIS_URL"),
        block_time=args.block_time,
        keystore=args.keystore,
        genesis=args.genesis,
        chain_file=args.chain_file,
        forkchoice=args.forkchoice,
        state_dir=args.state_dir,
    )


def build_broker(args: argparse.Namespace, config: Config) -> Broker:
    """The broker ``scopecast serve ARGS`` builds (see :func:`broker.compose.build_broker`)."""
    return compose.build_broker(config, options_of_serve_args(args))


def _print_endpoints(broker: Broker, host: str, *, operator: bool) -> None:
    shown = host if ":" not in host else f"[{host}]"
    base = f"{shown}:{broker.port}"
    key = DEV_API_KEY if broker.dev_mode else "<API_KEY>"
    print(f"scopecast listening on http://{base}", flush=True)
    for network in broker.networks:
        prefix = "" if network is broker.networks.default else f"/{network.name}"
        print(f"  network {network.name} ({network.chain})", flush=True)
        note = network.adapter.chain_note(network.chain)
        if note is not None:
            print(f"    note       {note}", flush=True)
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
    if mode == "manual" and broker.sessions is not None:
        timeout = broker.sessions.policy.timeout
        waiting = f"wait for the operator (rejected after {timeout:g} s: approval_timeout)"
    else:
        waiting = "are granted at once"
    print(f"  approval   {mode}: sessions and signatures {waiting}", flush=True)
    if broker.dev_mode:
        print(
            f"  dev API key: {DEV_API_KEY} (configure --api-key to serve beyond loopback)",
            flush=True,
        )


#: ``data.reason`` of the 4001 a parked approval gets when the server stops (README "Error codes").
SHUTTING_DOWN: Final = "server shutting down"


@dataclass
class _Stop:
    """The stop signals of ``scopecast serve``: the first drains, a second stops at once."""

    draining: trio.Event = field(default_factory=trio.Event)
    #: Set once the broker serves (before, there is nothing to drain).
    serving: bool = False
    #: The number of the signal that stopped it at once, if one did.
    forced: int | None = None

    async def watch(self, signals: AsyncIterator[int], now: trio.CancelScope) -> None:
        async for signum in signals:
            name = signal.Signals(signum).name
            if self.serving and not self.draining.is_set():
                log.info("received %s: stopping (%s again to stop at once)", name, name)
                self.draining.set()
                continue
            self.forced = signum
            # One line, on stderr as the operator's mistakes are: no traceback, no drain.
            when = "second " if self.serving else ""
            what = "without draining" if self.serving else "while starting"
            print(f"scopecast: {when}{name}: stopping now, {what}", file=sys.stderr)
            now.cancel()
            return


async def _serve(options: ServeOptions, config: Config) -> int:
    """Serve until SIGTERM or SIGINT; the exit status (128 + the number of a signal that stopped
    it at once: a second one, or one while starting)."""
    stop = _Stop()
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(stop.watch, signals, nursery.cancel_scope)
            async with open_broker(config, options) as broker:
                assert broker.host is not None
                _log_signing_accounts(broker)
                # Start-up's objects, then each quarter second's, out of the collector's sight.
                await nursery.start(serve_gc_keeper)
                operator = isinstance(broker.admin, AdminApi) and broker.admin.enabled
                _print_endpoints(broker, broker.host, operator=operator)
                stop.serving = True
                await stop.draining.wait()
                _answer_the_waiting(broker)
                # leaving the block drains the connections, then closes the adapters
            nursery.cancel_scope.cancel()  # the signal watcher
    return 0 if stop.forced is None else 128 + stop.forced


def _answer_the_waiting(broker: Broker) -> None:
    """Say what the stop waits for and for how long, and answer the parked approvals now (4001,
    ``data.reason`` "server shutting down"): their dapps would otherwise wait out the grace and
    get a dropped connection."""
    grace = broker.limits.shutdown_grace
    policy = broker.sessions.policy if broker.sessions is not None else None
    parked = policy.reject_all(SHUTTING_DOWN) if policy is not None else []
    now = trio.current_time()
    for pending in parked:
        what = pending.summary.get("method", pending.kind)
        log.warning(
            "answering approval %s (%s from %s, %s, parked %.0f s) with 4001: %s",
            pending.id,
            what,
            pending.identity.api_key,
            pending.identity.origin,
            now - pending.parked_at,
            SHUTTING_DOWN,
        )
    log.info(
        "waiting up to %g s ([server] shutdown_grace) for the calls under way to finish "
        "(%d WebSockets open, closed with 1012 and their cursor)",
        grace,
        len(broker.connections),
    )


async def _work(args: argparse.Namespace, config: Config) -> None:
    worker = compose.build_worker(
        config, options_of_worker_args(args), timing=LeaseTiming.for_ttl(args.lease_ttl)
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
            status = trio.run(_serve, options_of_serve_args(args), config)
            if status:
                raise SystemExit(status)
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
