"""The WebSocket followers of the webhooks bench, in a process of their own (so that reading
their notifications does not take the broker's core): ``python -m bench.webhook_followers URL N``
prints ``ready``, then, once stdin closes, the latencies of the heads they received (JSON: seconds
from the ``t`` a head carries, ``time.monotonic`` being one clock for every process)."""

from __future__ import annotations

import json
import sys
import time

import trio
import trio_websocket


async def _follow(url: str, latencies: list[float], ready: trio.Semaphore) -> None:
    async with trio_websocket.open_websocket_url(url) as ws:
        subscribe = {"jsonrpc": "2.0", "id": 1, "method": "eth_subscribe", "params": ["newHeads"]}
        await ws.send_message(json.dumps(subscribe))
        await ws.get_message()
        ready.release()
        while True:
            message = json.loads(await ws.get_message())
            sent = message["params"]["result"].get("t")
            if sent is not None:
                latencies.append(time.monotonic() - sent)


async def main(url: str, count: int) -> None:
    latencies: list[float] = []
    ready = trio.Semaphore(0)
    async with trio.open_nursery() as nursery:
        for _ in range(count):
            nursery.start_soon(_follow, url, latencies, ready)
        for _ in range(count):
            await ready.acquire()
        print("ready", flush=True)
        stdin = trio.lowlevel.FdStream(0)
        while await stdin.receive_some(64):
            pass
        nursery.cancel_scope.cancel()
    print(json.dumps(latencies), flush=True)


if __name__ == "__main__":
    trio.run(main, sys.argv[1], int(sys.argv[2]))
