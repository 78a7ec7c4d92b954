"""The response cache in figures, measured as eRPC publishes its own: a realistic mix of dapp calls
(recent blocks, receipts, logs of recent ranges, balances at ``latest``) replayed through scopecast
in front of an upstream node, with and without the cache, counting the calls that reach the
upstream and checking that every answer is byte-identical.

The upstream is a dev chain (``bench.server devchain``, cache off) that does not move during the
replay; the front is ``scopecast serve`` with one upstream network.
"""

from __future__ import annotations

import http.client
import json
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from bench.procs import ChildError, free_port
from bench.workloads import HttpClient, Settings, build_log_chain, start_scopecast

CALLS: Final = 10_000
BATCH: Final = 50
MIX_METHODS: Final = (
    "eth_getBlockByNumber",
    "eth_getBlockByHash",
    "eth_getLogs",
    "eth_getBalance",
    "eth_blockNumber",
    "eth_chainId",
    "eth_getTransactionReceipt",
)
DEV_ACCOUNTS: Final = [
    "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266",
    "0x70997970c51812dc3a010c7d01b50e0d17dc79c8",
    "0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc",
]


def mix(
    rng: random.Random, head: int, hashes: list[str], receipts: list[str], count: int
) -> list[tuple[str, list[Any]]]:
    """Dapp traffic: mostly recent blocks, repeated; logs of recent ranges; balances at latest."""
    calls: list[tuple[str, list[Any]]] = []
    for _ in range(count):
        kind = rng.random()
        number = max(0, head - int(rng.expovariate(0.3)))
        if kind < 0.2:
            calls.append(("eth_getBlockByNumber", [hex(number), rng.random() < 0.3]))
        elif kind < 0.3:
            calls.append(("eth_getBlockByNumber", ["latest", False]))
        elif kind < 0.4:
            calls.append(("eth_getBlockByHash", [rng.choice(hashes), False]))
        elif kind < 0.5:
            calls.append(("eth_getTransactionReceipt", [rng.choice(receipts)]))
        elif kind < 0.65:
            start = max(0, number - rng.randrange(4))
            calls.append(("eth_getLogs", [{"fromBlock": hex(start), "toBlock": hex(number)}]))
        elif kind < 0.85:
            calls.append(("eth_getBalance", [rng.choice(DEV_ACCOUNTS), "latest"]))
        elif kind < 0.95:
            calls.append(("eth_blockNumber", []))
        else:
            calls.append(("eth_chainId", []))
    return calls


def _get(port: int, path: str) -> str:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("GET", path)
        return connection.getresponse().read().decode()
    finally:
        connection.close()


def upstream_calls(port: int) -> int:
    total = 0.0
    for line in _get(port, "/metrics").splitlines():
        for method in MIX_METHODS:
            if line.startswith(f'scopecast_requests_total{{method="{method}",'):
                total += float(line.rsplit(" ", 1)[1])
    return int(total)


def _batch(port: int, calls: list[tuple[str, list[Any]]]) -> list[bytes]:
    """The raw ``result`` bytes of each call, in order."""
    body = [
        {"jsonrpc": "2.0", "id": i, "method": method, "params": params}
        for i, (method, params) in enumerate(calls)
    ]
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        connection.request("POST", "/v3/k", json.dumps(body), {"Content-Type": "application/json"})
        replies = json.loads(connection.getresponse().read())
    finally:
        connection.close()
    ordered = sorted(replies, key=lambda r: r["id"])
    return [json.dumps(r.get("result", r.get("error")), sort_keys=True).encode() for r in ordered]


class Front:
    """``scopecast serve`` with one upstream network, on a free port."""

    def __init__(self, settings: Settings, upstream: int, cache_bytes: int) -> None:
        self.port = free_port()
        config = settings.run_dir / f"front-{cache_bytes}.toml"
        config.write_text(
            f"[server]\nresponse_cache_bytes = {cache_bytes}\n\n[networks.main]\n"
            'chain = "eip155:1337"\ndefault = true\n'
            f'upstreams = [{{ http = "http://127.0.0.1:{upstream}/v3/dev", '
            f'ws = "ws://127.0.0.1:{upstream}/ws/v3/dev" }}]\n'
        )
        scopecast = str(Path(sys.executable).with_name("scopecast"))
        log = (settings.run_dir / f"front-{cache_bytes}.log").open("ab")
        self.proc = subprocess.Popen(
            [
                scopecast,
                "serve",
                "--port",
                str(self.port),
                "--api-key",
                "k",
                "--config",
                str(config),
            ],
            stdout=subprocess.DEVNULL,
            stderr=log,
        )

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ChildError("the front scopecast exited")
            try:
                if '"ok"' in _get(self.port, "/healthz"):
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise ChildError("the front scopecast did not start")

    def wait_for_cache(self, timeout: float = 30) -> None:
        """Until the front has seen the upstream's head (before it, nothing is cached)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            _batch(self.port, [("eth_chainId", [])])
            if "scopecast_response_cache_hits_total 0.0" not in _get(self.port, "/metrics"):
                return
            time.sleep(0.2)
        raise ChildError("the front never cached an answer")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def run_replay(settings: Settings, log: Callable[[str], None]) -> dict[str, Any]:
    count = 2_000 if settings.quick else CALLS
    upstream = start_scopecast("devchain", cache=False)(settings, "replay-upstream")
    try:
        port = upstream.wait_ready()
        client = HttpClient(port)
        build_log_chain(client, 400, log, per_call=20)
        head = int(client.rpc("eth_blockNumber", []), 16)
        blocks = [client.rpc("eth_getBlockByNumber", [hex(n), False]) for n in range(head + 1)]
        hashes = [block["hash"] for block in blocks]
        receipts = [tx for block in blocks for tx in block["transactions"]]
        calls = mix(random.Random(5), head, hashes, receipts, count)
        systems: dict[str, Any] = {}
        answers: dict[str, list[bytes]] = {}
        for name, cache_bytes in (("without cache", 0), ("with cache", 64 * 1024 * 1024)):
            front = Front(settings, port, cache_bytes)
            try:
                front.wait_ready()
                if cache_bytes:
                    front.wait_for_cache()
                before = upstream_calls(port)
                started = time.perf_counter()
                got: list[bytes] = []
                for start in range(0, len(calls), BATCH):
                    got += _batch(front.port, calls[start : start + BATCH])
                seconds = time.perf_counter() - started
                systems[name] = {
                    "upstream_calls": upstream_calls(port) - before,
                    "seconds": round(seconds, 2),
                }
                answers[name] = got
            finally:
                front.stop()
            log(
                f"  replay {count:,} calls {name}: {systems[name]['upstream_calls']:,} upstream calls"
            )
    finally:
        upstream.stop()
    cached, plain = systems["with cache"], systems["without cache"]
    return {
        "calls": count,
        "systems": systems,
        "identical": answers["with cache"] == answers["without cache"],
        "reduction": round(1 - cached["upstream_calls"] / plain["upstream_calls"], 3),
    }
