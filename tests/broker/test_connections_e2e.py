"""Connections that misbehave harm nobody else; slow consumers are closed; nothing leaks."""

import gc
import json
import tracemalloc
from typing import Any

import httpx
import pytest
import trio
import trio.testing

from broker.compose import ServeOptions
from broker.config import Config, ServerConfig
from broker.transport import frames
from tests.support.inprocess import RunningBroker, dapp, running_broker
from tests.support.rawws import RawWebSocket
from tests.support.waiting import eventually


def memory_snapshot() -> tracemalloc.Snapshot:
    return tracemalloc.take_snapshot().filter_traces(
        (tracemalloc.Filter(False, tracemalloc.__file__),)
    )


def count_tasks() -> int:
    def walk(task: trio.lowlevel.Task) -> int:
        return 1 + sum(
            walk(child) for nursery in task.child_nurseries for child in nursery.child_tasks
        )

    return walk(trio.lowlevel.current_root_task())


async def test_a_closed_connection_never_reads_the_bytes_of_the_one_after_it(
    node: RunningBroker,
) -> None:
    """A WebSocket woken to read, then closed before its task ran, must not read from its fd
    number: the next connection accepted may have it already (found as a handshake that never
    got its answer, after a 1007 close, about once in 40 with the HTTP reactor)."""
    async with dapp(node.ws_url()) as bystander:
        for attempt in range(100):
            raw = await RawWebSocket.connect(node.port, "/ws/v3/dev")
            await raw.send_text(b"\xff\xfe\xfd")  # not UTF-8: the server closes with 1007
            assert await raw.message() is None
            assert raw.close_code == 1007
            raw.close()
            with trio.fail_after(5):  # a hang here: its handshake was read by the closed one
                after = await RawWebSocket.connect(node.port, "/ws/v3/dev")
            await after.call({"jsonrpc": "2.0", "id": attempt, "method": "eth_chainId"})
            assert await after.message() == {"jsonrpc": "2.0", "id": attempt, "result": "0x539"}
            after.close()
        assert await bystander.result("eth_chainId", []) == "0x539"


async def test_garbage_keeps_the_connection_and_bad_frames_close_only_their_own(
    node: RunningBroker,
) -> None:
    with trio.fail_after(30):
        async with dapp(node.ws_url()) as bystander:
            raw = await RawWebSocket.connect(node.port, "/ws/v3/dev")
            # Not JSON: a parse error. JSON that is not a request: an invalid request, one error
            # per element of a batch.
            for junk, codes in (
                ("not json", -32700),
                ("{", -32700),
                ("\u00e9\u00e9", -32700),
                ("[]", -32600),
                ("[1,2]", [-32600, -32600]),
                ('{"jsonrpc":"2.0","id":1}', -32600),
                ("1", -32600),
                ("null", -32600),
            ):
                await raw.send_text(junk)
                reply = await raw.message()
                assert reply is not None
                if isinstance(reply, list):
                    got: int | list[int] = [e["error"]["code"] for e in reply]
                else:
                    got = reply["error"]["code"]
                assert got == codes, (junk, reply)
            await raw.send_text(
                b'{"jsonrpc":"2.0","id":5,"method":"eth_chainId"}', opcode=0x2
            )  # binary JSON
            assert await raw.message() == {"jsonrpc": "2.0", "id": 5, "result": "0x539"}
            await raw.send_text(b"\xff\xfe\xfd")  # a text frame that is not UTF-8: protocol error
            assert await raw.message() is None
            assert raw.close_code == 1007
            raw.close()

            big = await RawWebSocket.connect(node.port, "/ws/v3/dev")
            await big.send_text("[" + " " * (1024 * 1024 + 10) + "]")
            assert await big.message() is None
            assert big.close_code == frames.CLOSE_TOO_BIG
            big.close()

            # a client that sends a request and vanishes before the reply
            for _ in range(20):
                gone = await RawWebSocket.connect(node.port, "/ws/v3/dev")
                await gone.call(
                    {
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "eth_getBlockByNumber",
                        "params": ["latest", True],
                    }
                )
                gone.close()
            # a client that dies in the middle of a frame
            torn = await RawWebSocket.connect(node.port, "/ws/v3/dev")
            await torn.sock.send(b"\x81\xfe\x10\x00abcd")
            torn.close()

            assert await bystander.result("eth_chainId", []) == "0x539"


