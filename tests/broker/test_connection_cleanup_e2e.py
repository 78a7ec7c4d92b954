"""A connection that ends, however it ends, leaves nothing behind: 1,000 TCP resets raced against
subscribe calls (direct, and inside a session) end with no subscription and no connection held."""

from __future__ import annotations

import json
import random
import socket
import struct

import pytest
import trio

from broker.compose import ServeOptions
from broker.config import Config, KeyConfig
from tests.broker.test_subscriptions_e2e import mine
from tests.support.inprocess import RunningBroker, dapp, running_broker
from tests.support.rawws import RawWebSocket
from tests.support.waiting import eventually

DEV = "eip155:1337"
RESETS = 1_000
AT_ONCE = 25
KEY = "k1"
MAX_CONNECTIONS = 4 * AT_ONCE
LIMITED = Config(keys={KEY: KeyConfig(max_connections=MAX_CONNECTIONS)})

DIRECT = [{"jsonrpc": "2.0", "id": 1, "method": "eth_subscribe", "params": ["newHeads"]}]
IN_SESSION = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "wallet_createSession",
        "params": {
            "optionalScopes": {
                DEV: {"methods": ["eth_subscribe"], "notifications": ["eth_subscription"]}
            }
        },
    },
    {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "wallet_invokeMethod",
        "params": {
            "scope": DEV,
            "request": {"method": "eth_subscribe", "params": ["newHeads"]},
        },
    },
]


def gauge(node: RunningBroker, name: str) -> float:
    """The sum of a gauge's samples (all its labels)."""
    total = 0.0
    for family in node.broker.metrics.registry.collect():
        if family.name == name:
            total += sum(sample.value for sample in family.samples)
    return total


def reset(raw: RawWebSocket) -> None:
    """Close with SO_LINGER 0: the kernel sends a RST instead of a FIN."""
    raw.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    raw.close()


async def subscribe_then_reset(node: RunningBroker, calls: list[dict[str, object]]) -> None:
    while True:
        try:
            raw = await RawWebSocket.connect(node.port, f"/ws/v3/{KEY}")
            break
        except ConnectionError as exc:
            # The server may not have seen the last resets yet: their slots still count.
            if "429" not in str(exc):
                raise
            await trio.sleep(0.01)
    try:
        await raw.send_many([json.dumps(call) for call in calls])
        # Reset at once, after a checkpoint or after a few: the server meets the reset before,
        # while and after it handles the calls.
        for _ in range(random.randrange(4)):
            await trio.lowlevel.checkpoint()
    finally:
        reset(raw)


async def test_resets_racing_subscribe_calls_leave_nothing_behind() -> None:
    """No subscription (direct or in a session), and every connection slot of the key back."""
    with trio.fail_after(100):
        async with running_broker(ServeOptions(block_time=0), config=LIMITED) as node:
            await race_resets(node)


async def race_resets(node: RunningBroker) -> None:
    async with dapp(node.ws_url(KEY)) as bystander:
        await bystander.result("eth_subscribe", ["newHeads"])
        held_before = gauge(node, "scopecast_subscriptions")
        limit = trio.CapacityLimiter(AT_ONCE)

        async def one(index: int) -> None:
            async with limit:
                await subscribe_then_reset(node, IN_SESSION if index % 2 else DIRECT)

        async with trio.open_nursery() as nursery:
            for index in range(RESETS):
                nursery.start_soon(one, index)
        await eventually(
            lambda: gauge(node, "scopecast_connections") == 1, "the reset connections gone"
        )
        # Whatever a call still held when its connection went is released with it (no
        # wait: the gauges are read once every connection has ended).
        leaked = gauge(node, "scopecast_subscriptions") - held_before
        assert leaked == 0, f"{leaked:g} subscriptions of {RESETS} reset connections left"
        # The key's connection slots came back too: the bystander holds one, the others
        # can all be had again, and one more is refused.
        others = [
            await RawWebSocket.connect(node.port, f"/ws/v3/{KEY}")
            for _ in range(MAX_CONNECTIONS - 1)
        ]
        try:
            with pytest.raises(ConnectionError, match="429"):
                await RawWebSocket.connect(node.port, f"/ws/v3/{KEY}")
        finally:
            for other in others:
                other.close()
    await eventually(lambda: gauge(node, "scopecast_connections") == 0, "every connection gone")
    assert gauge(node, "scopecast_subscriptions") == 0


async def test_a_client_sending_when_the_server_closes_still_reads_the_close_reason(
    node: RunningBroker,
) -> None:
    """RFC 6455 7.1.1: after its close frame the server reads (and drops) what the client still
    sends until the client's close frame, instead of resetting a socket with bytes unread (a
    reset can destroy the close frame, and its resume cursor, before the client reads it)."""
    with trio.fail_after(30):
        conn = await RawWebSocket.connect(node.port, "/ws/v3/dev")
        try:
            await conn.call(
                {"jsonrpc": "2.0", "id": 1, "method": "eth_subscribe", "params": ["newHeads"]}
            )
            await conn.message()
            await mine(node)
            cursor = (await conn.message())["params"]["cursor"]
            closed = trio.Event()
            request = conn.masked(json.dumps({"jsonrpc": "2.0", "method": "x" * 8000}).encode())

            async def keep_sending() -> None:
                while not closed.is_set():
                    await conn.sock.send(request)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(keep_sending)
                await trio.sleep(0.05)  # the server is reading the stream of requests
                node.broker.shutdown()  # a graceful stop: 1012 and the cursor
                while (frame := await conn.frame()) is not None and frame[0] != 0x8:
                    pass
                closed.set()
            assert frame is not None
            assert conn.close_code == 1012
            assert frame[1][2:].decode() == cursor
            # A client that has not yet read the close frame goes on sending for a while, then
            # answers with its own: none of it is refused, and the server then ends the TCP
            # connection with a FIN (a reset would raise here).
            for _ in range(20):
                await conn.sock.send(request)
            await conn.send_text(frame[1][:2], opcode=0x8)
            assert await conn.frame() is None
        finally:
            conn.close()
