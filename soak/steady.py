"""The soak: N session connections over both web processes for M minutes, a block every second, 50
connections a second closed (a clean close handshake) and resumed with their cursor, 200 HTTP
requests a second of mixed node queries, and the fuzzer (:mod:`soak.fuzz`) against the first web
process all along. RSS, fds, trio tasks and GC pauses of each web process are sampled every 10 s;
growth is measured over the last half (the median of the last three samples against the median of
the three around the middle); fd growth is that of the fds other than established client
connections, read in the same instant from /proc (the churn moves those; connections left closing,
Redis and upstream connections and files count). At the end every client's heads are judged against the upstream's
chain, as in the faults."""

from __future__ import annotations

import json
import random
import signal
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from bench.procs import ROOT
from soak.clients import Client, connect_all, judge
from soak.deploy import Deployment
from soak.http_load import QueryLoad
from soak.settings import Settings

if TYPE_CHECKING:
    from soak.cli import Results


class FuzzProcess:
    """The fuzzer (:mod:`soak.fuzz`) as a process of its own, its figures read from ``out``."""

    def __init__(self, port: int, inputs: int, out: Path) -> None:
        self.command = [
            sys.executable,
            "-m",
            "soak.fuzz",
            "--port",
            str(port),
            "--inputs",
            str(inputs),
            "--out",
            str(out),
        ]
        self.out = out

    def figures(self) -> dict[str, Any]:
        try:
            found: dict[str, Any] = json.loads(self.out.read_text())
        except (OSError, ValueError):
            return {"inputs": 0, "finished": False}
        return found

    @property
    def sent(self) -> int:
        return int(self.figures().get("inputs", 0))

    @property
    def finished(self) -> bool:
        return bool(self.figures().get("finished"))

    async def run(self) -> None:
        async def interrupt(process: trio.Process) -> None:
            process.send_signal(signal.SIGINT)  # it writes its last figures on the way out
            with trio.move_on_after(10):
                await process.wait()
            process.kill()

        with (self.out.parent / "fuzz.log").open("ab") as log:
            await trio.run_process(
                self.command,
                stdout=log,
                stderr=log,
                check=False,
                deliver_cancel=interrupt,
                cwd=ROOT,
            )


async def _churn(clients: list[Client], per_second: int) -> int:
    """Close ``per_second`` random connected clients every second (they resume); runs until
    cancelled, counting the closes in the returned list's length via ``churned``."""
    rng = random.Random(7)
    deadline = trio.current_time()
    while True:
        deadline += 1.0
        for client in rng.sample(clients, min(per_second, len(clients))):
            # only clients with a cursor: one churned before its first head could not resume
            if client.connected and client.conn and client.cursor and not client.churning:
                client.churning = True
                try:
                    await client.conn.send_text(b"\x03\xe8", opcode=0x8)  # close, 1000
                except OSError:
                    client.churning = False
        await trio.sleep_until(deadline)


def _growth(samples: list[dict[str, Any]], key: str) -> float | None:
    values: list[float] = [s[key] for s in samples if key in s]
    if len(values) < 4:
        return None
    middle = len(values) // 2
    at_middle = float(statistics.median(values[max(0, middle - 1) : middle + 2]))
    at_end = float(statistics.median(values[-3:]))
    return (
        round(at_end - at_middle, 1)
        if key != "rss_mib"
        else round((at_end / at_middle - 1) * 100, 2)
    )


def pool_bounds() -> dict[str, int]:
    """The most connections a web process may hold in each pool, by its configuration (the
    defaults, which the soak keeps): coredis's pool for Redis; for the upstream, the HTTP pool's
    ``max_connections`` and the WebSocket that follows its heads."""
    import coredis

    from adapters.upstream._options import Endpoint, UpstreamOptions

    redis_pool = coredis.Redis.from_url("redis://127.0.0.1").connection_pool.max_connections
    upstream = UpstreamOptions(upstreams=(Endpoint(http="http://127.0.0.1"),)).max_connections
    return {"redis": int(redis_pool), "upstream": upstream + 1}


def fd_growth(samples: list[dict[str, Any]], bounds: dict[str, int]) -> dict[str, Any]:
    """fd growth over the last half, judged: pooled connections (Redis, upstream) may vary within
    their configured bounds, so only what goes beyond a bound counts, plus any growth of the other
    fds (listeners, files, pipes, client connections left closing). Raw figures beside it."""
    with_kinds = [s for s in samples if "fd_kinds" in s]
    over = {
        pool: max(0, max((s["fd_kinds"][pool] for s in with_kinds), default=0) - bound)
        for pool, bound in bounds.items()
    }
    unpooled = _growth(samples, "fds_unpooled")
    pooled = {pool: _growth([s["fd_kinds"] for s in with_kinds], pool) for pool in bounds}
    return {
        "fd_growth": None if unpooled is None else max(0.0, unpooled) + sum(over.values()),
        "fd_growth_unpooled": unpooled,
        "fd_growth_pooled": pooled,
        "pooled_max": {
            pool: max((s["fd_kinds"][pool] for s in with_kinds), default=None) for pool in bounds
        },
        "pool_bounds": bounds,
        "fd_growth_less_clients": _growth(samples, "fds_less_clients"),
        "fd_growth_raw": _growth(samples, "fds"),
    }


