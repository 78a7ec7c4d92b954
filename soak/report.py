"""docs/reliability/README.md and its plots, from ``results.json``: every target, met or not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

RSS_GROWTH_TARGET = 5.0  # % over the last half of the soak
GC_PAUSE_TARGET_MS = 20.0  # the longest collection while serving, CPU time
KEPT_IN_CYCLES_TARGET = 1_000  # objects in cycles among the frozen ones at the end of the soak
# The overload's documented memory bound for its one web process: a base (an idle web process is
# ~80 MiB) plus 32 KiB a connection (a quick run measured ~9 KiB a session connection with a
# newHeads subscription: the bound leaves room for backlogs of slow consumers up to the outbox limit).
OVERLOAD_BASE_MIB = 150
OVERLOAD_KIB_PER_CONNECTION = 32


def overload_bound_mib(connections: int) -> float:
    return OVERLOAD_BASE_MIB + connections * OVERLOAD_KIB_PER_CONNECTION / 1024


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for fault in results.get("faults", []):
        counts = (fault["lost"], fault["duplicated"], fault["out_of_order"])
        met = counts == (0, 0, 0) and fault["not_recovered"] == 0 and fault["runs"] > 0
        sessions = ""
        if "sessions_lost" in fault:  # rows measured since the session checks came
            sessions = (
                f"; sessions lost {fault['sessions_lost']}, invokes failed "
                f"{fault['invokes_failed']} of {fault['session_checks']} checks"
            )
            met = met and fault["sessions_lost"] == 0 and fault["invokes_failed"] == 0
        found.append(
            {
                "target": f"{fault['label']}{_with_reorg(fault)}: 0 blocks lost / duplicated / "
                "out of order, every client recovered"
                + (", 0 sessions lost, every invoke answered" if sessions else ""),
                "measured": f"{counts[0]} / {counts[1]} / {counts[2]} over {fault['runs']} runs "
                f"x {fault['clients']} clients; not recovered {fault['not_recovered']}{sessions}",
                "met": met,
            }
        )
    for fault in (results.get("solana") or {}).get("faults", []):
        found.append(_solana_target(fault))
    soak = results.get("soak")
    if soak:
        growth = soak.get("rss_growth_pct")
        found.append(
            {
                "target": f"soak: RSS growth over the last half under {RSS_GROWTH_TARGET:.0f} %",
                "measured": f"{growth} % (web processes, worst)",
                "met": growth is not None and growth < RSS_GROWTH_TARGET,
            }
        )
        pause = soak.get("max_gc_pause_cpu_ms")
        found.append(
            {
                "target": f"soak: longest GC pause while serving under {GC_PAUSE_TARGET_MS:.0f} ms "
                "(CPU)",
                "measured": f"{pause} ms CPU ({soak.get('max_gc_pause_ms')} ms wall; web "
                "processes, worst)",
                "met": pause is not None and pause < GC_PAUSE_TARGET_MS,
            }
        )
        kept = soak.get("kept_in_cycles")
        found.append(
            {
                "target": "soak: nothing kept for good: under "
                f"{KEPT_IN_CYCLES_TARGET:,} objects in cycles among the frozen ones at the end "
                "(the collector never frees those)",
                "measured": f"{kept} objects (web processes, worst)",
                "met": kept is not None and kept < KEPT_IN_CYCLES_TARGET,
            }
        )
        fds = soak.get("fd_growth")
        found.append(
            {
                "target": "soak: no fd growth over the last half (pooled Redis and upstream "
                "connections within their configured bounds)",
                "measured": f"{fds} fds beyond the bounds (worst web process; raw fd count "
                f"growth {soak.get('fd_growth_raw')})",
                "met": fds is not None and fds <= 0,
            }
        )
    fuzz = results.get("fuzz")
    if fuzz:
        found.append(
            {
                "target": "hostile input: every input sent, 0 crashes, every well-formed "
                "request answered, no bystander disconnected",
                "measured": f"{fuzz['inputs']} inputs of {fuzz.get('inputs_asked', '?')}: "
                f"{fuzz['crashes']} crashes, "
                f"{fuzz['unanswered']} unanswered, "
                f"{fuzz['bystanders_disconnected']} bystanders disconnected",
                "met": bool(fuzz.get("finished"))
                and fuzz["crashes"] == 0
                and fuzz["unanswered"] == 0
                and fuzz["bystanders_disconnected"] == 0,
            }
        )
    overload = results.get("overload")
    if overload:
        found.append(
            {
                "target": "overload: the process stays up, every slow consumer closed with 4008, "
                "no other client misses a head, RSS under "
                f"{OVERLOAD_BASE_MIB} MiB + {OVERLOAD_KIB_PER_CONNECTION} KiB a connection "
                f"({overload_bound_mib(overload['connections']):.0f} MiB)",
                "measured": f"{overload['connections']} connections: alive {overload['alive']}, "
                f"4008 {overload['slow_closed_4008']} of {overload['slow_consumers']}, "
                f"missing heads {overload['bystanders_missing_heads']}, "
                f"RSS {overload['rss_mib']} MiB",
                "met": overload["alive"]
                and overload["slow_closed_4008"] == overload["slow_consumers"]
                and overload["bystanders_missing_heads"] == 0
                and overload["rss_mib"] < overload_bound_mib(overload["connections"]),
            }
        )
    return found


def _plot_soak(soak: dict[str, Any], out: Path) -> str | None:
    samples = soak.get("samples")
    if not samples:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(2, 2, figsize=(11, 7), sharex=True)
    panels = [
        ("rss_mib", "RSS (MiB)"),
        ("fds_less_clients", "fds other than established client connections"),
        ("tasks", "trio tasks"),
        ("gc_max_pause_ms", "longest GC pause of the last 10 s, wall time (ms)"),
    ]
    for axis, (key, title) in zip(axes.flat, panels, strict=True):
        for web in sorted({s["web"] for s in samples}):
            points = [(s["t"], s[key]) for s in samples if s["web"] == web and key in s]
            if points:
                axis.plot(*zip(*points, strict=True), marker=".", label=f"web {web}")
        axis.set_title(title)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    for axis in axes[1]:
        axis.set_xlabel("seconds into the soak")
    figure.suptitle(
        f"soak: {soak['connections']} session connections, {soak['minutes']} min "
        f"({soak.get('mode', '')})"
    )
    figure.tight_layout()
    name = "soak.png"
    figure.savefig(out / name, dpi=90)
    plt.close(figure)
    return name


def _fd_trajectory(soak: dict[str, Any]) -> list[str]:
    """Each web process's fds by kind at the start, the middle and the end: whether a difference
    is a trend, a pool growing to the load, or connections mid-close at the moment of a sample."""
    lines = [
        "| web process | sample | fds | client connections (established / closing) | Redis "
        "| upstream | other |",
        "|---|---|---|---|---|---|---|",
    ]
    for web in sorted({s["web"] for s in soak.get("samples", [])}):
        mine = [s for s in soak["samples"] if s["web"] == web and "fd_kinds" in s]
        if not mine:
            continue
        for label, sample in (
            ("start", mine[0]),
            ("middle", mine[len(mine) // 2]),
            ("end", mine[-1]),
        ):
            kinds = sample["fd_kinds"]
            lines.append(
                f"| {web} | {label} ({sample['t']} s) | {sample['fds']} | {kinds.get('clients')} / "
                f"{kinds.get('clients_closing')} | "
                f"{kinds.get('redis')} | {kinds.get('upstream')} | {kinds.get('other')} |"
            )
    return lines if len(lines) > 2 else []


_UPSTREAM_RESTART_NOTE = [
    "The upstream node keeps its dev chain in a state dir (`scopecast serve --state-dir`): killed "
    "with `kill -9` and started again, it goes on from the head it had committed, with the same "
    "hashes, as a real node restarts with its chain (without it, each start was a new chain from "
    "a new genesis, which the broker rightly does not follow backwards). Its reorg cannot rewind "
    "blocks from before the kill (`evm_snapshot` ids live in the node's memory): the restarted "
    "node mines five blocks, which are then reverted, so its recovery is timed from that revert "
    "(2.5 s after the restart); the blocks across the restart are judged all the same.",
]


_REDIS_NOTE = [
    'Redis losing its data or its primary (README "Redis in production"): after each run every '
    "client checks its session on the connection it has (`wallet_getSession` must list its "
    "scope, `wallet_invokeMethod eth_blockNumber` must answer); *sessions lost / invokes failed* "
    "counts the checks that did not. `SHUTDOWN NOSAVE` and `FLUSHALL` lose everything Redis held: "
    "the web processes notice it (the epoch key) and write back the sessions of the dapps "
    "connected to them, their resume records and their connection slots, and the worker that "
    "leads next resumes after the last block it saw published. (With the repair disabled, a quick "
    "run of the `FLUSHALL` row measured 120 sessions lost and 120 invokes failed of 120 checks.) "
    "The Sentinel row runs in a deployment of its own: a primary, a replica and three "
    "`redis-server --sentinel` processes (`down-after-milliseconds` 1000), the web processes and "
    "workers given `redis+sentinel://`; its recovery is mostly the sentinels' failover "
    "(the primary judged down after 1 s, then the election); the killed server is started again "
    "and rejoins as a replica before the next run, which kills whichever is primary then.",
]


_FINDINGS = [
    "## Findings of earlier runs, and what was done",
    "",
    "- *Upstream restart not recovered* (a quick run: 200 of 200 clients): the dev chain lived in "
    "memory, so a restarted node was a new chain from a new genesis. `scopecast serve "
    "--state-dir` now keeps it (a journal of py-evm's database and the head, read back at start); "
    "the suite's upstream runs with one.",
    "- *1.0 fd growth* (a quick run, one web process): an upstream keep-alive connection, 2 then "
    "3, within its pool's bound of 32. Pooled connections are now judged against their "
    "configured bounds; all other fds count in full; the raw counts are reported beside.",
    "- *1 well-formed request unanswered of 348* (a quick run): the same request, and the whole "
    "lot of 5,000 inputs it came in, sent again to a web process by the fuzzer alone, were all "
    "answered; the fuzzer shared the harness's trio process with the soak's 1,000 clients and "
    "HTTP load, and its 10 s wait ran out there (HTTP bodies had no limit at all). It is now a "
    "process of its own, with 30 s for each reply, and runs until it has sent every input (it "
    "had sent 2,763 of 5,000).",
    "- *RSS growth of 8.83 % over the last half* (a full run): the fuzzer installs polled filters "
    "(`eth_newFilter`, `eth_newBlockFilter`, about 7 in 100 inputs) and never polls them; each "
    "filter copied every matching event into a buffer of its own until it expired after 15 "
    "minutes (4 MB for 400 filters over 100 blocks of 3 logs), so memory grew with filters times "
    "blocks through the whole soak. Filters now share one journal of events, each keeping only "
    "its place in it (`adapters/evm/filters.py`, with a test measuring the memory with tracemalloc).",
    "- *A reorg during each fault* (the issue asks for one; before, only alone and with a web "
    "process kill): every fault now comes with one, and the faults were measured again in full "
    "mode: 0 lost / duplicated / out of order, every client saw every reorg; no server change "
    "was needed.",
]


_ABOUT = [
    "## What this suite does not show",
    "",
    "- The quick mode is smaller than the issue's figures (60 clients per fault and 2 runs, 600 "
    "soak connections for 1.25 minutes sampled every 5 s, 2,000 overload connections, 3,000 fuzz "
    "inputs): its growth figures span a short run. It is sized for the 5 minutes asked: with "
    "every fault run with its reorg, a quick run took 247 s from a load average of 1.5 (3.7 at "
    "its end, its own load included); the shared machine decides, and with other work at a load "
    "average of 8 to 12 on its 2 cores an earlier quick run took 417 s. Only a full run "
    "(`make soak`) gives the issue's sizes.",
    "- The soak's clients and HTTP load run in one trio process (the harness); on a busy "
    "machine it sends fewer HTTP requests than asked (the rate achieved is reported). The fuzzer "
    "is a process of its own (`python -m soak.fuzz`, 16 lanes at once); its Hypothesis inputs "
    "are drawn with fixed seeds and cached on disk between runs (drawing 100,000 takes minutes of "
    "CPU). The "
    "overload's bystanders are held by a `bench.loadgen` process (epoll) instead: a trio client "
    "reading 19,000 connections falls behind a block a second and becomes a slow consumer itself.",
    "- Overload at 20,000 connections is out of reach on this machine: the fd hard limit "
    "(`ulimit -Hn`) is 20,000 for the web process and for the harness alike, so the full mode "
    "opens 19,000. The web process's `outbox_limit_bytes` is lowered to 16 KiB so that slow "
    "consumers are given up on within the run (with the default 4 MiB at a block a second that "
    "takes about an hour).",
    "- A slow consumer sees its 4008 only if it reads within the server's 2 s close grace after "
    "being given up on: the harness watches `scopecast_slow_consumer_disconnects_total` and lets "
    "every slow consumer read for 2.5 s each time it rises (the others then stall again).",
    "- Trio task counts and GC pauses come from a wrapper (`soak/gauged.py`: a trio instrument and "
    "`gc.callbacks` in the web process), not from `/metrics`, which has neither.",
    "- Timings (recovery, GC pauses in wall time) are taken on a machine shared with other work: "
    "they are noisy, and the wall-time GC pauses include time the process was not scheduled.",
]


def _solana_target(fault: dict[str, Any]) -> dict[str, Any]:
    """A Solana fault's target: every slot and account change once, in order, every client
    recovered, no session lost."""
    slots = fault["slots"]
    changes = fault.get("account_changes")
    counts = [slots["lost"], slots["duplicated"], slots["out_of_order"]]
    measured = f"slots {counts[0]} / {counts[1]} / {counts[2]}"
    if changes is None:
        measured += ", account changes not judged (slots only)"
    else:
        counts += [changes["lost"], changes["duplicated"], changes["out_of_order"]]
        measured += (
            f", account changes {changes['lost']} / {changes['duplicated']} / "
            f"{changes['out_of_order']} ({fault['account_changes_received']} received)"
        )
    measured += (
        f" over {fault['runs']} runs x {fault['clients']} clients; not recovered "
        f"{fault['not_recovered']}; sessions lost {fault['sessions_lost']}, invokes failed "
        f"{fault['invokes_failed']} of {fault['session_checks']} checks"
    )
    met = (
        not any(counts)
        and changes is not None
        and fault["runs"] > 0
        and fault["not_recovered"] == 0
        and fault["sessions_lost"] == 0
        and fault["invokes_failed"] == 0
    )
    return {
        "target": f"Solana, {fault['label']}: 0 slots and 0 account changes lost / duplicated / "
        "out of order, every client recovered, 0 sessions lost",
        "measured": measured,
        "met": met,
    }


def _solana_table(faults: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| fault | runs x clients | slots lost / dup / out of order | account changes lost / dup "
        "/ out of order (received) | clients short of the last balance | recover p50 / p99 (s) "
        "| not recovered | client errors | reconnects | sessions lost / invokes failed (checks) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for f in faults:
        slots = f["slots"]
        changes = f.get("account_changes")
        judged = (
            "not judged"
            if changes is None
            else f"{changes['lost']} / {changes['duplicated']} / {changes['out_of_order']} "
            f"({f['account_changes_received']})"
        )
        kinds = f", {', '.join(f['client_error_kinds'])}" if f["client_error_kinds"] else ""
        lines.append(
            f"| {f['label']} | {f['runs']} x {f['clients']} | {slots['lost']} / "
            f"{slots['duplicated']} / {slots['out_of_order']} | {judged} | "
            f"{_fmt(f.get('clients_short_of_last_balance'))} | {_fmt(f['recover_p50_s'])} / "
            f"{_fmt(f['recover_p99_s'])} | {f['not_recovered']} | {f['client_errors']}{kinds} | "
            f"{f['reconnects']} | {_sessions(f)} |"
        )
    return lines


def _solana_section(solana: dict[str, Any] | None) -> list[str]:
    """The faults against a fleet in front of two Solana nodes (soak.solana)."""
    if not solana or not solana.get("faults"):
        return []
    faults = solana["faults"]
    settings = solana.get("settings", {})
    dates = [str(f.get("date")) for f in faults]
    return [
        "",
        "## Solana",
        "",
        "The same fleet in front of Solana nodes: two `scopecast serve --block-time "
        f"{settings.get('solana_slot_time', '?')}` nodes (their `solana` dev networks: a slot "
        f"every {settings.get('solana_slot_time', '?')} s with demo transfers) listed as the "
        "network's `upstreams` (the `solana-upstream` adapter), `redis-server`, two workers and "
        "two web processes. A sender transfers to a fresh account every "
        f"{settings.get('solana_transfer_every', '?')} s, the same amount on both nodes. Session "
        "clients, split over both web processes, hold `slotSubscribe` and `accountSubscribe` (that "
        "account) through `wallet_invokeMethod` and resume with `?resume=<cursor>` on the other web "
        "process when dropped. After each run the slots are judged against the nodes' `getBlocks` "
        "and the account changes against the sender's transactions as the nodes executed them "
        "(`getTransaction`: the account's balance after each slot with a transfer). The sender "
        "pauses while a node is touched, and a frozen or restarted node is brought to the other's "
        "slot afterwards (a dev chain does not catch up by itself, and a restarted one starts "
        "from slot 0 with the account's balance given back): a real node's catch-up. *Recover*: "
        "from the end of the fault until the client has a slot at least as high as the lowest "
        "running node's slot then. Code: `soak/solana.py`; `python -m soak --only solana` "
        "(`--faults solana_...`, `--solana-clients N`, `--fault-runs N`, `--no-solana-accounts`).",
        "",
        *_solana_table(faults),
        "",
        f"These rows: {min(dates)} to {max(dates)}, {faults[0].get('mode')} mode, load average "
        f"{faults[0].get('machine', {}).get('load_average_at_start')} at the start of the run. "
        f"Settings: `{settings}`.",
        *_solana_notes(faults),
    ]


def _solana_notes(faults: list[dict[str, Any]]) -> list[str]:
    """What the rows show that must not happen, said where the figures are: each is a bug."""
    notes = []
    judged = [f for f in faults if f.get("account_changes") is not None]
    if judged and not any(f["account_changes_received"] for f in judged):
        notes.append(
            "- **No account change reached any client.** The web processes share their account "
            "interests with the worker through Redis (`scopecast:interests:{chain}`), and the "
            "worker's adapter reads those accounts after each block: check that the web "
            "processes reach Redis and the worker's log for the interests it read."
        )
    lossy = [f["label"] for f in faults if f["slots"]["lost"]]
    if lossy:
        notes.append(
            f"- **Slots lost on: {'; '.join(lossy)}.** A new leader resumes from the stream's "
            "last slot and a gap is filled only from a node that has reached it, so none should "
            "be: the workers' logs, kept in the run's folder, say which slots each leader "
            "appended and which it filled from `getBlocks`."
        )
    emptied = [f for f in faults if f["name"] == "solana_restart_redis" and f["sessions_lost"]]
    if emptied:
        notes.append(
            f"- **{emptied[0]['sessions_lost']} of {emptied[0]['session_checks']} session checks "
            "after the Redis restart found `wallet_getSession` empty.** A web process writes back "
            "the sessions it holds; a connection whose process never read its session (a tab "
            "that had just resumed there) can still read it empty until another process has "
            "written it back."
        )
    return ["", *notes] if notes else []


def _fmt(value: Any) -> str:
    return "n/a" if value is None else str(value)


def _with_reorg(fault: dict[str, Any]) -> str:
    """How the fault's label reads in the targets: with a reorg or not (older runs had none)."""
    reorg = fault.get("reorg")
    if reorg is None or fault["name"] == "reorg_5_deep":
        return ""
    return ", with a reorg 5 blocks deep"


