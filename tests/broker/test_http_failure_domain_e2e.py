"""An HTTP connection is its own failure domain, over real sockets: a plug-in whose ``call_now``
raises, or gives what cannot be encoded, costs the request that asked (a -32603 answer naming the
adapter, logged once, from the plug-in boundary of broker.rpc.plugin_calls), and a plug-in fault that
escapes the dispatcher (its ``cache_epoch`` raising, asked before any call) reaches the HTTP
boundary of its connection and costs that connection only: the reactor task serving every parked
keep-alive connection goes on, and a bystander connection keeps getting answers. (That what
reaches the HTTP boundary also closes its connection is tests/broker/test_http_reactor.py's.)"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import msgspec
import pytest
import trio
import trio.testing

from adapters.base import ChainAdapter, NetworkSpec
from broker.app import Broker
from broker.compose import build_bare_broker
from broker.rpc.networks import Network, Networks

CHAIN = "faultprobe:1"


class RaisingCallNow(ChainAdapter):
    """Answers ``probe_ok`` at once; ``probe_raise`` raises in ``call_now``, and
    ``probe_unencodable`` gives there a value no JSON encoder takes."""

    name = "raising-call-now"

    def __init__(self) -> None:
        self.epoch_raises = False

    @classmethod
    def from_spec(cls, spec: NetworkSpec) -> RaisingCallNow:
        return cls()

    def chains(self) -> Sequence[str]:
        return [CHAIN]

    def methods(self, chain: str) -> frozenset[str]:
        return frozenset({"probe_ok", "probe_raise", "probe_unencodable"})

    def cache_epoch(self, chain: str) -> None:
        if self.epoch_raises:
            raise RuntimeError("cache_epoch failed on purpose")
        return None

    async def call(self, chain: str, method: str, params: msgspec.Raw) -> Any:
        await trio.lowlevel.checkpoint()
        return self.call_now(chain, method, params)

    def call_now(self, chain: str, method: str, params: msgspec.Raw) -> Any:
        if method == "probe_raise":
            raise RuntimeError("call_now failed on purpose")
        if method == "probe_unencodable":
            return object()
        return "ok"


class KeepAlive:
    """One keep-alive HTTP/1.1 connection, a request at a time."""

    def __init__(self, sock: trio.socket.SocketType) -> None:
        self.sock = sock
        self.buffer = bytearray()
        self.next_id = 0

    async def call(self, method: str) -> tuple[bytes, dict[str, Any]]:
        """The status line and JSON body of the answer to ``method``."""
        self.next_id += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method}).encode()
        await self.sock.send(
            b"POST /v3/dev HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        while b"\r\n\r\n" not in self.buffer:
            data = await self.sock.recv(65536)
            assert data, "closed before an answer"
            self.buffer += data
        head, _, _ = bytes(self.buffer).partition(b"\r\n\r\n")
        length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
        end = len(head) + 4 + length
        while len(self.buffer) < end:
            data = await self.sock.recv(65536)
            assert data, "closed in the middle of an answer"
            self.buffer += data
        answer = json.loads(bytes(self.buffer[len(head) + 4 : end]))
        del self.buffer[:end]
        return head.split(b"\r\n")[0], answer


@asynccontextmanager
async def serving() -> AsyncIterator[Broker]:
    broker = build_bare_broker(Networks([Network("probe", CHAIN, RaisingCallNow())]))
    async with trio.open_nursery() as nursery:
        await nursery.start(broker.serve, "127.0.0.1", 0)
        yield broker
        broker.shutdown()


@asynccontextmanager
async def connected(port: int) -> AsyncIterator[KeepAlive]:
    with trio.socket.socket() as sock:
        await sock.connect(("127.0.0.1", port))
        yield KeepAlive(sock)


async def test_a_plugin_fault_costs_its_request_or_connection_and_nothing_else(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with trio.fail_after(30):
        async with serving() as broker:
            assert broker.port is not None
            async with connected(broker.port) as bystander, connected(broker.port) as faulty:
                for conn in (bystander, faulty):  # both parked in the reactor from now on
                    assert (await conn.call("probe_ok"))[1]["result"] == "ok"

                # Raised in call_now: that call gets -32603, the connection goes on.
                _, raised = await faulty.call("probe_raise")
                assert raised["id"] == 2
                assert raised["error"]["code"] == -32603
                assert (await bystander.call("probe_ok"))[1]["result"] == "ok"
                assert (await faulty.call("probe_ok"))[1]["result"] == "ok"

                # A result that cannot be encoded: the plug-in boundary answers it, -32603
                # naming the adapter, logged once; the connection goes on.
                caplog.clear()
                with caplog.at_level(logging.ERROR):
                    _, unencodable = await faulty.call("probe_unencodable")
                    assert unencodable["error"]["code"] == -32603
                    assert "raising-call-now" in unencodable["error"]["message"]
                    assert (await faulty.call("probe_ok"))[1]["result"] == "ok"
                logged = [r for r in caplog.records if r.levelno >= logging.ERROR]
                assert len(logged) == 1, [r.getMessage() for r in caplog.records]
                assert "raising-call-now" in logged[0].getMessage()

                # What escapes the dispatcher reaches the HTTP boundary of its connection:
                # answered -32603 naming the adapter, logged once, that connection only.
                adapter = next(iter(broker.networks)).adapter
                assert isinstance(adapter, RaisingCallNow)
                caplog.clear()
                with caplog.at_level(logging.ERROR):
                    adapter.epoch_raises = True
                    try:
                        _, escaped = await faulty.call("probe_ok")
                    finally:
                        adapter.epoch_raises = False
                    assert escaped["error"]["code"] == -32603
                    assert "raising-call-now" in escaped["error"]["message"]
                    assert (await bystander.call("probe_ok"))[1]["result"] == "ok"
                logged = [r for r in caplog.records if r.exc_info]
                assert len(logged) == 1, [r.getMessage() for r in caplog.records]
                assert "raising-call-now" in logged[0].getMessage()
                assert "/v3/dev" not in caplog.text  # the path holds the API key: never logged

                # The same on a connection's own task (its first request is read there).
                async with connected(broker.port) as fresh:
                    adapter.epoch_raises = True
                    try:
                        _, first = await fresh.call("probe_ok")
                    finally:
                        adapter.epoch_raises = False
                    assert first["error"]["code"] == -32603
                    assert "raising-call-now" in first["error"]["message"]

                # The reactor task lived through it all: the bystander is still served from it.
                for _ in range(3):
                    assert (await bystander.call("probe_ok"))[1]["result"] == "ok"
                    await trio.testing.wait_all_tasks_blocked()
                    assert broker.http_reactor is not None
                    assert len(broker.http_reactor) >= 1
