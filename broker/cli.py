"""The ``scopecast`` command: ``serve`` (the broker) and ``worker`` (event ingestion, with Redis)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

import trio

from adapters.base import ChainAdapter, NetworkSpec
from adapters.registry import load
from broker.app import DEV_API_KEY, Broker, is_loopback
from broker.networks import Network, Networks

log = logging.getLogger("scopecast")

DEV_NETWORK = "dev"
DEV_CHAIN = "eip155:1337"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="scopecast", description=__doc__)
    parser.add_argument("--log-level", default=os.environ.get("SCOPECAST_LOG_LEVEL", "INFO"))
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="serve HTTP and WebSocket JSON-RPC")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument(
        "--port", type=int, default=8545, help="port to bind (default 8545; 0 = any)"
    )
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
        default=0.0,
        help="dev chain: mine a block with demo token transfers every S seconds (0: on demand)",
    )
    serve.add_argument("--genesis", type=Path, help="dev chain: start from this geth genesis file")
    serve.add_argument("--chain-file", type=Path, help="dev chain: import these RLP blocks")
    serve.add_argument("--forkchoice", type=Path, help="dev chain: forkchoice (head) JSON file")
    return parser


def _api_keys(cli_keys: Sequence[str]) -> list[str]:
    env = [k.strip() for k in os.environ.get("SCOPECAST_API_KEYS", "").split(",") if k.strip()]
    return [*cli_keys, *env]


def _dev_network(args: argparse.Namespace) -> NetworkSpec:
    options: dict[str, object] = {"block_time": args.block_time}
    chain = DEV_CHAIN
    if args.genesis is not None:
        genesis = json.loads(args.genesis.read_text())
        chain = f"eip155:{int(genesis['config']['chainId'])}"
        options["genesis"] = str(args.genesis)
        if args.chain_file is not None:
            options["chain_file"] = str(args.chain_file)
        if args.forkchoice is not None:
            options["forkchoice"] = str(args.forkchoice)
    return NetworkSpec(DEV_NETWORK, chain, "devchain", options)


def build_network(spec: NetworkSpec) -> Network:
    """Build the chain adapter a network spec names."""
    cls = load(spec.adapter)
    if not issubclass(cls, ChainAdapter):
        raise SystemExit(f"network {spec.name}: adapter {spec.adapter!r} is not a chain adapter")
    adapter = cls(spec)  # type: ignore[call-arg]
    return Network(spec.name, spec.chain, adapter)


def build_broker(args: argparse.Namespace) -> Broker:
    """The broker the command line describes."""
    networks = Networks([build_network(_dev_network(args))])
    return Broker(networks, api_keys=_api_keys(args.api_key))


def _print_endpoints(broker: Broker, host: str) -> None:
    shown = host if ":" not in host else f"[{host}]"
    base = f"{shown}:{broker.port}"
    keys = sorted(broker.api_keys)
    key = keys[0] if broker.dev_mode else "<API_KEY>"
    print(f"scopecast listening on http://{base}", flush=True)
    for network in broker.networks:
        prefix = "" if network is broker.networks.default else f"/{network.name}"
        print(f"  network {network.name} ({network.chain})", flush=True)
        print(f"    HTTP       POST http://{base}{prefix}/v3/{key}", flush=True)
        print(f"    WebSocket  ws://{base}{prefix}/ws/v3/{key}", flush=True)
    print(
        f"  health     GET http://{base}/healthz   metrics  GET http://{base}/metrics", flush=True
    )
    if broker.dev_mode:
        print(
            f"  dev API key: {DEV_API_KEY} (configure --api-key to serve beyond loopback)",
            flush=True,
        )


async def _serve(args: argparse.Namespace) -> None:
    broker = build_broker(args)
    if broker.dev_mode and not is_loopback(args.host):
        raise SystemExit(
            f"refusing to bind {args.host} with the dev API key: pass --api-key (or SCOPECAST_API_KEYS)"
        )
    async with trio.open_nursery() as nursery:
        await nursery.start(broker.serve, args.host, args.port)
        _print_endpoints(broker, args.host)
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for signum in signals:
                log.info("received %s: draining connections", signal.Signals(signum).name)
                broker.shutdown()
                break


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``scopecast`` command."""
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if args.command == "serve":
        trio.run(_serve, args)


if __name__ == "__main__":
    main()