async def test_http_errors_leave_keepalive_connections_usable(node: RunningBroker) -> None:
    with trio.fail_after(30):
        async with httpx.AsyncClient() as client:
            url = node.http_url()
            assert (
                await client.post(
                    url, content=b"{bad", headers={"content-type": "application/json"}
                )
            ).json()["error"]["code"] == -32700
            assert (
                await client.post(url, content=b"{}", headers={"content-type": "text/plain"})
            ).status_code == 415
            assert (await client.get(url)).status_code == 405
            unknown_key = await client.post(
                node.http_url("nope"), json={"jsonrpc": "2.0", "id": 1, "method": "eth_chainId"}
            )
            assert unknown_key.status_code == 401
            assert unknown_key.json() == {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32001, "message": "missing or unknown API key"},
            }
            assert (await client.post(f"{node.base}/nowhere", json={})).status_code == 404
            assert (
                await client.post(f"{node.base}/unknown-net/v3/dev", json={})
            ).status_code == 404
            ok = await client.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "eth_chainId"})
            assert ok.json() == {"jsonrpc": "2.0", "id": 1, "result": "0x539"}
            health = (await client.get(f"{node.base}/healthz")).json()
            assert health["status"] == "ok"
            metrics = (await client.get(f"{node.base}/metrics")).text
            assert "scopecast_requests_total" in metrics


async def test_oversized_bodies_get_413_before_they_are_read(node: RunningBroker) -> None:
    with trio.fail_after(10):
        sock = trio.socket.socket()
        with sock:
            await sock.connect(("127.0.0.1", node.port))
            head = (
                "POST /v3/dev HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                f"Content-Length: {6 * 1024 * 1024}\r\n\r\n"
            )
            await sock.send(head.encode())
            reply = b""
            while b"\r\n\r\n" not in reply:
                reply += await sock.recv(4096)
            assert reply.startswith(b"HTTP/1.1 413")


async def test_websocket_upgrade_is_refused_without_a_known_key(node: RunningBroker) -> None:
    with trio.fail_after(10):
        for path in ("/ws/v3/wrong", "/ws/v3"):
            with pytest.raises(ConnectionError, match="401"):
                await RawWebSocket.connect(node.port, path)


async def test_a_client_that_stops_reading_is_closed_while_1000_others_get_every_head(
    node: RunningBroker,
) -> None:
    blocks = 25
    with trio.fail_after(120):
        slow = await RawWebSocket.connect(node.port, "/ws/v3/dev", rcvbuf=4096)
        # 1,000 subscriptions on one connection make every head ~600 KB for it: it falls behind fast
        for i in range(1000):
            await slow.call(
                {"jsonrpc": "2.0", "id": i, "method": "eth_subscribe", "params": ["newHeads"]}
            )
        readers = [await RawWebSocket.connect(node.port, "/ws/v3/dev") for _ in range(1000)]
        for reader in readers:
            await reader.call(
                {"jsonrpc": "2.0", "id": 1, "method": "eth_subscribe", "params": ["newHeads"]}
            )
            reply = await reader.message()
            assert reply is not None
            assert "result" in reply
        received: list[list[int]] = [[] for _ in readers]

        async def read(index: int) -> None:
            while len(received[index]) < blocks:
                note = await readers[index].message()
                assert note is not None
                received[index].append(int(note["params"]["result"]["number"], 16))

        codes: list[int | None] = []

        async def read_slow_once_dropped() -> None:
            # The moment the server gives up on it, the slow client reads again: what is left of
            # its stream ends with the documented close code.
            await eventually(  # the server exposes a metric, not an event
                lambda: node.broker.metrics.slow_consumers._value.get() >= 1,
                "the slow client is dropped",
            )
            while (frame := await slow.frame()) is not None:
                if frame[0] == 0x8:
                    codes.append(slow.close_code)
                    return

        start = int((await node.rpc("eth_blockNumber", []))["result"], 16)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(read_slow_once_dropped)
            for index in range(len(readers)):
                nursery.start_soon(read, index)
            for _ in range(blocks):
                assert "error" not in await node.rpc("evm_mine", [])
        expected = list(range(start + 1, start + blocks + 1))
        assert all(r == expected for r in received)
        assert node.broker.metrics.slow_consumers._value.get() == 1
        assert codes == [frames.CLOSE_SLOW_CONSUMER]
        for reader in readers:
            reader.close()
        slow.close()


