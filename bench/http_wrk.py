"""HTTP JSON-RPC measured with ``wrk``: scopecast's node methods beside Node's own ``http`` server.

Each call is posted by ``wrk -t1 -c64`` (keep-alive; the server pinned to one core, wrk to the
other) for the settings' HTTP seconds, ``http_rounds`` times per system, the systems taking turns
round by round (on a shared machine, a burst of other work then hits both alike); each figure is
the median of its rounds. Three systems, in the same run:

- scopecast serving the dev chain (``bench.server devchain``), with its response cache as shipped;
- Node 20's ``http`` module (``bench/peers/node/http_server.mjs``) decoding the JSON-RPC envelope
  and answering the very bytes scopecast answered to that call (a ceiling for a Node server);
- for ``eth_getBlockByNumber``, scopecast with a constant adapter (``bench.server constant``): the
  same broker path with the chain work taken away, our own ceiling.

A Python load generator measured itself rather than the server (3.5k req/s where wrk sees 16k and
more), so HTTP figures come from wrk only.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

from bench.procs import ROOT, Child, ChildError
from bench.workloads import (
    PYTHON,
    HttpClient,
    Settings,
    build_log_chain,
    profiling,
    start_scopecast,
)

NODE_PEER: Final = ROOT / "bench" / "peers" / "node" / "http_server.mjs"
_UNITS: Final = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def _body(method: str, params: list[Any], id_: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}


def calls(client: HttpClient, contract: str, log_block: int) -> dict[str, Any]:
    """The measured calls (name → JSON body), on the chain the bench built."""
    latest = client.rpc("eth_getBlockByNumber", ["latest", False])
    block = client.rpc("eth_getBlockByNumber", [hex(log_block), False])
    tx_hash = block["transactions"][0]
    logs = {"fromBlock": "0x0", "toBlock": "latest", "address": contract}
    singles = {
        "eth_chainId": _body("eth_chainId", []),
        "eth_blockNumber": _body("eth_blockNumber", []),
        "eth_getBlockByNumber latest": _body("eth_getBlockByNumber", ["latest", False]),
        "eth_getBlockByHash": _body("eth_getBlockByHash", [latest["hash"], False]),
        "eth_getTransactionReceipt": _body("eth_getTransactionReceipt", [tx_hash]),
        "eth_getLogs (100 results)": _body("eth_getLogs", [logs]),
    }
    members = list(singles.values())
    batch = [{**members[i % len(members)], "id": i + 1} for i in range(10)]
    return {**singles, "batch of 10": batch}


def _lua(body: bytes, path: Path) -> Path:
    path.write_text(
        'wrk.method = "POST"\n'
        'wrk.headers["Content-Type"] = "application/json"\n'
        f"wrk.body = [==[{body.decode()}]==]\n"
    )
    return path


def _ms(value: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s)", value)
    if match is None:
        raise ChildError(f"wrk latency {value!r} not understood")
    return round(float(match.group(1)) * _UNITS[match.group(2)], 3)


def parse_wrk(output: str) -> dict[str, Any]:
    """req/s, p50 and p99 (ms) and any errors from ``wrk --latency`` output."""
    rate = re.search(r"Requests/sec:\s+([\d.]+)", output)
    p50 = re.search(r"^\s+50%\s+(\S+)", output, re.M)
    p99 = re.search(r"^\s+99%\s+(\S+)", output, re.M)
    if rate is None or p50 is None or p99 is None:
        raise ChildError(f"wrk output not understood:\n{output}")
    figures: dict[str, Any] = {
        "req_per_s": round(float(rate.group(1))),
        "p50_ms": _ms(p50.group(1)),
        "p99_ms": _ms(p99.group(1)),
    }
    problems = re.findall(r"(Non-2xx or 3xx responses: \d+|Socket errors: .*)", output)
    if problems:
        figures["problems"] = problems
    return figures


def _cpu_ticks(pid: int) -> int:
    """User and system CPU time of process ``pid`` so far, in clock ticks."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def wrk(settings: Settings, url: str, script: Path, pid: int | None = None) -> dict[str, Any]:
    """One wrk run against ``url``, pinned to the load cores; with the server's ``pid``, also
    its CPU time per request (user + system): a figure other work on the machine moves less than
    the rate."""
    seconds = max(1, round(settings.http_seconds))
    argv = ["wrk", "-t1", f"-c{settings.http_clients}", f"-d{seconds}s", "--latency"]
    argv += ["-s", str(script), url]
    warmup = ["wrk", "-t1", f"-c{settings.http_clients}", "-d1s", "-s", str(script), url]
    pin = ["taskset", "-c", ",".join(str(c) for c in sorted(settings.load_cpus))]
    subprocess.run(pin + warmup, capture_output=True, check=True, timeout=60)
    before = _cpu_ticks(pid) if pid is not None else 0
    done = subprocess.run(
        pin + argv, capture_output=True, text=True, check=True, timeout=seconds + 60
    )
    figures = parse_wrk(done.stdout)
    if pid is not None:
        requests = re.search(r"(\d+) requests in", done.stdout)
        if requests is not None and int(requests.group(1)):
            ticks = _cpu_ticks(pid) - before
            per_request = ticks / os.sysconf("SC_CLK_TCK") / int(requests.group(1))
            figures["cpu_us"] = round(per_request * 1e6, 2)
    return figures


