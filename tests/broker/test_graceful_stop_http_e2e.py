"""An HTTP call still under way when the graceful stop's grace runs out gets an answer (503 with
-32000 "server shutting down", its own id), not an empty reply: its client can retry elsewhere.
Over a real socket, with a plug-in call that never returns (tests/support/misbehaving_adapter.py)
and a call timeout longer than the grace."""

from __future__ import annotations

import json

import httpx
import pytest
import trio

from broker.compose import ServeOptions
from broker.config import Config, ServerConfig
from tests.support.inprocess import running_broker
from tests.support.misbehaving_adapter import MisbehavingAdapter, installed
from tests.support.waiting import eventually

GRACE = 0.5
CONFIG = Config(
    server=ServerConfig(shutdown_grace=GRACE),
    networks={
        "dev": {"chain": "eip155:1337", "adapter": "devchain", "default": True, "block_time": 0},
        "bad": {"chain": "eip155:4242", "adapter": "misbehaving", "call_timeout": 60.0},
    },
)


async def test_a_call_cut_by_the_end_of_the_grace_is_answered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answers: list[httpx.Response] = []
    with installed(monkeypatch), trio.fail_after(30):
        async with running_broker(ServeOptions(), config=CONFIG) as node:
            adapter = next(n.adapter for n in node.broker.networks if n.name == "bad")
            assert isinstance(adapter, MisbehavingAdapter)
            body = {"jsonrpc": "2.0", "id": 77, "method": "misbehave_hang", "params": []}

            async def call() -> None:
                async with httpx.AsyncClient(timeout=20) as client:
                    answers.append(await client.post(node.http_url("dev", "bad"), json=body))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(call)
                await eventually(lambda: adapter.hanging == 1, "the call waits in the plug-in")
                node.broker.shutdown()  # the grace (0.5 s) runs out long before the call would
        (answer,) = answers
        assert answer.status_code == 503
        assert json.loads(answer.content) == {
            "jsonrpc": "2.0",
            "id": 77,
            "error": {"code": -32000, "message": "server shutting down"},
        }
        assert adapter.hanging == 0  # cancelled, not left behind
