"""HTTP edges over real sockets: a request body has a deadline, and the API key is checked before
anything about networks is told."""

import contextlib
import functools
import json
import logging
import select
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager

import httpx
import pytest
import trio
import trio.testing

from broker.compose import ServeOptions
from broker.config import Config, ServerConfig
from broker.transport.http import (
    IDLE_TIMEOUT,
    ConnectionDeadlines,
    HttpRequest,
    HttpResponse,
    handle_http,
)
from broker.transport.limits import Limits
from tests.support.inprocess import RunningBroker, running_broker
from tests.support.rawws import RawWebSocket
from tests.support.waiting import eventually

BODY_TIMEOUT = 0.2


def short_body_deadline(
    clock: trio.testing.MockClock,
) -> AbstractAsyncContextManager[RunningBroker]:
    """A broker on the dev chain whose request bodies must arrive within ``BODY_TIMEOUT`` (virtual
    seconds, on ``clock``)."""
    config = Config(server=ServerConfig(body_timeout=BODY_TIMEOUT))
    return running_broker(ServeOptions(block_time=0), config=config, clock=clock)


async def read_until_closed(sock: trio.socket.SocketType) -> bytes:
    reply = b""
    while data := await sock.recv(65536):
        reply += data
    return reply


def head(length: int) -> bytes:
    return (
        "POST /v3/dev HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\n\r\n"
    ).encode()


