"""From results.json to docs/benchmarks/README.md, the PNG plots, and the targets' verdicts."""

from __future__ import annotations

import collections
import re
from pathlib import Path
from typing import Any

from bench.burst import burst_section
from bench.churn import churn_section
from bench.webhooks import webhooks_section

NODE = "node-ws"
FORMS = ("scopecast-session", "scopecast-direct")
KIND_TITLES = {"heads": "newHeads", "logs": "logs"}


def _cpu(figures: dict[str, Any]) -> str:
    cpu = figures.get("cpu_us")
    return "?" if cpu is None else f"{cpu} µs"


def _at(figures: list[dict[str, Any]], size: int) -> dict[str, Any] | None:
    return next((f for f in figures if f.get("subscribers") == size), None)


def _largest(results: dict[str, Any]) -> int:
    sizes = [
        f["subscribers"]
        for kind in results.get("fanout", {}).values()
        for system in kind.values()
        for f in system["sizes"]
    ]
    return max(sizes) if sizes else 0


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Each target of issue 9 with what was measured and whether it is met."""
    verdicts: list[dict[str, Any]] = []
    size = _largest(results)
    for kind, systems in results.get("fanout", {}).items():
        node = _at(systems.get(NODE, {}).get("sizes", []), size)
        for form in FORMS:
            ours = _at(systems.get(form, {}).get("sizes", []), size)
            if node is None or ours is None:
                continue
            if ours["notifications_per_s"] and node["notifications_per_s"]:
                ratio = ours["notifications_per_s"] / node["notifications_per_s"]
                cpu_ratio = (ours["notifications_per_server_cpu_s"] or 0) / (
                    node["notifications_per_server_cpu_s"] or 1
                )
                verdicts.append(
                    {
                        "target": f"fan-out {KIND_TITLES[kind]}, {form}, {size}: >= 1.0x Node ws",
                        "measured": f"{ratio:.2f}x ({ours['notifications_per_s']:,} vs "
                        f"{node['notifications_per_s']:,}/s; per server CPU-second {cpu_ratio:.2f}x)",
                        "ratio": round(ratio, 3),
                        "met": ratio >= 1.0,
                    }
                )
            if ours["p99_ms"] is not None and node["p99_ms"] is not None:
                verdicts.append(
                    {
                        "target": f"p99 {KIND_TITLES[kind]}, {form}, {size}: <= Node ws",
                        "measured": f"{ours['p99_ms']} ms vs {node['p99_ms']} ms",
                        "ratio": round(ours["p99_ms"] / node["p99_ms"], 3),
                        "met": ours["p99_ms"] <= node["p99_ms"],
                    }
                )
    memory = results.get("memory", {}).get("scopecast-dapp")
    if memory:
        last = memory["sizes"][-1]
        verdicts.append(
            {
                "target": f"memory per idle dapp connection (own Origin, session, subscription) "
                f"at {last['connections']}: <= 9 KiB",
                "measured": f"{last['kib_per_connection']} KiB",
                "met": last["kib_per_connection"] <= 9.0,
            }
        )
    churn = results.get("churn", {}).get("systems", {}).get("scopecast")
    if churn:
        longest = max(churn["ramp"]["max_cpu_ms"], churn["churn"]["max_cpu_ms"])
        verdicts.append(
            {
                "target": f"longest GC pause, {results['churn']['connections']:,} dapp connections "
                "under churn: < 20 ms (CPU)",
                "measured": f"{longest} ms CPU ({churn['churn']['max_ms']} ms wall under churn)",
                "met": longest < 20.0,
            }
        )
    wrk = results.get("http_wrk", {}).get("calls", {})
    for name in ("eth_getBlockByNumber latest", "eth_chainId"):
        if name in wrk and "node" in wrk[name]:
            ours, node = wrk[name]["scopecast"], wrk[name]["node"]
            ratio = ours["req_per_s"] / node["req_per_s"]
            verdicts.append(
                {
                    "target": f"HTTP {name}: >= 0.8x Node http's req/s",
                    "measured": f"{ratio:.2f}x ({ours['req_per_s']:,} vs {node['req_per_s']:,}; "
                    f"server CPU per request {_cpu(ours)} vs {_cpu(node)})",
                    "ratio": round(ratio, 3),
                    "met": ratio >= 0.8,
                }
            )
            verdicts.append(
                {
                    "target": f"HTTP {name}: p99 <= 1.5x Node http's",
                    "measured": f"{ours['p99_ms']} vs {node['p99_ms']} ms",
                    "met": ours["p99_ms"] <= 1.5 * node["p99_ms"],
                }
            )
    replay = results.get("replay")
    if replay:
        plain = replay["systems"]["without cache"]["upstream_calls"]
        cached = replay["systems"]["with cache"]["upstream_calls"]
        verdicts.append(
            {
                "target": "response cache: upstream calls of a replayed mix cut by at least half, "
                "every answer byte-identical",
                "measured": f"{plain:,} -> {cached:,} upstream calls for {replay['calls']:,} "
                f"({replay['reduction']:.0%} fewer), identical: {replay['identical']}",
                "met": cached * 2 <= plain and replay["identical"],
            }
        )
    constant = results.get("http_wrk", {}).get("constant")
    # The Node peer measured in turns with the ceiling (older runs: the call's own peer).
    reference = results.get("http_wrk", {}).get("constant_node") or wrk.get(
        "eth_getBlockByNumber latest", {}
    ).get("node")
    if constant and reference:
        ratio = constant["req_per_s"] / reference["req_per_s"]
        verdicts.append(
            {
                "target": "HTTP constant-reply ceiling: >= 1.0x Node http",
                "measured": f"{ratio:.2f}x ({constant['req_per_s']:,} vs "
                f"{reference['req_per_s']:,} req/s; server CPU per request {_cpu(constant)} vs "
                f"{_cpu(reference)})",
                "ratio": round(ratio, 3),
                "met": ratio >= 1.0,
            }
        )
    getlogs = results.get("getlogs")
    if getlogs:
        ours = getlogs["scopecast_http"]
        verdicts.append(
            {
                "target": f"eth_getLogs returning {ours['results']:,} logs: < 200 ms",
                "measured": f"{ours['median_ms']} ms over HTTP "
                f"({getlogs['scopecast_in_process']['median_ms']} ms in the adapter)",
                "met": ours["median_ms"] < 200 and ours["results"] == 10_000,
            }
        )
        versus = getlogs["versus_eth_tester"]
        same_ms = versus["scopecast_http"]["median_ms"]
        tester = versus["eth_tester"]
        verdicts.append(
            {
                "target": "eth_getLogs faster than eth-tester's get_logs (same query, same chain)",
                "measured": f"{same_ms} ms vs {tester['median_ms']:,} ms, "
                f"{tester['results']:,} results",
                "ratio": round(same_ms / tester["median_ms"], 5),
                "met": same_ms < tester["median_ms"]
                and tester["results"] == versus["scopecast_http"]["results"],
            }
        )
    return verdicts


# -- profiles -----------------------------------------------------------------------------------------

_FRAME = re.compile(r"^(?P<function>.*?) \((?P<file>[^:()]*)(?::\d+)?\)$")


def _function(frame: str) -> str:
    match = _FRAME.match(frame)
    if not match:
        return frame
    path = match["file"]
    for marker in ("site-packages/", "/work/main/", "lib/python3"):
        if marker in path:
            path = path.split(marker, 1)[1]
    return f"{match['function']} ({path})"


def summarise_profiles(source: Path, top: int = 25) -> dict[str, Any]:
    """Self and inclusive time per function of each py-spy raw profile in ``source``."""
    summaries: dict[str, Any] = {}
    if not source.is_dir():
        return summaries
    for path in sorted(source.glob("*.txt")):
        own: collections.Counter[str] = collections.Counter()
        inclusive: collections.Counter[str] = collections.Counter()
        total = 0
        for line in path.read_text(errors="replace").splitlines():
            stack, _, count_text = line.rpartition(" ")
            if not stack or not count_text.isdigit():
                continue
            count = int(count_text)
            total += count
            frames = [_function(f) for f in stack.split(";")]
            own[frames[-1]] += count
            for name in set(frames):
                inclusive[name] += count
        if not total:
            continue
        summaries[path.stem] = {
            "samples": total,
            "self": [[name, round(n / total * 100, 1)] for name, n in own.most_common(top)],
            "inclusive": [
                [name, round(n / total * 100, 1)] for name, n in inclusive.most_common(top + 15)
            ],
        }
    return summaries


# -- plots --------------------------------------------------------------------------------------------


def _plots(results: dict[str, Any], out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written: list[str] = []
    for kind, systems in results.get("fanout", {}).items():
        if not systems:
            continue
        figure, (rate_axis, latency_axis) = plt.subplots(1, 2, figsize=(12, 4.5))
        for key, system in systems.items():
            sizes = [f for f in system["sizes"] if f["notifications_per_s"]]
            xs = [f["subscribers"] for f in sizes]
            style = "-o" if key.startswith("scopecast") else "--s"
            rate_axis.plot(
                xs, [f["notifications_per_s"] for f in sizes], style, label=system["label"]
            )
            latency_axis.plot(xs, [f["p99_ms"] for f in sizes], style, label=system["label"])
        rate_axis.set(
            title=f"{KIND_TITLES[kind]} fan-out throughput",
            xlabel="subscribers",
            ylabel="notifications / s",
        )
        latency_axis.set(
            title=f"{KIND_TITLES[kind]}: p99 publish → last subscriber",
            xlabel="subscribers",
            ylabel="ms",
        )
        for axis in (rate_axis, latency_axis):
            axis.grid(True, alpha=0.3)
            axis.set_ylim(bottom=0)
        rate_axis.legend(fontsize=8)
        figure.tight_layout()
        name = f"fanout-{kind}.png"
        figure.savefig(out / name, dpi=110)
        plt.close(figure)
        written.append(name)
    memory = results.get("memory", {})
    if memory:
        figure, axis = plt.subplots(figsize=(7, 4.5))
        for key, system in memory.items():
            style = "-o" if key.startswith("scopecast") else "--s"
            axis.plot(
                [m["connections"] for m in system["sizes"]],
                [m["kib_per_connection"] for m in system["sizes"]],
                style,
                label=system["label"],
            )
        axis.axhline(9, color="grey", linestyle=":", label="target: 9 KiB (dapp connection)")
        axis.set(
            title="Memory per idle connection", xlabel="connections", ylabel="KiB per connection"
        )
        axis.set_ylim(bottom=0)
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=8)
        figure.tight_layout()
        figure.savefig(out / "memory.png", dpi=110)
        plt.close(figure)
        written.append("memory.png")
    wrk = results.get("http_wrk", {}).get("calls", {})
    if wrk:
        figure, axis = plt.subplots(figsize=(8, 4.5))
        names = list(wrk)
        rows = range(len(names))
        ours = [wrk[n]["scopecast"]["req_per_s"] for n in names]
        node = [wrk[n].get("node", {}).get("req_per_s", 0) for n in names]
        axis.barh([r + 0.2 for r in rows], ours, height=0.4, label="scopecast", color="#4878a8")
        axis.barh(
            [r - 0.2 for r in rows],
            node,
            height=0.4,
            label="Node http (constant bytes)",
            color="#bbbbbb",
        )
        axis.set_yticks(list(rows), names)
        axis.invert_yaxis()
        axis.set(
            title=f"HTTP JSON-RPC under wrk, {results['http_wrk']['clients']} connections",
            xlabel="requests / s",
        )
        axis.grid(True, axis="x", alpha=0.3)
        axis.legend(fontsize=8)
        figure.tight_layout()
        figure.savefig(out / "http.png", dpi=110)
        plt.close(figure)
        written.append("http.png")
    getlogs = results.get("getlogs")
    if getlogs:
        figure, axis = plt.subplots(figsize=(7, 4))
        bars = {
            "scopecast, HTTP": getlogs["scopecast_http"]["median_ms"],
            "scopecast, in the adapter": getlogs["scopecast_in_process"]["median_ms"],
        }
        versus = getlogs["versus_eth_tester"]
        if versus["query"]["toBlock"] == "latest":
            bars["eth-tester get_logs"] = versus["eth_tester"]["median_ms"]
        else:
            upto = int(versus["query"]["toBlock"], 16)
            count = versus["eth_tester"]["results"]
            bars[f"scopecast, HTTP, blocks 0-{upto} ({count:,})"] = versus["scopecast_http"][
                "median_ms"
            ]
            bars[f"eth-tester, blocks 0-{upto} ({count:,})"] = versus["eth_tester"]["median_ms"]
        axis.barh(list(bars), list(bars.values()), color="#4878a8")
        axis.set_xscale("log")
        axis.set(
            title="eth_getLogs on 100,000 logs: 10,000 results unless said (log scale)",
            xlabel="ms",
        )
        axis.grid(True, axis="x", alpha=0.3)
        figure.tight_layout()
        figure.savefig(out / "getlogs.png", dpi=110)
        plt.close(figure)
        written.append("getlogs.png")
    return written


# -- README -------------------------------------------------------------------------------------------


def _fmt(value: Any, digits: int = 0) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and digits:
        return f"{value:,.{digits}f}"
    if isinstance(value, int | float):
        return f"{value:,.0f}"
    return str(value)


def _fanout_table(systems: dict[str, Any]) -> list[str]:
    """One row per system and subscriber count."""
    lines = [
        "| system | subscribers | notifications/s | per server CPU-s | p50 ms | p99 ms | "
        "server CPU | load gen CPU |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for system in systems.values():
        for f in system["sizes"]:
            lines.append(
                f"| {system['label']} | {f['subscribers']:,} | {_fmt(f['notifications_per_s'])} "
                f"| {_fmt(f['notifications_per_server_cpu_s'])} | {_fmt(f['p50_ms'], 1)} "
                f"| {_fmt(f['p99_ms'], 1)} | {_fmt(f['server_cpu_share'], 2)} "
                f"| {_fmt(f['loadgen_cpu_share'], 2)} |"
            )
    return lines


def _solana_section(solana: dict[str, Any] | None) -> list[str]:
    """Slot and account notifications on the Solana network (bench.solana)."""
    if not solana:
        return []
    titles = {"slots": "slotNotification", "accounts": "accountNotification"}
    lines = [
        "",
        "## Fan-out: Solana slots and accounts",
        "",
        "The broker as `make run` builds it, its `solana` network on `--block-time 0`. Each slot "
        "event is a `scopecast_advanceSlots` call through the dispatcher, each account event a "
        "`requestAirdrop` of 1 lamport to the one watched dev account (it lands in a slot of its "
        "own): the runtime's work is in the latency, as `evm_mine` is in the EVM reference. "
        "Direct: `slotSubscribe` / `accountSubscribe` on `/solana/ws/v3/dev` (integer ids); "
        "session: the same through `wallet_invokeMethod` with the `solana:<ref>` scope, delivered "
        "as `wallet_notify`. Latency and throughput as for the EVM tables.",
    ]
    for kind, systems in solana["fanout"].items():
        if systems:
            lines += ["", f"### {titles.get(kind, kind)}", "", *_fanout_table(systems)]
    memory = solana.get("memory", {})
    if memory:
        lines += [
            "",
            "Idle memory (as below): "
            + "; ".join(
                f"{system['label']}: "
                + ", ".join(
                    f"{m['kib_per_connection']:.1f} KiB at {m['connections']:,}"
                    for m in system["sizes"]
                )
                for system in memory.values()
            )
            + ".",
        ]
    return lines


def _solana_fleet_section(fleet: dict[str, Any] | None, solana: dict[str, Any] | None) -> list[str]:
    """Slots through a worker and Redis to two web processes (bench.solana_fleet), beside the
    in-process figure at the same size."""
    if not fleet:
        return []
    (figures,) = fleet["sizes"]
    lines = [
        "",
        f"### slotNotification through Redis to {fleet['web_processes']} web processes",
        "",
        "The deployment production runs, as real processes all pinned to the server core: a "
        "`scopecast serve --block-time 0` node (its `solana` dev network plays the Solana node), "
        "`redis-server`, one `scopecast worker` (its `solana-upstream` adapter follows the node "
        "and publishes each slot on the chain's Redis Stream) and two `scopecast serve --role web` "
        "processes reading the stream; the subscribers (`slotSubscribe` on `/solana/ws/v3/dev`) "
        "split evenly over the two. Each event is a `scopecast_advanceSlots` call on the node over "
        "HTTP, its publish time the moment the call started: the latency is slot-to-last-"
        "subscriber (the node, its PubSub, the worker's `getBlock`, Redis, the fan-out). Server "
        "CPU is that of all five processes.",
        "",
        *_fanout_table({"fleet": fleet}),
    ]
    if "load_average" in fleet:
        start, end = fleet["load_average"]
        lines += [
            "",
            f"Measured {fleet['date']} ({fleet['mode']} mode); load average {start} at the start "
            f"of this workload, {end} at its end (the machine is shared: on a busy one the "
            "processes wait for the server core, and the latency shows it).",
        ]
    inprocess = (solana or {}).get("fanout", {}).get("slots", {}).get("scopecast-solana-direct")
    same = _at(inprocess["sizes"], figures["subscribers"]) if inprocess else None
    if same is not None:
        lines += [
            "",
            f"In one process (the table above, direct, {figures['subscribers']:,}): "
            f"{_fmt(same['notifications_per_s'])} notifications/s, p99 {_fmt(same['p99_ms'], 1)} "
            f"ms; through Redis to two web processes: {_fmt(figures['notifications_per_s'])}/s, "
            f"p99 {_fmt(figures['p99_ms'], 1)} ms.",
        ]
    spent = fleet.get("cpu_seconds")
    if spent:
        lines += [
            "",
            "CPU seconds of each process over the run (warm-up included): "
            + ", ".join(f"{name} {seconds}" for name, seconds in spent.items())
            + ".",
        ]
    return lines


def _limiter_section(rows: list[dict[str, Any]] | None) -> list[str]:
    """What a key's rate limit costs (bench.limiter), beside the HTTP figures."""
    if not rows:
        return []
    return [
        "",
        "## Access control: the rate limiter's cost",
        "",
        "Microseconds per call: the limiter alone, and a whole request answered by the broker "
        "(`Broker.respond`, no sockets) for a key without limits and with a rate counted in memory "
        "or in Redis (`python -m bench.limiter`; every call admitted: the cost of saying yes).",
        "",
        "| what | µs per call |",
        "|---|---|",
        *(f"| {row['what']} | {row['us_per_call']} |" for row in rows),
    ]


