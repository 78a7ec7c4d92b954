"""Hostile input against a live web process while the soak runs: Hypothesis strategies for JSON-RPC
envelopes (well-formed or not), CAIP-25 session params, log filters and raw byte garbage, sent as
WebSocket text frames, as raw bytes on a WebSocket (broken framing) and as HTTP POST bodies.

Counted: inputs sent; well-formed requests (a JSON object with ``"jsonrpc": "2.0"``, a string or
integer ``id`` and a string ``method``) and those left without a reply carrying their id (within 30 s,
or the connection closed before it); crashes (the web process exits, counted by the soak). A
fuzzing connection the server closes (on garbage) is opened again: that is the server's right. The
methods exclude those that sign, wait for an operator's approval or change the dev chain.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import warnings
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

import hypothesis
import msgspec
import trio
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from soak.http_load import HttpConnection
from tests.support.rawws import RawWebSocket

METHODS = [
    "eth_blockNumber",
    "eth_chainId",
    "eth_getBalance",
    "eth_getBlockByNumber",
    "eth_getBlockByHash",
    "eth_getLogs",
    "eth_call",
    "eth_estimateGas",
    "eth_getCode",
    "eth_getStorageAt",
    "eth_getTransactionCount",
    "eth_getTransactionReceipt",
    "eth_feeHistory",
    "eth_newFilter",
    "eth_newBlockFilter",
    "eth_getFilterChanges",
    "eth_getFilterLogs",
    "eth_uninstallFilter",
    "eth_subscribe",
    "eth_unsubscribe",
    "net_version",
    "web3_clientVersion",
    "wallet_createSession",
    "wallet_getSession",
    "wallet_revokeSession",
    "wallet_invokeMethod",
]
WELL_FORMED_TIMEOUT = 30.0
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "scopecast-soak"
_lot_decoder = msgspec.msgpack.Decoder(list[tuple[str, bytes]])
BATCH = 5000
PER_EXAMPLE = 10
LANES = 16  # inputs in flight at once (each lane waits for the replies to its well-formed ones)

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_hex = st.integers(min_value=0, max_value=2**70).map(hex) | st.text(
    "0123456789abcdefx", max_size=70
)
_block = st.sampled_from(["latest", "earliest", "pending", "safe", "finalized"]) | _hex | _json
_filter = st.fixed_dictionaries(
    {},
    optional={
        "fromBlock": _block,
        "toBlock": _block,
        "blockHash": _hex,
        "address": _hex | st.lists(_hex, max_size=3),
        "topics": st.lists(st.none() | _hex | st.lists(_hex, max_size=3), max_size=5),
    },
)
_chain = st.sampled_from(["eip155:1337", "eip155:1", "eip155", "bip122:000", ""]) | st.text(
    max_size=16
)
_scope = st.fixed_dictionaries(
    {},
    optional={
        "methods": st.lists(st.sampled_from(METHODS) | st.text(max_size=12), max_size=4),
        "notifications": st.lists(st.sampled_from(["eth_subscription"]) | st.text(), max_size=2),
        "accounts": st.lists(st.text(max_size=60), max_size=2),
        "references": st.lists(st.text(max_size=10), max_size=2),
    },
)
_caip25 = st.fixed_dictionaries(
    {},
    optional={
        "optionalScopes": st.dictionaries(_chain, _scope, max_size=3) | _json,
        "requiredScopes": st.dictionaries(_chain, _scope, max_size=2) | _json,
        "sessionProperties": _json,
    },
)
_params = st.one_of(
    st.lists(_json, max_size=4),
    st.tuples(_block, st.booleans()).map(list),
    st.tuples(_filter).map(list),
    st.tuples(st.sampled_from(["newHeads", "logs", "newPendingTransactions", "x"]), _filter).map(
        list
    ),
    _caip25,
    st.fixed_dictionaries(
        {
            "scope": _chain,
            "request": st.fixed_dictionaries(
                {"method": st.sampled_from(METHODS) | st.text(max_size=12)},
                optional={"params": st.lists(_json, max_size=3) | st.tuples(_filter).map(list)},
            ),
        }
    ),
    _json,
)
_id = st.integers(min_value=-(2**63), max_value=2**63) | st.text(max_size=20)
_envelope = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0"), "id": _id, "method": st.sampled_from(METHODS)},
    optional={"params": _params},
)
_broken = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0", 2]) | _json,
        "id": _json,
        "method": st.sampled_from(METHODS) | _json,
        "params": _params,
    },
)
_text = st.one_of(
    _envelope.map(json.dumps),
    _broken.map(json.dumps),
    st.lists(_envelope, max_size=5).map(json.dumps),  # batches
    st.text(max_size=200),
)
INPUTS = st.one_of(
    st.tuples(st.just("ws"), _text.map(str.encode)),
    st.tuples(st.just("http"), _text.map(str.encode)),
    st.tuples(st.just("ws"), st.binary(max_size=200)),
    st.tuples(st.just("http"), st.binary(max_size=200)),
    st.tuples(st.just("raw"), st.binary(min_size=1, max_size=200)),
)


def generate(count: int, batch: int) -> list[tuple[str, bytes]]:
    """``count`` inputs drawn from :data:`INPUTS` (generation only: nothing to shrink), the
    ``batch``-th lot of a run (each lot its own seed), ``PER_EXAMPLE`` to a Hypothesis example
    (its machinery per example costs several times the drawing of one input)."""
    found: list[tuple[str, bytes]] = []

    @seed(batch)
    @settings(
        max_examples=-(-count // PER_EXAMPLE),
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(st.lists(INPUTS, min_size=PER_EXAMPLE, max_size=PER_EXAMPLE))
    def collect(values: list[tuple[str, bytes]]) -> None:
        found.extend(values)

    collect()
    return found[:count]


def lots(inputs: int) -> list[tuple[int, int]]:
    """The lots (number, size) ``inputs`` inputs are drawn in."""
    return [
        (batch, min(BATCH, inputs - start)) for batch, start in enumerate(range(0, inputs, BATCH))
    ]


def cached(count: int, batch: int) -> list[tuple[str, bytes]]:
    """:func:`generate`, kept on disk between runs: Hypothesis draws about 300 inputs a second, so
    100,000 take minutes of CPU the soak's machine is short of. Keyed by the strategies (their
    repr), Hypothesis's version, the lot and the count; the draws are seeded, so a cached lot is
    the lot that would be drawn again."""
    with warnings.catch_warnings():  # "Generating overly large repr": once a lot, wanted here
        warnings.simplefilter("ignore")
        strategies = repr(INPUTS)
    key = hashlib.sha256(
        f"{strategies}/{PER_EXAMPLE}/{hypothesis.__version__}/{batch}/{count}".encode()
    ).hexdigest()[:16]
    path = CACHE / f"fuzz-{batch}-{count}-{key}.msgpack"
    with suppress(OSError, msgspec.DecodeError):
        return [(kind, data) for kind, data in _lot_decoder.decode(path.read_bytes())]
    found = generate(count, batch)
    with suppress(OSError):
        CACHE.mkdir(parents=True, exist_ok=True)
        part = path.with_suffix(f".{os.getpid()}.part")  # the --prepare process may draw it too
        part.write_bytes(msgspec.msgpack.encode(found))
        part.replace(path)
    return found


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def well_formed(data: bytes) -> Any:
    """The id of a well-formed single request, else None."""
    try:
        message = json.loads(data, parse_constant=_not_json)  # NaN, Infinity: Python's, not JSON
        # Strings with unpaired surrogate escapes ("\\ud800") are valid JSON syntax but not text
        # (RFC 8259 8.2): the server answers them -32700, id null, like any other unreadable body.
        json.dumps(message, ensure_ascii=False).encode()
    except (ValueError, UnicodeEncodeError):
        return None
    if (
        isinstance(message, dict)
        and message.get("jsonrpc") == "2.0"
        and isinstance(message.get("id"), (int, str))
        and not isinstance(message.get("id"), bool)
        and isinstance(message.get("method"), str)
    ):
        return message["id"]
    return None


class Fuzzer:
    def __init__(self, port: int, inputs: int, log: Callable[[str], None]) -> None:
        self.port = port
        self.inputs = inputs
        self.log = log
        self.sent = 0
        self.well_formed = 0
        self.unanswered: list[str] = []
        self.closed_by_server = 0
        self.refused_handshakes: list[str] = []
        self.http_status: dict[int, int] = {}
        self.kinds: dict[str, int] = {}
        self.finished = False

    async def run(self, lanes: int = LANES) -> None:
        """Send every input over ``lanes`` lanes at once, each with connections of its own."""
        send, receive = trio.open_memory_channel[tuple[str, bytes]](BATCH)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._generate, send)
            async with receive:
                async with trio.open_nursery() as sending:
                    for _ in range(lanes):
                        sending.start_soon(self._lane, receive.clone())
            self.finished = True
            nursery.cancel_scope.cancel()

    async def _lane(self, receive: trio.MemoryReceiveChannel[tuple[str, bytes]]) -> None:
        """Well-formed requests on a connection of their own (waiting for each reply), the rest
        on another one, read by a task of its own and opened again once closed."""
        http = HttpConnection(self.port)
        clean: RawWebSocket | None = None
        dirty: RawWebSocket | None = None
        try:
            async with receive, trio.open_nursery() as nursery:
                async for kind, data in receive:
                    self.kinds[kind] = self.kinds.get(kind, 0) + 1
                    self.sent += 1
                    if kind == "http":
                        await self._http(http, data)
                    elif kind == "ws" and well_formed(data) is not None:
                        clean = clean or await self._connect()
                        if clean is None:
                            self.unanswered.append(f"ws {data[:80]!r}: no connection")
                        elif not await self._request(clean, data):
                            clean.close()
                            clean = None
                    else:
                        if dirty is None or dirty.close_code is not None:
                            if dirty is not None:
                                dirty.close()
                            dirty = await self._connect()
                            if dirty is None:
                                continue
                            nursery.start_soon(self._drain, dirty)
                        try:
                            if kind == "raw":
                                await dirty.sock.send(data)
                            else:
                                await dirty.send_text(data)
                        except OSError:
                            dirty.close_code = 1006
                nursery.cancel_scope.cancel()
        finally:
            for conn in (clean, dirty):
                if conn is not None:
                    conn.close()
            with trio.CancelScope(shield=True):
                await http.aclose()

    async def _generate(self, send: trio.MemorySendChannel[tuple[str, bytes]]) -> None:
        """Lots of BATCH inputs, each generated in a thread while the previous one is sent."""
        async with send:
            for batch, count in lots(self.inputs):
                for value in await trio.to_thread.run_sync(cached, count, batch):
                    await send.send(value)

    async def _connect(self) -> RawWebSocket | None:
        """A fuzzing connection; a refused or cut handshake is counted (a finding), not fatal."""
        try:
            return await RawWebSocket.connect(self.port, "/ws/v3/dev")
        except (OSError, ConnectionError) as exc:
            self.refused_handshakes.append(repr(exc))
            return None

    async def _drain(self, ws: RawWebSocket) -> None:
        """Read (and drop) what the server sends on the hostile connection until it closes it."""
        try:
            while (frame := await ws.frame()) is not None and frame[0] != 0x8:
                if frame[0] == 0x9:
                    await ws.send_text(frame[1], opcode=0xA)
        except (OSError, trio.ClosedResourceError):
            pass
        self.closed_by_server += 1
        ws.close_code = ws.close_code or 1006

    async def _http(self, http: HttpConnection, data: bytes) -> None:
        wanted = well_formed(data)
        self.well_formed += wanted is not None
        try:
            with trio.fail_after(WELL_FORMED_TIMEOUT):
                status, body = await http.post("/v3/dev", data)
        except (OSError, ConnectionError, trio.TooSlowError) as exc:
            await http.aclose()
            if wanted is not None:
                self.unanswered.append(f"http {data[:80]!r}: {exc!r}")
            return
        self.http_status[status] = self.http_status.get(status, 0) + 1
        if wanted is None:
            return
        try:
            reply = json.loads(body)
        except ValueError:
            reply = None
        if not (isinstance(reply, dict) and reply.get("id") == wanted):
            self.unanswered.append(f"http {data[:80]!r}: {status} {body[:80]!r}")

    async def _request(self, ws: RawWebSocket, data: bytes) -> bool:
        """A well-formed request and its reply; False if the connection ended without one."""
        wanted = well_formed(data)
        self.well_formed += 1
        try:
            await ws.send_text(data)
            with trio.move_on_after(WELL_FORMED_TIMEOUT):
                while (frame := await ws.frame()) is not None and frame[0] != 0x8:
                    if frame[0] == 0x9:
                        await ws.send_text(frame[1], opcode=0xA)
                        continue
                    try:
                        reply = json.loads(frame[1])
                    except ValueError:
                        continue
                    if isinstance(reply, dict) and reply.get("id") == wanted:
                        return True
        except OSError:
            pass
        self.unanswered.append(f"ws {data[:80]!r} (close {ws.close_code})")
        return False

    def figures(self) -> dict[str, Any]:
        """What this fuzzer counted (the soak adds crashes and bystanders disconnected)."""
        return {
            "inputs": self.sent,
            "inputs_asked": self.inputs,
            "well_formed": self.well_formed,
            "unanswered": len(self.unanswered),
            "unanswered_examples": self.unanswered[:5],
            "kinds": self.kinds,
            "http_status": self.http_status,
            "fuzz_connections_closed_by_server": self.closed_by_server,
            "handshakes_refused": len(self.refused_handshakes),
            "handshake_refusals": self.refused_handshakes[:5],
            "finished": self.finished,
        }


async def _report(fuzzer: Fuzzer, out: Path, every: float) -> None:
    while True:
        _write(fuzzer, out)
        await trio.sleep(every)


def _write(fuzzer: Fuzzer, out: Path) -> None:
    part = out.with_suffix(".part")
    part.write_text(json.dumps(fuzzer.figures()))
    part.replace(out)


def main(argv: list[str] | None = None) -> None:
    """``python -m soak.fuzz --port P --inputs N --out F``: the fuzzer as a process of its own (the
    soak's harness is busy with its clients), writing its figures to F every second and at the
    end (SIGINT stops it early)."""
    cli = argparse.ArgumentParser(prog="python -m soak.fuzz", description=__doc__)
    cli.add_argument("--port", type=int, help="the web process to fuzz")
    cli.add_argument("--inputs", type=int, required=True)
    cli.add_argument("--out", type=Path, help="JSON figures, written as it goes")
    cli.add_argument(
        "--prepare", action="store_true", help="only draw the inputs into the cache, send nothing"
    )
    args = cli.parse_args(argv)
    if args.prepare:
        # Last lot first: the fuzzer draws from the first one on, whatever is not cached yet.
        for batch, count in reversed(lots(args.inputs)):
            cached(count, batch)
        return
    if args.port is None or args.out is None:
        cli.error("--port and --out are needed to fuzz")
    fuzzer = Fuzzer(args.port, args.inputs, print)

    async def run() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_report, fuzzer, args.out, 1.0)
            await fuzzer.run()
            nursery.cancel_scope.cancel()

    try:
        trio.run(run)
    except KeyboardInterrupt:
        pass
    finally:
        _write(fuzzer, args.out)


if __name__ == "__main__":
    main(sys.argv[1:])