async def test_subscribe_unsubscribe_and_connection_churn_leave_nothing_behind(
    node: RunningBroker,
) -> None:
    with trio.fail_after(120):
        async with dapp(node.ws_url()) as conn:

            async def cycles(count: int) -> None:
                for i in range(count):
                    params: list[Any] = (
                        ["newHeads"] if i % 2 else ["logs", {"address": f"0x{i:040x}"}]
                    )
                    sub = await conn.result("eth_subscribe", params)
                    assert await conn.result("eth_unsubscribe", [sub]) is True

            # Memory is measured with tracemalloc, which sees every allocation (a leaked str or
            # bytes too, which the GC does not track), after a warm-up round has filled caches.
            tracemalloc.start()
            try:
                await cycles(1000)
                gc.collect()
                before, tasks_before = memory_snapshot(), count_tasks()
                await cycles(10_000)
                gc.collect()
                after = memory_snapshot()
            finally:
                tracemalloc.stop()
            assert node.broker.hub.count() == 0
            assert count_tasks() <= tasks_before + 2
            growth = after.compare_to(before, "lineno")
            grown = sum(stat.size_diff for stat in growth)
            assert grown < 256 * 1024, [str(stat) for stat in growth[:5]]

        baseline_tasks = count_tasks()
        for _ in range(300):
            raw = await RawWebSocket.connect(node.port, "/ws/v3/dev")
            await raw.call(
                {"jsonrpc": "2.0", "id": 1, "method": "eth_subscribe", "params": ["newHeads"]}
            )
            assert await raw.message() is not None
            raw.close()
        await trio.testing.wait_all_tasks_blocked(cushion=0.05)
        assert not node.broker.connections
        assert count_tasks() <= baseline_tasks
        assert node.broker.hub.count() == 0
        assert (await node.rpc("eth_chainId", []))["result"] == "0x539"


async def test_a_peer_that_does_not_answer_pings_is_dropped(
    mock_clock: trio.testing.MockClock,
) -> None:
    config = Config(server=ServerConfig(ping_interval=0.2))
    with trio.fail_after(30):
        async with running_broker(
            ServeOptions(block_time=0), config=config, clock=mock_clock
        ) as node:
            async with dapp(node.ws_url()) as live:  # trio-websocket answers pings
                mute = await RawWebSocket.connect(node.port, "/ws/v3/dev")  # never answers
                opcodes = []
                while (frame := await mute.frame()) is not None:
                    opcodes.append(frame[0])
                    if frame[0] == 0x8:
                        break
                mute.close()
                assert opcodes[0] == 0x9, "the server pings"
                assert mute.close_code == frames.CLOSE_PING_TIMEOUT
                await trio.sleep(0.6)  # three more pings (virtual seconds): all answered
                assert await live.result("eth_chainId", []) == "0x539"


