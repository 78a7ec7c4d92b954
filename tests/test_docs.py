"""Every example in README.md and docs/*.md is run against a real server, so the docs stay true.

The convention, for whoever writes an example:

- A fenced block is run unless the HTML comment ``<!-- doc-test: not run (why) -->`` stands on the
  line just before it (invisible on the rendered page). Every block is either run or says why not.
- ``sh`` blocks of ``curl`` commands to ``localhost:8545``: each is sent to a dev-chain server
  (``scopecast serve --block-time 0``); the reply must be a JSON-RPC success, and when the next
  block is ``json`` it is the reply shown, compared as JSON.
- ``json`` blocks of JSON-RPC requests (objects with ``jsonrpc``): sent in order over one
  WebSocket; when the next block holds replies (objects with ``result``), they are compared.
- ``json`` blocks of a bare call ``{"method", "params"}`` (the account methods): called over HTTP
  on the dev network, which signs directly for its dev accounts; the next ``json`` block, when
  it is not itself a call, is the result, compared.
- ``toml`` blocks: scopecast configuration, loaded and checked as ``--config`` would be.
- ``python`` blocks: run as a script with this interpreter (the ``make run`` venv's), talking to
  the server at ``127.0.0.1:8545`` (the test's port put in its place); they must exit 0, and
  every line they print that is JSON-RPC must hold no ``error``.
- In a shown answer, the string ``"…"`` stands for any value (an expiry, a block hash).
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
import trio_websocket

from broker.compose import ServeOptions
from broker.config import load_config, network_specs
from tests.support.inprocess import RunningBroker, running_broker
from tests.support.waiting import eventually

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"^( *)```(\w*)\n(.*?)^\1```", re.S | re.M)
_SKIP = re.compile(r"<!-- doc-test: not run \((.+?)\) -->\s*$")
ANY = "…"


@dataclass
class Block:
    path: Path
    line: int
    kind: str
    text: str
    skipped: str | None

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    text = path.read_text()
    found = []
    for match in _FENCE.finditer(text):
        indent = len(match.group(1))
        body = "\n".join(line[indent:] for line in match.group(3).splitlines())
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skip = _SKIP.search(before)
        line = text[: match.start()].count("\n") + 1
        found.append(Block(path, line, match.group(2), body, skip.group(1) if skip else None))
    return found


def all_blocks() -> list[Block]:
    return [block for path in DOCS for block in blocks(path)]


def matches(shown: Any, actual: Any) -> bool:
    """``actual`` is what ``shown`` shows, ``"…"`` standing for any value."""
    if shown == ANY:
        return True
    if isinstance(shown, dict) and isinstance(actual, dict):
        return shown.keys() == actual.keys() and all(matches(shown[k], actual[k]) for k in shown)
    if isinstance(shown, list) and isinstance(actual, list):
        return len(shown) == len(actual) and all(map(matches, shown, actual))
    return bool(shown == actual)


def json_values(text: str) -> list[Any]:
    """Every JSON value in ``text`` (a block may hold several, one after the other)."""
    decoder, values, index = json.JSONDecoder(), [], 0
    while index < len(text.rstrip()):
        while text[index].isspace():
            index += 1
        value, index = decoder.raw_decode(text, index)
        values.append(value)
    return values


def curl_calls(text: str) -> list[tuple[str, bytes]]:
    """(path, body) of each ``curl ... -d BODY`` command of a block (a quoted body may span lines)."""
    words = shlex.split(text.replace("\\\n", " "))
    commands: list[list[str]] = []
    for word in words:
        if word == "curl":
            commands.append([])
        elif not commands:
            raise AssertionError(f"not a curl command: {text!r}")
        else:
            commands[-1].append(word)
    calls = []
    for command in commands:
        url = next(w for w in command if "localhost:8545" in w)
        body = command[command.index("-d") + 1].encode()
        calls.append((url.split("localhost:8545", 1)[1], body))
    return calls


def test_every_block_is_run_or_says_why_not() -> None:
    runnable = {"sh", "json", "toml", "python"}
    unmarked = [b.where for b in all_blocks() if b.skipped is None and b.kind not in runnable]
    assert unmarked == [], "mark them <!-- doc-test: not run (why) -->"


def test_the_toml_examples_are_valid_configuration(tmp_path: Path) -> None:
    for block in all_blocks():
        if block.kind != "toml" or block.skipped:
            continue
        path = tmp_path / "example.toml"
        path.write_text(block.text)
        config = load_config(path)
        if config.networks:
            network_specs(config)  # every network names a chain and an adapter it can have


class Runner:
    def __init__(self, node: RunningBroker, http: httpx.AsyncClient) -> None:
        self.node = node
        self.http = http
        self.ws: trio_websocket.WebSocketConnection | None = None

    async def post(self, path: str, body: bytes) -> Any:
        reply = await self.http.post(
            f"{self.node.base}{path}", content=body, headers={"content-type": "application/json"}
        )
        return reply.json()

    async def over_ws(self, request: Any) -> Any:
        assert self.ws is not None
        await self.ws.send_message(json.dumps(request))
        while True:
            message = json.loads(await self.ws.get_message())
            if message.get("id") == request.get("id") and "method" not in message:
                return message

    async def run(self, block: Block, following: Block | None) -> list[str]:
        """The mismatches of one block (empty: it holds)."""
        shown = json_values(following.text) if following and following.kind == "json" else None
        if block.kind == "sh":
            replies = [await self.post(path, body) for path, body in curl_calls(block.text)]
            return self.compare(block, replies, shown, envelope=True)
        values = json_values(block.text)
        if all(isinstance(v, dict) and "jsonrpc" in v and "method" in v for v in values):
            replies = [await self.over_ws(v) for v in values]
            return self.compare(block, replies, shown, envelope=True)
        if all(isinstance(v, dict) and set(v) == {"method", "params"} for v in values):
            results = []
            for value in values:
                reply = await self.post(
                    "/v3/dev", json.dumps({"jsonrpc": "2.0", "id": 1, **value}).encode()
                )
                if "error" in reply:
                    return [f"{block.where}: {value['method']} failed: {reply['error']}"]
                results.append(reply["result"])
            is_call = shown is not None and all(
                isinstance(v, dict) and "method" in v for v in shown
            )
            return self.compare(block, results, None if is_call else shown, envelope=False)
        return [f"{block.where}: a json block that is neither requests nor calls (mark it)"]

    @staticmethod
    def compare(
        block: Block, replies: list[Any], shown: list[Any] | None, *, envelope: bool
    ) -> list[str]:
        problems = []
        if envelope:
            problems += [f"{block.where}: error {r['error']}" for r in replies if "error" in r]
        if shown is not None and not (
            len(shown) == len(replies) and all(map(matches, shown, replies))
        ):
            problems.append(f"{block.where}: shown {shown!r}\n  got {replies!r}")
        return problems


async def test_the_examples_answer_as_shown() -> None:
    problems: list[str] = []
    with trio.fail_after(120):
        # As `make run` serves (blocks and slots with demo traffic; every 2 s there, faster here),
        # after the demo has run a while: every output shown is what a reader of the README gets
        # from the command it tells them to run, whenever they run it.
        options = ServeOptions(block_time=DEMO_INTERVAL)
        async with running_broker(options) as node, httpx.AsyncClient() as http:
            await _demo_traffic_ran(node)
            runner = Runner(node, http)
            async with trio_websocket.open_websocket_url(
                node.ws_url(), extra_headers=[(b"Origin", b"https://docs.example")]
            ) as ws:
                runner.ws = ws
                for path in DOCS:
                    found = blocks(path)
                    answers: set[int] = set()
                    for index, block in enumerate(found):
                        if block.skipped or block.kind not in ("sh", "json") or index in answers:
                            continue
                        following = found[index + 1] if index + 1 < len(found) else None
                        if (
                            following is not None
                            and following.skipped is None
                            and following.kind == "json"
                            and not _is_request(following)
                        ):
                            answers.add(index + 1)
                        problems += await runner.run(
                            block, following if index + 1 in answers else None
                        )
            for path in DOCS:
                for block in blocks(path):
                    if block.kind == "python" and not block.skipped:
                        problems += await run_python(block, node.port)
            # The signed transaction docs/account-methods.md shows is accepted as it is, as it says.
            raw = next(
                v["raw"]
                for b in blocks(ROOT / "docs" / "account-methods.md")
                if b.kind == "json" and '"raw"' in b.text
                for v in json_values(b.text)
            )
            sent = await node.rpc("eth_sendRawTransaction", [raw])
            if "error" in sent:
                problems.append(f"docs/account-methods.md: its raw transaction: {sent['error']}")
    assert problems == [], "\n".join(problems)


async def run_python(block: Block, port: int) -> list[str]:
    """The mismatches of a Python example run against the server on ``port``."""
    script = block.text.replace("127.0.0.1:8545", f"127.0.0.1:{port}")
    done = None
    with trio.move_on_after(30):
        done = await trio.run_process(
            [sys.executable, "-c", script], capture_stdout=True, capture_stderr=True, check=False
        )
    if done is None:
        return [f"{block.where}: still running after 30 s"]
    if done.returncode != 0:
        return [f"{block.where}: exited {done.returncode}: {done.stderr.decode()}"]
    lines = done.stdout.decode().splitlines()
    replies = [json.loads(line) for line in lines if line.startswith('{"jsonrpc"')]
    if not replies:
        return [f"{block.where}: printed no JSON-RPC message: {lines}"]
    return [f"{block.where}: error {r['error']}" for r in replies if "error" in r]


#: Seconds between the demo's blocks and slots in the examples' server (`make run`: 2).
DEMO_INTERVAL = 0.2
DEMO_BLOCKS = 6


async def _demo_traffic_ran(node: RunningBroker) -> None:
    """Until both dev chains have made :data:`DEMO_BLOCKS` blocks (slots) of demo traffic."""

    async def heights() -> bool:
        block = int((await node.rpc("eth_blockNumber", []))["result"], 16)
        slot = (await node.rpc("getSlot", [], network="solana"))["result"]
        return block >= DEMO_BLOCKS and slot >= DEMO_BLOCKS

    await eventually(heights, f"{DEMO_BLOCKS} blocks and slots of demo traffic")


def _is_request(block: Block) -> bool:
    values = json_values(block.text)
    return all(isinstance(v, dict) and "method" in v for v in values)


@pytest.mark.parametrize(
    ("shown", "actual", "expected"),
    [
        ({"a": ANY, "b": [1, 2]}, {"a": "x", "b": [1, 2]}, True),
        ({"a": ANY}, {"a": "x", "b": 1}, False),
        ([1, ANY], [1, {"deep": True}], True),
        ("0x1", "0x2", False),
    ],
)
def test_the_comparison(shown: Any, actual: Any, expected: bool) -> None:
    assert matches(shown, actual) is expected
