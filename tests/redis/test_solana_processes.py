"""Solana across real OS processes: a ``scopecast serve`` Solana dev chain producing a slot every
0.4 s plays the node, two workers (``scopecast worker``) follow it with the ``solana-upstream``
adapter, two web processes (``serve --role web``) and a redis-server. Clients on both web
processes hold ``slotSubscribe`` and ``accountSubscribe`` on an account receiving transfers,
directly on ``/solana/ws/v3/<KEY>`` and through a session's ``wallet_invokeMethod``. The account
is watched only by those web processes' subscriptions: the worker reads it because they share
their interests through Redis, before the first transfer is sent (right after the subscribe
calls were answered). The leading worker is killed with ``kill -9`` while transfers go on; the
standby resumes after the last slot on the stream. Every client must see every slot once, in
order, and every change of the account once, judged against the node's own ``getBlocks`` and
transactions."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import trio

from adapters.solana import dev_chain_id
from tests.adapters.solana_upstream.nodes import (
    FAST,
    NETWORK,
    fresh_address,
    node_result,
    signed_transfer,
)
from tests.redis.test_deployment import redis_process  # noqa: F401 - a fixture
from tests.redis.worker_process import WorkerProcess
from tests.support.processes import ScopecastProcess, start_scopecast
from tests.support.rawws import RawWebSocket
from tests.support.redis_server import RedisServer, redis_command
from tests.support.waiting import eventually

CHAIN = dev_chain_id()
LEASE = f"scopecast:lease:{{{CHAIN}}}"
LAMPORTS = 1_000_000  # each transfer adds its own amount above it
#: Transfers before the leader is killed, while no worker leads, and once the standby leads.
BEFORE, DURING, AFTER = 3, 3, 3


@dataclass
class Client:
    """One subscriber: the slots and the account's (slot, lamports) it saw, in order."""

    index: int
    session: bool
    slots: list[int] = field(default_factory=list)
    changes: list[tuple[int, int]] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def who(self) -> str:
        return f"client {self.index} ({'session' if self.session else 'direct'})"

    def take(self, message: dict[str, Any]) -> None:
        if self.session:
            assert message["method"] == "wallet_notify", message
            message = message["params"]["notification"]
        result = message["params"]["result"]
        if message["method"] == "slotNotification":
            self.slots.append(result["slot"])
        elif message["method"] == "accountNotification":
            self.changes.append((result["context"]["slot"], result["value"]["lamports"]))

    async def call(self, ws: RawWebSocket, method: str, params: Any) -> Any:
        call_id = next(self._ids)
        await ws.call({"jsonrpc": "2.0", "id": call_id, "method": method, "params": params})
        while True:
            message = await self._message(ws)
            assert message is not None, f"closed while calling {method}"
            if message.get("id") == call_id:
                assert "error" not in message, message
                return message["result"]
            self.take(message)

    @staticmethod
    async def _message(ws: RawWebSocket) -> dict[str, Any] | None:
        while (frame := await ws.frame()) is not None:
            opcode, payload = frame
            if opcode == 0x9:
                await ws.send_text(payload, opcode=0xA)
            elif opcode == 0x1:
                message: dict[str, Any] = json.loads(payload)
                return message
            elif opcode == 0x8:
                return None
        return None

    async def run(
        self,
        web: ScopecastProcess,
        recipient: str,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Subscribe on ``web``, then take every notification until cancelled."""
        path = "/ws/v3/dev" if self.session else f"/{NETWORK}/ws/v3/dev"
        ws = await RawWebSocket.connect(web.port, path, origin=f"https://dapp{self.index}.example")
        try:
            calls = [
                ("slotSubscribe", []),
                ("accountSubscribe", [recipient, {"encoding": "base64"}]),
            ]
            if self.session:
                scope = {
                    "methods": ["slotSubscribe", "accountSubscribe"],
                    "notifications": ["slotNotification", "accountNotification"],
                }
                await self.call(ws, "wallet_createSession", {"optionalScopes": {CHAIN: scope}})
                for method, params in calls:
                    request = {"scope": CHAIN, "request": {"method": method, "params": params}}
                    answer = await self.call(ws, "wallet_invokeMethod", request)
                    assert isinstance(answer["result"]["result"], int), answer
            else:
                for method, params in calls:
                    assert isinstance(await self.call(ws, method, params), int)
            task_status.started()
            while (message := await self._message(ws)) is not None:
                self.take(message)
            raise AssertionError(f"{self.who}: the web process closed the connection")
        finally:
            ws.close()


@dataclass
class Fleet:
    node: ScopecastProcess
    redis: RedisServer
    workers: list[WorkerProcess]
    webs: list[ScopecastProcess]


@pytest.fixture
async def fleet(
    tmp_path: Path,
    redis_process: RedisServer,  # noqa: F811 - the fixture imported above
) -> AsyncIterator[Fleet]:
    async with trio.open_nursery() as nursery:
        with trio.fail_after(240):  # five processes: slow to start on a busy machine
            node = await start_scopecast(nursery, "--block-time", "0.4")
            options = "".join(f"{name} = {value}\n" for name, value in FAST.items())
            config = tmp_path / "scopecast.toml"
            config.write_text(
                f"[networks.{NETWORK}]\n"
                f'chain = "{CHAIN}"\n'
                f'upstreams = [{{http = "{node.http_url(network=NETWORK)}", '
                f'ws = "{node.ws_url(network=NETWORK)}"}}]\n' + options
            )
            common = ["--config", str(config), "--redis-url", redis_process.url]
            workers = [WorkerProcess(nursery, [*common, "--lease-ttl", "1.5"]) for _ in range(2)]
            # The first leads before the second starts, so that the test knows which one leads.
            await workers[0].start()
            await workers[0].wait_for("leading; publishing")
            webs = [ScopecastProcess(nursery, ["--role", "web", *common]) for _ in range(2)]
            async with trio.open_nursery() as starting:
                starting.start_soon(workers[1].start)
                for web in webs:
                    starting.start_soon(web.start)
            await workers[1].wait_for("standing by")
        yield Fleet(node, redis_process, workers, webs)
        nursery.cancel_scope.cancel()


class Sender:
    """Transfers to ``recipient`` through the node itself, each of its own amount, each waited
    for until it landed; their signatures in order."""

    def __init__(self, node: ScopecastProcess, recipient: str) -> None:
        self.node = node
        self.recipient = recipient
        self.signatures: list[str] = []

    async def send(self, count: int) -> None:
        url = self.node.http_url(network=NETWORK)
        for _ in range(count):
            amount = LAMPORTS + len(self.signatures)
            signature, tx = await signed_transfer(url, self.recipient, amount)
            await node_result(self.node, "sendTransaction", tx, {"encoding": "base64"})
            self.signatures.append(signature)
            landed = (await self._status(signature))["slot"]
            # The next one in a later slot: each transfer is a change of its own.
            await self._status(signature, after=landed)

    async def _status(self, signature: str, *, after: int = -1) -> dict[str, Any]:
        """The transfer's status once it landed (a timed node lands it within a slot), asked
        until the node's context is past slot ``after``."""
        while True:
            found = await node_result(self.node, "getSignatureStatuses", [signature])
            status: dict[str, Any] | None = found["value"][0]
            if status is not None and found["context"]["slot"] > after:
                return status
            await trio.sleep(0.05)

    async def changes(self) -> list[tuple[int, int]]:
        """The account's (slot, lamports) after each slot that changed it, as the node's own
        transactions say."""
        after: dict[int, int] = {}
        for signature in self.signatures:
            tx = await node_result(self.node, "getTransaction", signature, {"encoding": "json"})
            keys = tx["transaction"]["message"]["accountKeys"]
            after[tx["slot"]] = tx["meta"]["postBalances"][keys.index(self.recipient)]
        return sorted(after.items())


async def lease_holder_pid(redis: RedisServer) -> int:
    reply = await redis_command(redis.port, "GET", LEASE)
    value = reply.split(b"\r\n")[1].decode()  # host:pid/token
    return int(value.split("/")[0].rsplit(":", 1)[1])


async def test_kill_9_of_the_leading_worker_loses_no_slot_and_no_account_change(
    fleet: Fleet,
) -> None:
    sender = Sender(fleet.node, fresh_address())
    clients = [Client(i, session=i % 2 == 1) for i in range(4)]
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            for client in clients:
                await nursery.start(client.run, fleet.webs[client.index // 2], sender.recipient)
            # At once: the account is read because the subscribe calls' answers came after the
            # web processes shared it.
            await sender.send(BEFORE)
            await eventually(
                lambda: all(len(c.changes) == BEFORE for c in clients),
                "every client sees the first transfers",
            )
            leader = await lease_holder_pid(fleet.redis)
            dead, standby = fleet.workers
            assert dead.pid == leader
            await dead.kill()
            await sender.send(DURING)  # no worker leads for a while
            await standby.wait_for("resuming after slot")
            await sender.send(AFTER)
            last = await node_result(fleet.node, "getSlot")
            # A slot's account changes come before the next slot's notification: once a client
            # has the slots after the last transfer's, it has every change it will ever get.
            await eventually(
                lambda: all(c.slots and c.slots[-1] >= last + 2 for c in clients),
                "every client sees the slots after the last transfer",
            )
            nursery.cancel_scope.cancel()
    print(
        f"{len(clients)} clients, each {len(clients[0].slots)} slots and "
        f"{len(clients[0].changes)} account changes; the standby: "
        + "; ".join(line.split(": ", 2)[-1] for line in standby.lines if "resuming after" in line)
    )
    expected = await sender.changes()
    assert len(expected) == BEFORE + DURING + AFTER  # each transfer landed in a slot of its own
    for client in clients:
        slots = client.slots
        assert slots == list(range(slots[0], slots[-1] + 1)), (client.who, slots)
        assert slots == await node_result(fleet.node, "getBlocks", slots[0], slots[-1])
        assert client.changes == expected, client.who