async def test_a_body_that_stops_arriving_gets_408_and_the_connection_closes(
    mock_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(60):
        async with short_body_deadline(mock_clock) as node:
            for sent in (b"", b'{"jsonrpc":'):
                sock = trio.socket.socket()
                with sock:
                    await sock.connect(("127.0.0.1", node.port))
                    await sock.send(head(100) + sent)
                    with trio.fail_after(10):  # a hang here is the bug
                        reply = await read_until_closed(sock)
                    status, _, rest = reply.partition(b"\r\n")
                    assert status.split(b" ")[:2] == [b"HTTP/1.1", b"408"], reply
                    assert b"connection: close" in rest.lower()
                    assert b'"code":-32600' in rest
            async with httpx.AsyncClient() as client:
                ok = await client.post(
                    node.http_url(),
                    json={"jsonrpc": "2.0", "id": 1, "method": "eth_chainId"},
                )
                assert ok.json()["result"] == "0x539"


async def test_a_trickled_body_is_cut_off_at_the_deadline(
    mock_clock: trio.testing.MockClock,
) -> None:
    # Every byte arrives well within the deadline: only a deadline on the whole body ends this.
    with trio.fail_after(60):
        async with short_body_deadline(mock_clock) as node:
            sock = trio.socket.socket()
            with sock:
                await sock.connect(("127.0.0.1", node.port))
                await sock.send(head(1_000_000))

                async def trickle() -> None:
                    try:
                        while True:
                            await sock.send(b" ")
                            await trio.sleep(BODY_TIMEOUT / 10)
                    except OSError:
                        pass  # the server closed the connection

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(trickle)
                    with trio.fail_after(10):
                        reply = await read_until_closed(sock)
                    nursery.cancel_scope.cancel()
                assert reply.startswith(b"HTTP/1.1 408 "), reply


async def test_the_default_body_deadline_lets_a_whole_body_through() -> None:
    assert Limits().http_body_timeout == 30.0
    with trio.fail_after(60):
        async with running_broker(ServeOptions(block_time=0)) as node:
            sock = trio.socket.socket()
            with sock:
                await sock.connect(("127.0.0.1", node.port))
                body = b'{"jsonrpc":"2.0","id":7,"method":"eth_chainId"}'
                await sock.send(head(len(body)) + body[:10])
                await sock.send(body[10:])
                reply = b""
                while not reply.endswith(b"}"):
                    reply += await sock.recv(65536)
                assert reply.startswith(b"HTTP/1.1 200 ")
                assert reply.endswith(b'{"jsonrpc":"2.0","id":7,"result":"0x539"}')


# --------------------------------------------------------------------------------------------------
# The API key comes before the network


async def test_an_unknown_key_gets_401_whatever_the_network(node: RunningBroker) -> None:
    with trio.fail_after(30):
        async with httpx.AsyncClient() as client:
            for path in ("/no-such-net/v3/wrong", "/no-such-net/v3", "/v3/wrong", "/dev/v3/wrong"):
                reply = await client.post(f"{node.base}{path}", json={})
                assert reply.status_code == 401, path
                assert reply.json()["error"]["code"] == -32001
                assert b"no-such-net" not in reply.content
            known = await client.post(f"{node.base}/no-such-net/v3/dev", json={})
            assert known.status_code == 404
            assert known.json()["error"]["message"] == "unknown network 'no-such-net'"
            named = await client.post(
                node.http_url(network="dev"),
                json={"jsonrpc": "2.0", "id": 1, "method": "eth_chainId"},
            )
            assert named.json()["result"] == "0x539"


async def test_an_unknown_key_gets_401_on_the_websocket_upgrade_too(node: RunningBroker) -> None:
    with trio.fail_after(30):
        for path in ("/no-such-net/ws/v3/wrong", "/no-such-net/ws/v3"):
            with pytest.raises(ConnectionError, match="401") as refused:
                await RawWebSocket.connect(node.port, path)
            assert "no-such-net" not in str(refused.value)
        with pytest.raises(ConnectionError, match="404"):
            await RawWebSocket.connect(node.port, "/no-such-net/ws/v3/dev")
        ws = await RawWebSocket.connect(node.port, "/dev/ws/v3/dev")
        await ws.call({"jsonrpc": "2.0", "id": 1, "method": "eth_chainId"})
        assert await ws.message() == {"jsonrpc": "2.0", "id": 1, "result": "0x539"}
        ws.close()


async def test_deadlines_close_an_idle_connection_and_time_out_a_trickled_body(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """On a socket pair, with trio's clock jumping: no wall-clock time passes."""

    async def respond(request: HttpRequest) -> HttpResponse:
        return HttpResponse(200, b"{}")

    deadlines = ConnectionDeadlines()
    with trio.fail_after(300):  # virtual seconds: a hang here is the bug
        await _expire_on_a_socket_pair(deadlines, respond)


async def _expire_on_a_socket_pair(
    deadlines: ConnectionDeadlines, respond: Callable[[HttpRequest], Awaitable[HttpResponse]]
) -> None:
    async with trio.open_nursery() as nursery:
        await nursery.start(deadlines.serve)
        for trickle, expected_after in ((b"", IDLE_TIMEOUT), (head(10) + b"[", 2.0)):
            ours, theirs = trio.socket.socketpair()
            server = trio.SocketStream(ours)
            nursery.start_soon(
                functools.partial(handle_http, body_limit=1024, body_timeout=2.0),
                server,
                respond,
                deadlines,
            )
            with theirs:
                await theirs.send(trickle)
                started = trio.current_time()
                reply = await read_until_closed(theirs)
                waited = trio.current_time() - started
            assert expected_after <= waited <= expected_after + deadlines.resolution + 0.01
            if trickle:
                assert reply.split(b" ", 2)[1] == b"408", reply
            else:
                assert reply == b""  # an idle connection is just closed
            server.socket.close()
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize(
    "content_type",
    [
        "application/json",
        "application/json-rpc",
        "application/jsonrequest",
        "Application/JSON-RPC; charset=utf-8",
    ],
)
async def test_the_content_types_geth_accepts(node: RunningBroker, content_type: str) -> None:
    with trio.fail_after(30):
        async with httpx.AsyncClient() as client:
            reply = await client.post(
                node.http_url(),
                content=b'{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}',
                headers={"content-type": content_type},
            )
    assert reply.status_code == 200
    assert reply.json()["result"] == "0x539"


async def test_wrong_paths_and_methods_name_the_right_url_forms(node: RunningBroker) -> None:
    with trio.fail_after(30):
        async with httpx.AsyncClient() as client:
            missing = await client.post(f"{node.base}/v2/dev", json={})
            on_http = await client.get(
                node.http_url(),
                headers={"connection": "upgrade", "upgrade": "websocket"},
            )
            named = await client.get(f"{node.base}/dev/v3/dev")
    assert missing.status_code == 404
    assert "POST /v3/<API_KEY>" in missing.json()["error"]["message"]
    assert "/ws/v3/<API_KEY>" in missing.json()["error"]["message"]
    assert on_http.status_code == 405
    assert on_http.text == (
        "method not allowed: POST JSON-RPC here; a WebSocket connects to /ws/v3/<API_KEY>"
    )
    assert named.status_code == 405
    assert "/dev/ws/v3/<API_KEY>" in named.text


async def test_a_client_that_stops_reading_a_big_answer_is_dropped_at_the_write_deadline() -> None:
    # A real 4.8 MB answer from the dev chain: the identity precompile echoes 2.4 MB of zeros.
    # The kernel buffers hold less than that (tcp_wmem's 4 MiB at most), so the broker's write
    # waits on a client that never reads, until its write deadline drops the connection.
    echoed = 2_400_000
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "eth_call",
        "params": [
            {"to": "0x" + "00" * 19 + "04", "data": "0x" + "00" * echoed, "gas": hex(25_000_000)},
            "latest",
        ],
    }
    body = json.dumps(call).encode()
    config = Config(server=ServerConfig(write_timeout=0.5))
    with trio.fail_after(60):
        async with running_broker(ServeOptions(block_time=0), config=config) as node:
            deadlines = node.broker.http_deadlines
            with trio.socket.socket() as sock:
                sock.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_RCVBUF, 4096)
                await sock.connect(("127.0.0.1", node.port))
                request = memoryview(head(len(body)) + body)
                while request:
                    request = request[await sock.send(request) :]
                await eventually(lambda: len(deadlines) == 1, "the connection accepted")
                await eventually(
                    lambda: len(deadlines) == 0, "the unread reply dropped", within=15
                )
                async with httpx.AsyncClient() as client:  # everyone else is served as before
                    ok = await client.post(
                        node.http_url(), json={"jsonrpc": "2.0", "id": 2, "method": "eth_chainId"}
                    )
                    assert ok.json()["result"] == "0x539"
                received = 0
                with contextlib.suppress(ConnectionResetError):
                    while data := await sock.recv(1 << 20):
                        received += len(data)
                assert 0 < received < 2 * echoed  # cut short, then closed