async def test_the_heartbeat_pings_a_share_of_the_connections_at_a_time(
    mock_clock: trio.testing.MockClock,
) -> None:
    # 10,000 connections pinged at once answered with 10,000 pongs at once: the longest wait in
    # a fan-out. Each connection is still pinged once per interval (and closed when it does not
    # answer), but a share of them at a time.
    config = Config(server=ServerConfig(ping_interval=1.0))
    count = 20
    with trio.fail_after(30):
        async with running_broker(
            ServeOptions(block_time=0), config=config, clock=mock_clock
        ) as node:
            conns = [await RawWebSocket.connect(node.port, "/ws/v3/dev") for _ in range(count)]
            seen: dict[int, list[tuple[float, int]]] = {i: [] for i in range(count)}

            async def read(index: int, conn: RawWebSocket) -> None:
                while (frame := await conn.frame()) is not None:
                    seen[index].append((trio.current_time(), frame[0]))
                    if frame[0] == 0x8:
                        return

            async with trio.open_nursery() as nursery:
                for index, conn in enumerate(conns):
                    nursery.start_soon(read, index, conn)
            for conn in conns:
                conn.close()
    for frames_seen in seen.values():
        # a ping, then (none answered) the close, one interval later, give or take a share
        assert [opcode for _, opcode in frames_seen] == [0x9, 0x8]
        assert frames_seen[1][0] - frames_seen[0][0] == pytest.approx(1.0, abs=0.25)
    # every connection was open all the second round: those closes went out a share at a time
    closes = [frames_seen[1][0] for frames_seen in seen.values()]
    at_once = max(closes.count(t) for t in closes)
    assert at_once <= count // 4, sorted(closes)


async def test_requests_that_arrive_together_are_answered_in_order(node: RunningBroker) -> None:
    # trio runs tasks spawned together in either order; fast calls must still be answered in
    # the order they came (viem's watchBlocks emits blocks in the order their fetches answer).
    with trio.fail_after(30):
        conn = await RawWebSocket.connect(node.port, "/ws/v3/dev")
        try:
            for round_ in range(5):
                ids = list(range(round_ * 100, round_ * 100 + 20))
                calls = [
                    {"jsonrpc": "2.0", "id": i, "method": "eth_chainId", "params": []} for i in ids
                ]
                await conn.send_many([json.dumps(call) for call in calls])
                replies = [await conn.message() for _ in ids]
                assert [reply["id"] for reply in replies] == ids
        finally:
            conn.close()


async def test_a_socket_closed_while_a_call_holds_the_reader_ends_quietly(
    caplog: pytest.LogCaptureFixture, mock_clock: trio.testing.MockClock
) -> None:
    # One call at a time: a second session request waits inline in the reader while the first
    # waits for the operator; the peer answers no ping, so the server closes the socket under the
    # reader; when the requests time out, the reader must end without an error.
    config = Config(server=ServerConfig(ping_interval=0.2, max_inflight=1, approval_timeout=1.0))
    scope = {"methods": [], "notifications": []}
    with trio.fail_after(30):
        async with running_broker(
            ServeOptions(approval="manual"), config=config, clock=mock_clock
        ) as node:
            mute = await RawWebSocket.connect(node.port, "/ws/v3/dev")
            try:
                for i in (1, 2):
                    await mute.call(
                        {
                            "jsonrpc": "2.0",
                            "id": i,
                            "method": "wallet_createSession",
                            "params": {"optionalScopes": {"eip155:1337": scope}},
                        }
                    )
                while (frame := await mute.frame()) is not None:
                    assert frame[0] != 0x1, frame  # no answer: both requests wait
                assert mute.close_code == frames.CLOSE_PING_TIMEOUT
            finally:
                mute.close()
            await eventually(lambda: not node.broker.connections, "the reader has ended")
            assert await node.rpc("eth_chainId", []) == {
                "jsonrpc": "2.0",
                "id": 1,
                "result": "0x539",
            }
    assert "connection handler failed" not in caplog.text


async def test_a_connection_in_a_log_line_shows_no_part_of_its_key() -> None:
    """A connection's repr (logged with a slow consumer, for one) names its number and origin,
    never any part of the API key it came with."""
    key = "k-wxyz-secret-7d1e"
    config = Config(server=ServerConfig(api_keys=[key]))
    with trio.fail_after(30):
        async with running_broker(ServeOptions(block_time=0), config=config) as node:
            async with dapp(node.ws_url(key)) as conn:
                assert await conn.result("eth_chainId", []) == "0x539"
                (held,) = list(node.broker.connections)
                shown = repr(held)
                assert f"#{held.id}" in shown
                assert key[:4] not in shown, shown
                assert key[-4:] not in shown, shown