def _resume_section(resume: dict[str, Any] | None) -> list[str]:
    """Replay throughput and the fan-out with and without cursors (bench.resume)."""
    if not resume:
        return []
    replay = resume["replay"]
    lines = [
        "",
        "## Resume after a drop",
        "",
        f"{replay['clients']:,} connections subscribed to heads drop; {replay['missed']} heads are "
        "published while they are away; all reconnect at once with `?resume=<cursor>` (100 "
        "handshakes at a time) and read until `scopecast_resumed`. Best of "
        f"{len(resume['rounds'])} rounds.",
        "",
        "| clients | replayed | seconds | notifications/s | resumed p50 ms | resumed p99 ms |",
        "|---|---|---|---|---|---|",
        f"| {replay['clients']:,} | {replay['replayed']:,} | {replay['seconds']} "
        f"| {replay['notifications_per_s']:,} | {replay['resumed_p50_ms']} "
        f"| {replay['resumed_p99_ms']} |",
        "",
        "What cursors cost the live fan-out (direct subscriptions, same run):",
        "",
        "| system | kind | subscribers | notifications/s | p50 ms | p99 ms |",
        "|---|---|---|---|---|---|",
    ]
    for system in resume["fanout_cost"].values():
        for kind in ("heads", "logs"):
            for figures in system[kind]:
                lines.append(
                    f"| {system['label']} | {kind} | {figures['subscribers']:,} "
                    f"| {figures['notifications_per_s']:,} | {figures['p50_ms']} "
                    f"| {figures['p99_ms']} |"
                )
    return lines