def _sessions(fault: dict[str, Any]) -> str:
    if "sessions_lost" not in fault:
        return "not measured"  # a row from before the session checks
    mode = f", {fault['mode']} mode" if fault.get("mode") == "quick" else ""
    return f"{fault['sessions_lost']} / {fault['invokes_failed']} ({fault['session_checks']}{mode})"


def _fault_table(faults: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| fault | with a reorg 5 deep, reverted | runs x clients | lost | duplicated "
        "| out of order | recover p50 / p99 (s) | not recovered | client errors | reconnects "
        "| reorgs seen (clients x runs) | sessions lost / invokes failed (checks) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for f in faults:
        kinds = f", {', '.join(f['client_error_kinds'])}" if f["client_error_kinds"] else ""
        lines.append(
            f"| {f['label']} | {f.get('reorg', 'no reorg')} | {f['runs']} x {f['clients']} | "
            f"{f['lost']} | {f['duplicated']} | "
            f"{f['out_of_order']} | {_fmt(f['recover_p50_s'])} / {_fmt(f['recover_p99_s'])} | "
            f"{f['not_recovered']} | {f['client_errors']}{kinds} | {f['reconnects']} | "
            f"{f.get('replaced_by_reorg', 0)} | {_sessions(f)} |"
        )
    return lines


def write(results: dict[str, Any], out: Path) -> None:
    m = results["machine"]
    lines = [
        "# Reliability in figures",
        "",
        "Written by `make soak` (`python -m soak`; `SOAK_QUICK=1` for the quick mode) from "
        "`results.json` beside this file. Everything runs on this machine's loopback as real "
        "processes: a `scopecast serve` dev chain node as the upstream, a `redis-server` of the "
        "suite's own, two workers (one leads, one stands by) and two web processes "
        "(`serve --role web`); the clients are raw WebSocket sessions (CAIP-25 "
        "`wallet_createSession`, then `eth_subscribe newHeads` through `wallet_invokeMethod`) "
        "that resume with `?resume=<cursor>` when dropped and keep every head they receive.",
        "",
        f"Run: {results.get('mode')} mode, {results.get('date')}, "
        f"{results.get('seconds', '?')} s. Machine: {m.get('cpu')}, {m.get('cores')} cores, "
        f"{m.get('memory_gib')} GiB, Linux {m.get('kernel')}, Python {m.get('python')}; load "
        f"average {m.get('load_average_at_start')} at the start. **The machine is shared with "
        "other work, so timings are noisy**; a quick run is smaller and shorter than a full one "
        "(settings below).",
        "",
        "## Targets",
        "",
        "| target | measured | met |",
        "|---|---|---|",
    ]
    for t in results.get("targets", []):
        lines.append(f"| {t['target']} | {t['measured']} | {'yes' if t['met'] else '**no**'} |")
    faults = results.get("faults")
    if faults:
        dates = [str(f.get("date")) for f in faults]
        lines += [
            "",
            "## Faults",
            "",
            "Each fault is injected at a random moment, repeated; clients split over both web "
            "processes. Each comes with a reorg 5 blocks deep: `evm_snapshot` on the upstream, "
            "five blocks mined, the fault, and `evm_revert` while the fault is in effect or as it "
            "ends (the column says when), so the next blocks replace those five; the reorg also "
            "runs alone. Blocks are judged against the upstream's chain after each run: *lost* is a "
            "block of the final chain between the last head a client had before the fault and the "
            "highest it has after that never arrived; *duplicated* the same block hash twice; *out "
            "of order* a head whose parent the client never saw at a height not above the previous "
            "one. *Recover*: from the end of the fault and its reorg (the `evm_revert`) until "
            "the client receives a head at least as high as the upstream's head at that moment "
            "(blocks come every "
            f"{results.get('settings', {}).get('fault_block_time')} s, which bounds it from "
            "below). *Reorgs seen*: a client receiving the new branch's first head, at a height it "
            "already had, on a parent it had (one per client per run when every client follows "
            "the reorg). *Client errors*: resumes that were not complete, error replies, unexpected "
            "close codes. Failed connect attempts (to a process that is down) are not errors.",
            "",
            *_fault_table(faults),
            "",
            f"These rows: {min(dates)} to {max(dates)}, load average "
            f"{faults[0].get('machine', {}).get('load_average_at_start')} at the start of the "
            "first one's run; rows marked quick mode were measured again on their own "
            '(`--faults`, settings under "Parts measured again later").',
        ]
        if any("sessions_lost" in f for f in faults):
            lines += ["", *_REDIS_NOTE]
        if any(f["name"] == "restart_upstream" for f in faults):
            lines += ["", *_UPSTREAM_RESTART_NOTE]
    lines += _solana_section(results.get("solana"))
    soak = results.get("soak")
    if soak:
        plot = _plot_soak(soak, out)
        lines += [
            "",
            "## Soak",
            "",
            f"{soak['connections']} session connections for {soak['minutes']} min "
            f"({soak.get('minutes_run', soak['minutes'])} run, until the fuzzer was done), a "
            "block every "
            f"{results.get('settings', {}).get('block_time')} s, {soak['churn_per_second']} "
            f"connections a second closed and resumed, {soak['http_per_second']} HTTP requests a "
            "second of mixed node queries. Sampled every "
            f"{soak['sample_every_s']} s per web process. Growth: the median of the last three "
            "samples against the median of the three around the middle of the run. fd growth, judged: "
            "the fds are read from `/proc` in one go and sorted by kind; established client "
            "connections are left out (the churn moves them at every instant); pooled connections "
            "(Redis: coredis's pool; the upstream: its HTTP pool's `max_connections` and the "
            "WebSocket following its heads) count only beyond those bounds, since a pool grows and "
            "shrinks with the load within them; everything else (listeners, files, pipes, client "
            "connections left closing) counts in full. The raw figures are beside it. GC pauses are "
            "timed by `gc.callbacks` inside the web process "
            "(`soak/gauged.py`), in wall time and in the thread's CPU time: on this shared machine "
            "the wall time includes the time the process was not scheduled. They count from the "
            "moment the process serves (its start-up objects frozen, before it says it listens); "
            "start-up's own longest collection, which no connection waits for, is the last "
            "column.",
            "",
            "| web process | RSS growth (last half) | fd growth, judged | fd growth: raw / less "
            "clients / less pools | Redis, upstream connections: most seen (bound) "
            "| longest GC pause serving, wall / CPU (ms) | RSS at end (MiB) | tasks at end "
            "| start-up's longest GC pause, CPU (ms) | kept in cycles at the end: objects "
            "(most common types) |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for web, figures in sorted(soak.get("per_web", {}).items()):
            most = figures.get("pooled_max") or {}
            bounds = figures.get("pool_bounds") or {}
            lines.append(
                f"| {web} | {figures['rss_growth_pct']} % | {figures['fd_growth']} | "
                f"{figures.get('fd_growth_raw')} / {figures.get('fd_growth_less_clients')} / "
                f"{figures.get('fd_growth_unpooled')} | "
                f"{most.get('redis')} ({bounds.get('redis')}), "
                f"{most.get('upstream')} ({bounds.get('upstream')}) | "
                f"{figures['max_gc_pause_ms']} / {figures.get('max_gc_pause_cpu_ms')} | "
                f"{figures.get('rss_mib_end')} | {figures.get('tasks_end')} | "
                f"{figures.get('start_up_gc_pause_cpu_ms', '-')} | {_kept(figures)} |"
            )
        lines += ["", *_fd_trajectory(soak)]
        lines += [
            "",
            f"Heads: {soak.get('heads_checked')} clients judged, lost "
            f"{soak.get('lost')}, duplicated {soak.get('duplicated')}, out of order "
            f"{soak.get('out_of_order')}; churn reconnects {soak.get('churned')}; HTTP answered "
            f"{soak.get('http_answered')} of {soak.get('http_sent')} "
            f"({soak.get('http_errors')} errors; {soak.get('http_per_second_achieved')} a second "
            f"achieved of the {soak['http_per_second']} asked: the harness is one trio process and "
            f"falls short when the machine is busy); client errors {soak.get('client_errors')}.",
        ]
        if plot:
            lines += ["", f"![soak]({plot})"]
    fuzz = results.get("fuzz")
    if fuzz:
        lines += [
            "",
            "## Hostile input",
            "",
            f"{fuzz['inputs']} inputs of {fuzz.get('inputs_asked', '?')} sent to a web process "
            "during the soak by a fuzzer process of its own "
            f"({fuzz.get('kinds')}); {fuzz['crashes']} crashes (a web process exiting), "
            f"{fuzz['unanswered']} well-formed requests unanswered within 30 s (of "
            f"{fuzz.get('well_formed')}), "
            f"{fuzz['bystanders_disconnected']} bystanders disconnected (the soak's clients, "
            "which must only ever be closed by the churn). Fuzzing connections the server closed "
            f"(its right, on garbage): {fuzz.get('fuzz_connections_closed_by_server')}; new "
            f"fuzzing connections whose handshake was refused or cut: "
            f"{fuzz.get('handshakes_refused', 0)} {fuzz.get('handshake_refusals') or ''}.",
        ]
        if fuzz.get("notes"):
            lines += ["", *fuzz["notes"]]
    overload = results.get("overload")
    if overload:
        lines += [
            "",
            "## Overload",
            "",
            f"{overload['connections']} session connections on one web process (the machine's fd "
            f"limit is {results.get('fd_limit')}, for the server and for the clients), one in "
            f"{overload.get('slow_every')} a slow consumer that stops reading. Alive: "
            f"{overload['alive']}; slow consumers closed with 4008: "
            f"{overload['slow_closed_4008']} of {overload['slow_consumers']}; other clients "
            f"missing a head: {overload['bystanders_missing_heads']}; RSS {overload['rss_mib']} "
            f"MiB (bound: {OVERLOAD_BASE_MIB} MiB + {OVERLOAD_KIB_PER_CONNECTION} KiB a "
            f"connection, {overload_bound_mib(overload['connections']):.0f} MiB).",
        ]
        if overload.get("notes"):
            lines += ["", *overload["notes"]]
    lines += ["", *_FINDINGS, "", *_ABOUT]
    lines += [
        "",
        "## Settings of this run",
        "",
        "```json",
        *_json_lines(results.get("settings", {})),
        "```",
        "",
    ]
    if results.get("partial_runs"):
        lines += [
            "Parts measured again later (`python -m soak --only ...`), with their own settings; "
            "each part above carries its date and mode in `results.json`:",
            "",
            "```json",
            *_json_lines(results["partial_runs"]),
            "```",
            "",
        ]
    (out / "README.md").write_text("\n".join(lines))


def _json_lines(value: Any) -> list[str]:
    import json

    return json.dumps(value, indent=2).splitlines()


def _kept(figures: dict[str, Any]) -> str:
    census = figures.get("kept_in_cycles")
    if not census:
        return "-"
    types = ", ".join(f"{name} {count}" for name, count in list(census["by_type"].items())[:4])
    return f"{census['objects']}" + (f" ({types})" if types else "")