async def test_without_epoll_the_portable_path_serves_keep_alive_connections(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # As on macOS and the BSDs. trio's own epoll was made when this trio run began: only the
    # broker, built from here on, finds select.epoll missing.
    monkeypatch.delattr(select, "epoll")
    calls = [{"jsonrpc": "2.0", "id": i, "method": "eth_chainId"} for i in range(20)]
    # A grace far longer than the test may take: an idle connection must not be waited for.
    config = Config(server=ServerConfig(shutdown_grace=600))
    with trio.fail_after(60), caplog.at_level(logging.INFO, logger="broker.app"):
        async with running_broker(ServeOptions(block_time=0), config=config) as node:
            assert node.broker.http_reactor is None
            async with httpx.AsyncClient() as client:  # one keep-alive connection
                for call in calls:
                    reply = await client.post(node.http_url(), json=call)
                    assert reply.json() == {"jsonrpc": "2.0", "id": call["id"], "result": "0x539"}
            with trio.socket.socket() as sock:  # pipelined, more than a turn's worth
                await sock.connect(("127.0.0.1", node.port))
                bodies = [json.dumps(call).encode() for call in calls]
                await sock.send(b"".join(head(len(body)) + body for body in bodies))
                received = b""
                while received.count(b'"result":"0x539"') < len(calls):
                    data = await sock.recv(65536)
                    assert data, "closed before every answer"
                    received += data
                # Idle now, in the graceful stop: closed at once, not at the grace's end.
                node.broker.shutdown()
                with trio.fail_after(10):
                    assert await sock.recv(1) == b""
    chosen = [r.getMessage() for r in caplog.records if "select.epoll" in r.getMessage()]
    assert len(chosen) == 1, chosen