class NodePeer:
    """``node http_server.mjs PORT REPLY_FILE``, pinned to the server core."""

    def __init__(self, settings: Settings, reply: Path) -> None:
        pin = ["taskset", "-c", ",".join(str(c) for c in sorted(settings.server_cpus))]
        self.proc = subprocess.Popen(
            [*pin, "node", str(NODE_PEER), "0", str(reply)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("listening "):
            self.stop()
            raise ChildError(f"the Node HTTP peer did not start: {line!r}")
        self.port = int(line.split()[1])

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def _median_figures(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The median req/s, p50, p99 and server CPU per request of several wrk runs (each median
    taken on its own), with every run kept."""
    keys = [key for key in ("req_per_s", "p50_ms", "p99_ms", "cpu_us") if key in runs[0]]
    figures: dict[str, Any] = {
        key: round(statistics.median(run[key] for run in runs), 3) for key in keys
    }
    figures["req_per_s"] = round(figures["req_per_s"])
    problems = [problem for run in runs for problem in run.get("problems", [])]
    if problems:
        figures["problems"] = problems
    figures["runs"] = [{key: run[key] for key in keys} for run in runs]
    return figures


def _alternate(
    settings: Settings, ours: tuple[str, int], theirs: tuple[str, int], script: Path, name: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """wrk against ``ours`` and ``theirs`` (url, server pid) in turns, ``http_rounds`` times
    each; in profile mode py-spy watches our first run (profiles/http-NAME.txt)."""
    mine, peer = [], []
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    for index in range(settings.http_rounds):
        with profiling(
            replace(settings, profile=settings.profile and index == 0), ours[1], f"http-{slug}"
        ):
            mine.append(wrk(settings, ours[0], script, ours[1]))
        peer.append(wrk(settings, theirs[0], script, theirs[1]))
    return _median_figures(mine), _median_figures(peer)


def run_http(settings: Settings, log: Callable[[str], None]) -> dict[str, Any]:
    """Every call against scopecast and the Node peer in turns, and our constant-reply ceiling
    beside the peer."""
    if shutil.which("wrk") is None:
        raise ChildError("wrk is not installed (make bench installs it with apt)")
    work = settings.run_dir / "http"
    work.mkdir(exist_ok=True)
    results: dict[str, Any] = {
        "clients": settings.http_clients,
        "rounds": settings.http_rounds,
        "calls": {},
    }
    server = start_scopecast("devchain")(settings, "scopecast-http")
    replies: dict[str, Path] = {}
    try:
        port = server.wait_ready()
        client = HttpClient(port)
        chain = build_log_chain(client, 100, log, per_call=100)
        bodies = calls(client, chain["contract"], chain["last_block"])
        url = f"http://127.0.0.1:{port}/v3/dev"
        for name, body in bodies.items():
            encoded = json.dumps(body, separators=(",", ":")).encode()
            reply = _post(port, encoded)
            if name.startswith("eth_getLogs") and len(json.loads(reply)["result"]) != 100:
                raise ChildError(f"eth_getLogs returned {len(json.loads(reply)['result'])} logs")
            replies[name] = work / f"reply-{len(replies)}.json"
            replies[name].write_bytes(reply)
            script = _lua(encoded, work / f"call-{len(replies)}.lua")
            peer = NodePeer(settings, replies[name])
            try:
                ours, node = _alternate(
                    settings,
                    (url, server.pid),
                    (f"http://127.0.0.1:{peer.port}/", peer.proc.pid),
                    script,
                    name,
                )
            finally:
                peer.stop()
            results["calls"][name] = {"bytes": len(reply), "scopecast": ours, "node": node}
            log(
                f"  wrk {name}: scopecast {ours['req_per_s']:,}/s p99 {ours['p99_ms']} ms, "
                f"node http {node['req_per_s']:,}/s p99 {node['p99_ms']} ms"
            )
    finally:
        server.stop()
    block_reply = json.loads(replies["eth_getBlockByNumber latest"].read_bytes())
    result_file = work / "constant-result.json"
    result_file.write_text(json.dumps(block_reply["result"], separators=(",", ":")))
    constant = Child(
        "scopecast-http-constant",
        [PYTHON, "-m", "bench.server", "constant", "--reply", str(result_file)],
        cpus=settings.server_cpus,
        log_dir=settings.run_dir,
    )
    peer = NodePeer(settings, replies["eth_getBlockByNumber latest"])
    try:
        port = constant.wait_ready()
        script = work / "call-3.lua"  # eth_getBlockByNumber latest
        results["constant"], results["constant_node"] = _alternate(
            settings,
            (f"http://127.0.0.1:{port}/v3/dev", constant.pid),
            (f"http://127.0.0.1:{peer.port}/", peer.proc.pid),
            script,
            "constant reply",
        )
    finally:
        constant.stop()
        peer.stop()
    log(
        f"  wrk scopecast constant reply: {results['constant']['req_per_s']:,}/s beside node "
        f"http {results['constant_node']['req_per_s']:,}/s"
    )
    return results


def _post(port: int, body: bytes) -> bytes:
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("POST", "/v3/dev", body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        data = response.read()
        if response.status != 200:
            raise ChildError(f"POST {body[:80]!r}: HTTP {response.status}")
        return data
    finally:
        connection.close()
