"""Peer (a): a fan-out server written the obvious way with Python's ``websockets`` (asyncio).

Every connection that sends ``eth_subscribe`` gets a subscription id back and joins the subscriber
set; a burst is K notifications, each handed to ``websockets.broadcast()`` (which frames it per
connection and writes without awaiting, skipping connections whose buffers are full). The payload
bytes are the ones scopecast sends, read from the files :func:`bench.payloads.write_peer_files` wrote
(the Node peer reads the same files).

Control on stdin/stdout, as :mod:`bench.server`: ``burst``, ``settle``, ``exit``.
Run as ``python -m bench.peers.websockets_server --payloads DIR [--port P]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from websockets.asyncio.server import ServerConnection, broadcast, serve

from bench import payloads
from bench.gcclock import GC_CLOCK

subscribers: set[ServerConnection] = set()
messages: dict[str, list[bytes]] = {}
sent = 0


async def handler(connection: ServerConnection) -> None:
    try:
        async for message in connection:
            request = json.loads(message)
            if request.get("method") == "eth_subscribe":
                subscribers.add(connection)
                reply = {
                    "jsonrpc": "2.0",
                    "id": request.get("id"),
                    "result": payloads.PEER_SUBSCRIPTION,
                }
            else:
                reply = {"jsonrpc": "2.0", "id": request.get("id"), "result": None}
            await connection.send(json.dumps(reply))
    finally:
        subscribers.discard(connection)


def burst(kind: str, count: int) -> list[float]:
    global sent
    published = []
    for _ in range(count):
        message = messages[kind][sent % len(messages[kind])]
        sent += 1
        published.append(time.monotonic())
        broadcast(subscribers, message, text=True)  # already UTF-8 JSON: the documented fast path
    return published


def emit(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


async def control() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        if not line.strip():
            continue
        command = json.loads(line)
        if command["cmd"] == "burst":
            emit({"published": burst(command["kind"], command["count"])})
        elif command["cmd"] == "settle":
            started = time.perf_counter()
            gc.collect()
            emit(
                {
                    "connections": len(subscribers),
                    "subscriptions": len(subscribers),
                    "full_collection_ms": round((time.perf_counter() - started) * 1000, 1),
                    "tracked_objects": len(gc.get_objects()),
                }
            )
        elif command["cmd"] == "stats":
            emit({"gc_seconds": GC_CLOCK.seconds, "gc_collections": GC_CLOCK.collections})
        elif command["cmd"] == "exit":
            return
        else:
            emit({"error": f"unknown command {command['cmd']}"})


async def main(port: int) -> None:
    # Defaults otherwise (pings every 20 s, which the load generator answers).
    async with serve(handler, "127.0.0.1", port, compression=None, backlog=1024) as server:
        bound = next(iter(server.sockets)).getsockname()[1]
        emit({"ready": bound, "pid": os.getpid()})
        await control()


if __name__ == "__main__":
    cli = argparse.ArgumentParser()
    cli.add_argument("--port", type=int, default=0)
    cli.add_argument("--payloads", type=Path, required=True)
    args = cli.parse_args()
    messages.update(payloads.read_peer_files(args.payloads))
    asyncio.run(main(args.port))