def write(results: dict[str, Any], out: Path) -> None:
    plots = _plots(results, out)
    machine = results["machine"]
    method = results["method"]
    lines = [
        "# Benchmarks",
        "",
        "Written by `make bench` from `results.json` beside this file: do not edit by hand, "
        "re-run the bench. `BENCH_QUICK=1 make bench` is the quick mode (about 6 minutes, fewer "
        "and shorter rounds, same methods); `.venv/bin/python -m bench --help` lists the options "
        "(`--only SYSTEM...` to re-measure some systems, `--profile` to attach py-spy to the "
        "scopecast servers during the measured rounds, `--no-gc-freeze` to measure without the `gc.freeze()` `scopecast serve` does after "
        "start-up). The code is in `bench/`: the load generator (`bench/loadgen.py`), the scopecast "
        "server under test (`bench/server.py`, a broker built by `build_broker` as `scopecast serve` "
        "builds it, with a synthetic chain adapter), and the peers (`bench/peers/`).",
        "",
        f"- **Measured** {results['date']}, **{results['mode']} mode**, in {results['seconds']} s.",
        f"- **Machine**: {machine['cpu']}, {machine['cores']} cores, {machine['memory_gib']} GiB, "
        f"Linux {machine['kernel']}, Python {machine['python']}, Node {machine['node']}. Load average "
        f"at start {machine['load_average_at_start']}, at end {machine.get('load_average_at_end')}.",
        f"- **Method**: every server pinned to CPU {method['server_cpus']}, the load generator "
        f"({method['load_generators']} process, raw non-blocking sockets, one `epoll` loop) to CPU "
        f"{method['load_generator_cpus']}. A round publishes {method['events_per_round']} events back "
        f"to back; {method['rounds']} measured rounds after a warm-up of "
        f"{method.get('warmup_events', 5)} events (each connection's first 16 or so frames cost "
        "every system about a quarter more, Node's as much as scopecast's: a start-up, not the "
        "steady state). Same payload bytes for every "
        f"system: a {method['head_payload_bytes']}-byte newHeads-like header or a "
        f"{method['log_payload_bytes']}-byte Transfer log.",
        "- **Why raw sockets, not trio-websocket clients**: measured on this machine (2026-11-22), "
        "trio-websocket clients in one process receive 16,227 notifications/s from 1,000 "
        "connections and 11,568/s from 5,000, using a whole core: about a tenth of what the servers "
        "deliver, with one core left for load. Such a load generator would measure itself; this one "
        "parses frame headers only (one connection in a thousand decodes and checks everything). "
        "The tests use trio-websocket as the client.",
    ]
    for update in results.get("partial_updates", []):
        lines.append(
            f"- **Re-measured** {update['date']} ({update['mode']} mode): {', '.join(update['only'])} "
            f"(load average at start {update['machine']['load_average_at_start']})."
        )
    if results["mode"] == "quick" or max(machine["load_average_at_start"][0], 0) > 0.5:
        lines += [
            "",
            "> **Caution**: quick mode and/or a busy machine (see the load average): wall-clock "
            "figures are indicative only. The *per server CPU-second* column is less sensitive to "
            "other load on the machine.",
        ]
    verdicts = results.get("targets", [])
    if verdicts:
        lines += ["", "## Targets (issue 9)", "", "| target | measured | met |", "|---|---|---|"]
        for verdict in verdicts:
            lines.append(
                f"| {verdict['target']} | {verdict['measured']} | {'yes' if verdict['met'] else '**no**'} |"
            )
    for kind, systems in results.get("fanout", {}).items():
        if not systems:
            continue
        lines += [
            "",
            f"## Fan-out: {KIND_TITLES[kind]}",
            "",
            "Latency is from the moment an event is published (handed to the hub / to "
            "`broadcast()` / to the send loop) to the moment its *last* subscriber has it; "
            "throughput is deliveries over the time from the first publish to the last receipt.",
            "",
            *_fanout_table(systems),
        ]
        if f"fanout-{kind}.png" in plots:
            lines += ["", f"![{kind} fan-out](fanout-{kind}.png)"]
    reference = results.get("fanout_reference")
    if reference:
        lines += [
            "",
            "### Reference: newHeads through the real dev chain",
            "",
            f"{reference['subscribers']:,} direct subscribers, each event an `evm_mine` of an empty "
            f"block (py-evm's mining included in the latency; real headers, about 1.6 KB with the "
            f"bloom): {_fmt(reference['notifications_per_s'])} notifications/s, p50 "
            f"{reference['p50_ms']} ms, p99 {reference['p99_ms']} ms.",
        ]
    lines += burst_section(results.get("burst"), out)
    lines += churn_section(results.get("churn"))
    lines += _solana_section(results.get("solana"))
    lines += _solana_fleet_section(results.get("solana_fleet"), results.get("solana"))
    lines += webhooks_section(results.get("webhooks"))
    memory = results.get("memory", {})
    if memory:
        lines += [
            "",
            "## Memory per idle connection",
            "",
            "Server resident memory after N idle connections minus before any, over N (a full "
            "collection first: `gc.collect()` / `global.gc()`), measured before any notification.",
            "",
            "| system | "
            + " | ".join(f"{m['connections']:,}" for m in next(iter(memory.values()))["sizes"])
            + " |",
            "|---|" + "---|" * len(next(iter(memory.values()))["sizes"]),
        ]
        for system in memory.values():
            lines.append(
                f"| {system['label']} | "
                + " | ".join(f"{m['kib_per_connection']:.1f} KiB" for m in system["sizes"])
                + " |"
            )
        counted = {k: s for k, s in memory.items() if "gc_objects_per_connection" in s["sizes"][0]}
        if counted:
            lines += [
                "",
                "Objects the garbage collector tracks per connection, frozen (`gc.freeze()`) or "
                "not: what a full collection would visit without the freeze.",
                "",
                "| system | "
                + " | ".join(f"{m['connections']:,}" for m in next(iter(counted.values()))["sizes"])
                + " |",
                "|---|" + "---|" * len(next(iter(counted.values()))["sizes"]),
                *(
                    f"| {s['label']} | "
                    + " | ".join(f"{m['gc_objects_per_connection']}" for m in s["sizes"])
                    + " |"
                    for s in counted.values()
                ),
            ]
        if "memory.png" in plots:
            lines += ["", "![memory](memory.png)"]
        collected = [
            (system["label"], m)
            for system in memory.values()
            for m in system["sizes"]
            if "full_collection_ms" in m
        ]
        if collected:
            lines += [
                "",
                "A full garbage collection has to visit every object the collector tracks, so the "
                "objects each connection keeps also set how long the collector stops the server "
                "when a full collection comes (CPython starts one once the long-lived objects grew "
                "by a quarter, e.g. under connection churn):",
                "",
                "| system | connections | objects tracked by the GC | one full collection |",
                "|---|---|---|---|",
                *(
                    f"| {label} | {m['connections']:,} | {m['tracked_objects']:,} "
                    f"| {m['full_collection_ms']} ms |"
                    for label, m in collected
                ),
            ]
    wrk_results = results.get("http_wrk")
    if wrk_results:
        lines += [
            "",
            "## HTTP JSON-RPC (wrk)",
            "",
            f"`wrk -t1 -c{wrk_results['clients']}` (keep-alive, a 1 s warm-up first) posting each call "
            f"for {method['http_seconds']} s, {wrk_results.get('rounds', 1)} times per system, "
            "scopecast and the Node peer taking turns (each figure the median of its rounds); the "
            "server on its own core, wrk on the other. The Node "
            "peer is Node's `http` module decoding the JSON-RPC envelope and answering the bytes "
            "scopecast answered to the same call: what a Node server could at best do. scopecast "
            "serves the dev chain with its response cache as shipped (the chain does not move "
            "during the run, so repeated calls are answered from the cache; wrk posts the same "
            "body every time, so the reply built for it is reused while the cache gives the same "
            "answer: a client varying its ids pays the envelope's decode, as the ceiling below "
            "does).",
            "",
            "Server CPU per request (user + system time of the server process over the run, "
            "divided by the requests answered) is given beside the rates: on a machine shared "
            "with other work it moves far less than a rate does.",
            "",
            "| call | reply bytes | scopecast req/s | p50 ms | p99 ms | CPU µs/req | Node http "
            "req/s | p50 ms | p99 ms | CPU µs/req | ratio |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for name, figures in wrk_results["calls"].items():
            ours, node = figures["scopecast"], figures.get("node", {})
            ratio = ours["req_per_s"] / node["req_per_s"] if node else 0
            lines.append(
                f"| {name} | {figures['bytes']:,} | {ours['req_per_s']:,} | {ours['p50_ms']} "
                f"| {ours['p99_ms']} | {ours.get('cpu_us', '')} | {node.get('req_per_s', 0):,} "
                f"| {node.get('p50_ms', '')} | {node.get('p99_ms', '')} | {node.get('cpu_us', '')} "
                f"| {ratio:.2f}x |"
            )
        constant = wrk_results.get("constant")
        if constant:
            lines += [
                "",
                f"Our own ceiling (the broker with a constant-reply adapter answering "
                f"through `call_now`, no cache: every request's envelope decoded, routed, counted "
                f"and its reply encoded): "
                f"{constant['req_per_s']:,} req/s, p50 {constant['p50_ms']} ms, "
                f"p99 {constant['p99_ms']} ms, {constant.get('cpu_us', '?')} µs of server CPU "
                "per request.",
            ]
            peer = wrk_results.get("constant_node")
            if peer:
                lines[-1] += (
                    f" The Node peer in turns with it (the same block's bytes): "
                    f"{peer['req_per_s']:,} req/s, p50 {peer['p50_ms']} ms, p99 {peer['p99_ms']} ms, "
                    f"{peer.get('cpu_us', '?')} µs of server CPU per request."
                )
        if "http.png" in plots:
            lines += ["", "![http](http.png)"]
    replay = results.get("replay")
    if replay:
        lines += [
            "",
            "## The response cache (replayed dapp calls)",
            "",
            f"{replay['calls']:,} calls as a dapp backend makes them (recent blocks by number and "
            "hash, receipts, logs of recent ranges, balances at latest, block numbers), in batches "
            "of 50, through scopecast in front of an upstream node (a dev chain that does not move "
            "meanwhile); the upstream's own counters say how many calls reached it.",
            "",
            "| front | upstream calls | seconds |",
            "|---|---|---|",
            *(
                f"| {name} | {figures['upstream_calls']:,} | {figures['seconds']} |"
                for name, figures in replay["systems"].items()
            ),
            "",
            f"{replay['reduction']:.0%} fewer upstream calls; every answer byte-identical: "
            f"{replay['identical']}.",
        ]
    lines += _resume_section(results.get("resume"))
    lines += _limiter_section(results.get("limiter"))
    getlogs = results.get("getlogs")
    if getlogs:
        chain = getlogs["chain"]
        lines += [
            "",
            "## eth_getLogs",
            "",
            f"A dev chain holding {chain['emitted_logs']:,} logs of one emitter contract (blocks "
            f"{chain['first_block']} to {chain['last_block']}, 1,000 logs each, sent as "
            f"`eth_sendRawTransaction` calls in {chain['build_seconds']} s). The query "
            "(`address` + `topics: [Transfer, from]`) matches 10,000 of them, spread over every "
            "block. eth-tester's `get_logs` runs over the same py-evm database (no copy).",
            "",
            "| query | system | results | median ms | min ms |",
            "|---|---|---|---|---|",
            f"| 10,000 results, whole chain | scopecast over HTTP | {getlogs['scopecast_http']['results']:,} "
            f"| {getlogs['scopecast_http']['median_ms']} | {getlogs['scopecast_http']['min_ms']} |",
            f"| 10,000 results, whole chain | scopecast dev chain adapter (in-process) "
            f"| {getlogs['scopecast_in_process']['results']:,} | {getlogs['scopecast_in_process']['median_ms']} "
            f"| {getlogs['scopecast_in_process']['min_ms']} |",
        ]
        versus = getlogs["versus_eth_tester"]
        scope = (
            "10,000 results, whole chain"
            if versus["query"]["toBlock"] == "latest"
            else f"the same, blocks 0 to {int(versus['query']['toBlock'], 16)} only"
        )
        compared = [("eth-tester `get_logs`", versus["eth_tester"])]
        if versus["query"]["toBlock"] != "latest":  # a narrower query: scopecast's answer to it too
            compared.insert(0, ("scopecast over HTTP", versus["scopecast_http"]))
        for label, figures in compared:
            lines.append(
                f"| {scope} | {label} | {figures['results']:,} | {figures['median_ms']:,} "
                f"| {figures['min_ms']:,} |"
            )
        if "getlogs.png" in plots:
            lines += ["", "![getLogs](getlogs.png)"]
    traced = results.get("memory_profile")
    if traced:
        lines += [
            "",
            "## What an idle session connection keeps (tracemalloc)",
            "",
            f"{traced['connections']:,} connections, {traced['bytes_per_connection']:,.0f} bytes of "
            "Python allocations each, charged to the innermost scopecast line of each allocation's "
            "stack (tracemalloc's own overhead makes the resident figure larger under tracing).",
            "",
            "| bytes | scopecast line | allocated in |",
            "|---|---|---|",
            *(
                f"| {entry['bytes']:,} | `{entry['line']}` | "
                + ", ".join(f"`{where}` {n:,}" for where, n in entry["allocated_in"])
                + " |"
                for entry in traced["by_line"]
            ),
        ]
    profiles = results.get("profiles")
    if profiles:
        lines += ["", "## Profiles (py-spy, scopecast servers)", ""]
        for name, summary in profiles.items():
            lines += [
                f"### {name} ({summary['samples']:,} samples)",
                "",
                "| self % | function |",
                "|---|---|",
                *(f"| {pct} | `{fn}` |" for fn, pct in summary["self"][:15]),
                "",
            ]
    (out / "README.md").write_text("\n".join(lines) + "\n")
