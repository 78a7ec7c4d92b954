"""The scopecast server under test: a broker built exactly as ``scopecast serve`` builds it.

Run as ``python -m bench.server MODE [--port P] [--reply FILE] [--no-gc-freeze]``; it prints one JSON
line ``{"ready": port, "pid": ...}`` once listening, then answers JSON-line commands on stdin:

``{"cmd": "burst", "kind": "heads"|"logs"|"logs:B", "count": K}``
    the synthetic chain reports K blocks back to back; answers their publish times
    (``time.monotonic()``, comparable across processes on Linux).
``{"cmd": "mine", "count": K}``
    (devchain mode) ``evm_mine`` K times through the broker's dispatcher; answers the times each call
    started.
``{"cmd": "solana", "method": M, "params": P, "count": K}``
    (devchain mode) the Solana method M (``scopecast_advanceSlots`` to produce a slot,
    ``requestAirdrop`` to land a transfer in a slot of its own) K times through the broker's
    dispatcher on the ``solana`` network; answers the times each call started.
``{"cmd": "settle"}``
    a full garbage collection; answers connection and subscription counts.
``{"cmd": "stats"}``
    time spent in the garbage collector so far, per generation, and collections made.
``{"cmd": "gc_pauses"}``
    each collection since the last ``gc_pauses``: ``[generation, seconds]``.
``{"cmd": "trace", "per": n}``
    (with ``--tracemalloc``) the memory allocated since the previous ``trace``, by source line and
    divided by ``per``: what one connection costs, line by line.
``{"cmd": "getlogs", "filter": {...}, "repeat": n}``
    (devchain mode) times ``eth_getLogs`` called on the chain adapter in-process (no HTTP).
``{"cmd": "tester_getlogs", ...}``
    (devchain mode) times eth-tester's own ``get_logs`` over the same chain
    (:mod:`bench.peers.tester_logs`).

Modes: ``synthetic`` (the :class:`bench.synthetic.SyntheticChainAdapter`), ``constant`` (every call
answered with the bytes of ``--reply``), ``devchain`` (the embedded dev chain and the Solana
network beside it, as ``make run``).
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import logging
import os
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import msgspec
import trio

from bench import payloads
from bench.gcclock import GC_CLOCK
from bench.synthetic import (
    CONSTANT,
    SYNTHETIC,
    ConstantChainAdapter,
    SyntheticChainAdapter,
    register,
)
from broker.app import Broker
from broker.compose import ServeOptions, build_broker
from broker.config import Config, ServerConfig

try:
    from broker.rpc.dispatch import CallContext
except ImportError:  # a tree from before broker's packages (``bench --before``)
    from broker.dispatch import CallContext  # type: ignore[no-redef]

try:
    from broker.operator.gc_keeper import serve_gc_keeper
except ImportError:  # a tree from before the keeper (``bench --before``): start-up freeze only
    from broker.cli import freeze_startup_objects

    async def serve_gc_keeper(*, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        freeze_startup_objects()
        task_status.started()


def build(mode: str, port: int, *, response_cache: bool = True, resume: bool = True) -> Broker:
    """The broker of ``mode``, from ``scopecast serve`` arguments and a config."""
    options = ServeOptions(block_time=0)
    server = ServerConfig(
        response_cache_bytes=ServerConfig().response_cache_bytes if response_cache else 0,
        resume_window=ServerConfig().resume_window if resume else 0,
    )
    if mode == "devchain":
        return build_broker(Config(server=server), options)
    adapter = SYNTHETIC if mode == "synthetic" else CONSTANT
    config = Config(
        server=server,
        networks={"dev": {"chain": payloads.CHAIN, "adapter": adapter, "default": True}},
    )
    return build_broker(config, options)


def emit(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


async def _lines(stream: trio.abc.ReceiveStream) -> Any:
    pending = b""
    while True:
        data = await stream.receive_some(65536)
        if not data:
            return
        pending += data
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            if line.strip():
                yield json.loads(line)


async def _calls(
    broker: Broker, count: int, method: str, params: list[Any], network: str | None = None
) -> list[float]:
    """``method`` called ``count`` times through the broker's dispatcher on ``network`` (the
    default one when None), one after the other; the times each call started."""
    found = broker.networks.by_name(network) if network else broker.networks.default
    if found is None:
        raise RuntimeError(f"no network {network}")
    context = CallContext(found, "dev", "-")
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    started = []
    for _ in range(count):
        started.append(time.monotonic())
        reply = await broker.dispatcher.handle(body, context)
        if reply is None or b'"error"' in reply:
            raise RuntimeError(f"{method} failed: {reply!r}")
    return started


async def _time_get_logs(broker: Broker, query: dict[str, Any], repeat: int) -> dict[str, Any]:
    network = broker.networks.default
    params = msgspec.Raw(msgspec.json.encode([query]))
    timings = []
    count = 0
    for _ in range(repeat):
        started = time.perf_counter()
        result = await network.adapter.call(network.chain, "eth_getLogs", params)
        timings.append(time.perf_counter() - started)
        count = len(msgspec.json.decode(result)) if isinstance(result, msgspec.Raw) else len(result)
    return {"seconds": timings, "results": count}


def _time_tester(broker: Broker, command: dict[str, Any]) -> dict[str, Any]:
    from bench.peers.tester_logs import tester_over, timed_get_logs

    adapter = broker.networks.default.adapter
    tester = tester_over(adapter.chain.evm)  # type: ignore[attr-defined]
    timings = []
    count = 0
    for _ in range(command["repeat"]):
        seconds, count = timed_get_logs(
            tester,
            from_block=command["from_block"],
            to_block=command["to_block"],
            address=command["address"],
            topics=command["topics"],
        )
        timings.append(seconds)
    return {"seconds": timings, "results": count}


_snapshots: list[tracemalloc.Snapshot] = []


def _trace(per: int, top: int) -> dict[str, Any]:
    gc.collect()
    snapshot = tracemalloc.take_snapshot().filter_traces(
        [tracemalloc.Filter(False, tracemalloc.__file__)]
    )
    previous = _snapshots[-1] if _snapshots else None
    _snapshots[:] = [snapshot]
    if previous is None:
        return {"lines": [], "total_bytes": 0}
    stats = snapshot.compare_to(previous, "traceback")
    total = sum(stat.size_diff for stat in stats)
    lines = []
    for stat in stats[:top]:
        frames = [
            f"{frame.filename.split('site-packages/')[-1].replace(os.getcwd() + '/', '')}:"
            f"{frame.lineno}"
            for frame in stat.traceback
        ]
        lines.append(
            {
                "bytes_per": round(stat.size_diff / per, 1),
                "blocks_per": round(stat.count_diff / per, 2),
                "where": frames[-1],
                "stack": frames[-30:],
            }
        )
    return {"lines": lines, "total_bytes_per": round(total / per, 1)}


async def _control(broker: Broker) -> None:
    stdin = trio.lowlevel.FdStream(os.dup(sys.stdin.fileno()))
    async for command in _lines(stdin):
        name = command["cmd"]
        if name == "burst":
            adapter = SyntheticChainAdapter.latest
            assert adapter is not None, "burst needs the synthetic mode"
            emit({"published": await adapter.burst(command["kind"], command["count"])})
        elif name == "mine":
            emit({"published": await _calls(broker, command["count"], "evm_mine", [])})
        elif name == "solana":
            emit(
                {
                    "published": await _calls(
                        broker, command["count"], command["method"], command["params"], "solana"
                    )
                }
            )
        elif name == "settle":
            started = time.perf_counter()
            gc.collect()
            emit(
                {
                    "connections": len(broker.connections),
                    "subscriptions": broker.hub.count(),
                    "full_collection_ms": round((time.perf_counter() - started) * 1000, 1),
                    "tracked_objects": len(gc.get_objects()),
                    "frozen_objects": gc.get_freeze_count(),
                    # what the collector tracks, frozen or not
                    "gc_objects": len(gc.get_objects()) + gc.get_freeze_count(),
                }
            )
        elif name == "trace":
            emit(_trace(command.get("per", 1), command.get("top", 40)))
        elif name == "stats":
            emit({"gc_seconds": GC_CLOCK.seconds, "gc_collections": GC_CLOCK.collections})
        elif name == "garbage":
            # what only the cycle collector frees: its objects by type
            gc.set_debug(gc.DEBUG_SAVEALL)
            gc.collect()
            found = collections.Counter(type(o).__qualname__ for o in gc.garbage)
            gc.garbage.clear()
            gc.set_debug(0)
            emit(
                {"objects": sum(found.values()), "types": found.most_common(command.get("top", 25))}
            )
        elif name == "types":
            gc.collect()
            counted = collections.Counter(type(o).__qualname__ for o in gc.get_objects())
            emit(
                {
                    "tracked": sum(counted.values()),
                    "types": counted.most_common(command.get("top", 25)),
                }
            )
        elif name == "gc_pauses":
            emit({"pauses": GC_CLOCK.take_pauses()})
        elif name == "getlogs":
            emit(await _time_get_logs(broker, command["filter"], command["repeat"]))
        elif name == "tester_getlogs":
            emit(_time_tester(broker, command))
        elif name == "exit":
            break
        else:
            emit({"error": f"unknown command {name}"})
    broker.shutdown()


async def serve(mode: str, port: int, freeze: bool, response_cache: bool, resume: bool) -> None:
    broker = build(mode, port, response_cache=response_cache, resume=resume)
    async with trio.open_nursery() as nursery:
        bound = await nursery.start(broker.serve, "127.0.0.1", port)
        if freeze:
            await nursery.start(serve_gc_keeper)  # as `scopecast serve` does
        emit({"ready": bound, "pid": os.getpid()})
        await _control(broker)
        nursery.cancel_scope.deadline = trio.current_time() + 5


def main() -> None:
    cli = argparse.ArgumentParser(prog="python -m bench.server")
    cli.add_argument("mode", choices=["synthetic", "constant", "devchain"])
    cli.add_argument("--port", type=int, default=0)
    cli.add_argument("--reply", type=Path, help="constant mode: the result JSON to answer with")
    cli.add_argument(
        "--no-gc-freeze",
        dest="gc_freeze",
        action="store_false",
        help="skip the gc.freeze() that `scopecast serve` does once started and every second "
        "(broker/operator/gc_keeper.py; to measure it)",
    )
    cli.add_argument(
        "--no-response-cache",
        dest="response_cache",
        action="store_false",
        help="serve every call from the chain (to time the chain's own work, e.g. eth_getLogs)",
    )
    cli.add_argument(
        "--no-resume",
        dest="resume",
        action="store_false",
        help="resume_window = 0: notifications carry no cursor (to measure what cursors cost)",
    )
    cli.add_argument("--tracemalloc", type=int, default=0, help="trace allocations, N frames deep")
    args = cli.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    register()
    if args.tracemalloc:
        tracemalloc.start(args.tracemalloc)
    if args.reply is not None:
        ConstantChainAdapter.reply = args.reply.read_bytes()
    trio.run(serve, args.mode, args.port, args.gc_freeze, args.response_cache, args.resume)


if __name__ == "__main__":
    main()