async def run_soak(
    d: Deployment, s: Settings, log: Callable[[str], None], results: Results
) -> dict[str, Any]:
    clients = [Client(i, d.ports, origin_prefix="soak-") for i in range(s.soak_connections)]
    log(f"soak: connecting {len(clients)} session clients")
    connecting = time.monotonic()
    await connect_all(clients)
    log(f"  connected in {time.monotonic() - connecting:.1f} s")
    latest = await d.node.result("eth_getBlockByNumber", ["latest", True])
    head = int(latest["number"], 16)
    queries = QueryLoad(
        d.ports,
        s.http_per_second,
        head,
        [latest["hash"]],
        [tx["hash"] for tx in latest["transactions"]] or [latest["hash"]],
    )
    fuzzer = FuzzProcess(d.ports[0], s.fuzz_inputs, d.folder / "fuzz.json")
    samples: list[dict[str, Any]] = []
    seconds = s.soak_minutes * 60
    started = time.monotonic()
    async with trio.open_nursery() as nursery:
        for client in clients:
            nursery.start_soon(client.follow)
        nursery.start_soon(_churn, clients, s.churn_per_second)
        nursery.start_soon(queries.run)
        nursery.start_soon(fuzzer.run)
        # The soak goes on (up to half as long again) until the fuzzer has sent every input.
        while (elapsed := time.monotonic() - started) < seconds or (
            not fuzzer.finished and elapsed < seconds * 1.5
        ):
            for index, web in enumerate(d.webs):
                sample = await d.sample_with_connections(web)
                if sample is not None:
                    samples.append({"t": round(elapsed, 1), "web": index, **sample})
            log(
                f"  {elapsed:5.0f} s: "
                + "; ".join(
                    f"web {x['web']} {x['rss_mib']} MiB {x['fds']} fds {x.get('tasks')} tasks"
                    for x in samples[-len(d.webs) :]
                )
                + f"; http {queries.answered}/{queries.sent}; fuzz {fuzzer.sent}"
                + (" (done)" if fuzzer.finished else "")
            )
            await trio.sleep(s.sample_every)
        nursery.cancel_scope.cancel()
    ran = time.monotonic() - started
    # What each process will never free, counted once the load is over (a pause of its own).
    censuses = [await d.census(web) for web in d.webs]
    crashed = [i for i, web in enumerate(d.webs) if not web.running]
    top = max(h[1] for c in clients for h in c.heads[-1:])
    low = min(c.heads[0][1] for c in clients if c.heads)
    chain = await d.canonical(low, top)
    lost = duplicated = out_of_order = 0
    for client in clients:
        verdict = judge(client.heads, None, chain)
        lost += verdict.lost
        duplicated += verdict.duplicated
        out_of_order += verdict.out_of_order
    per_web: dict[str, dict[str, Any]] = {}
    bounds = pool_bounds()
    for index in range(len(d.webs)):
        mine = [x for x in samples if x["web"] == index]
        per_web[str(index)] = {
            "rss_growth_pct": _growth(mine, "rss_mib"),
            **fd_growth(mine, bounds),
            # Since the process serves: start-up's collections (before it listens) apart.
            "max_gc_pause_ms": max(
                (x.get("gc_max_pause_ms_serving", 0) for x in mine), default=None
            ),
            "max_gc_pause_cpu_ms": max(
                (x.get("gc_max_pause_cpu_ms_serving", 0) for x in mine), default=None
            ),
            "start_up_gc_pause_cpu_ms": max(
                (x.get("gc_max_pause_cpu_ms_start_up", 0) for x in mine), default=None
            ),
            "rss_mib_end": mine[-1]["rss_mib"] if mine else None,
            "kept_in_cycles": censuses[index],
            "tasks_end": mine[-1].get("tasks") if mine else None,
        }
    growths = [w["rss_growth_pct"] for w in per_web.values() if w["rss_growth_pct"] is not None]
    fd_growths = [w["fd_growth"] for w in per_web.values() if w["fd_growth"] is not None]
    # The soak's clients are the fuzzer's bystanders: only the churn may close them.
    unexpected = [e for c in clients for e in c.errors]
    results.part(
        "fuzz",
        {
            **fuzzer.figures(),
            "crashes": len(crashed),
            "bystanders_disconnected": sum(c.unexpected_closes for c in clients),
        },
    )
    return {
        "mode": "quick" if s.quick else "full",
        "connections": len(clients),
        "minutes": s.soak_minutes,
        "minutes_run": round(ran / 60, 2),
        "churn_per_second": s.churn_per_second,
        "http_per_second": s.http_per_second,
        "sample_every_s": s.sample_every,
        "rss_growth_pct": max(growths) if growths else None,
        "fd_growth": max(fd_growths) if fd_growths else None,
        "fd_growth_raw": max(
            (w["fd_growth_raw"] for w in per_web.values() if w["fd_growth_raw"] is not None),
            default=None,
        ),
        "max_gc_pause_ms": max(
            (w["max_gc_pause_ms"] for w in per_web.values() if w["max_gc_pause_ms"] is not None),
            default=None,
        ),
        "max_gc_pause_cpu_ms": max(
            (w["max_gc_pause_cpu_ms"] or 0 for w in per_web.values()), default=None
        ),
        "kept_in_cycles": max((c["objects"] for c in censuses if c is not None), default=None),
        "per_web": per_web,
        "crashed_webs": crashed,
        "heads_checked": len(clients),
        "lost": lost,
        "duplicated": duplicated,
        "out_of_order": out_of_order,
        "churned": sum(len(c.closes) for c in clients),
        "client_errors": len(unexpected),
        "client_error_kinds": sorted({e.split(":")[0] for e in unexpected}),
        "http_sent": queries.sent,
        # the harness is one trio process: on a busy machine it may send fewer than asked
        "http_per_second_achieved": round(queries.sent / ran, 1),
        "http_answered": queries.answered,
        "http_errors": len(queries.errors),
        "http_error_examples": queries.errors[:5],
        "samples": samples,
    }
