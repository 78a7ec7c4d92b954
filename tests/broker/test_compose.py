"""The composition root as a library: a broker built from a config and options, served as a
managed resource, with no command line involved."""

from __future__ import annotations

import httpx
import pytest
import trio

from adapters.base import NetworkSpec
from broker.compose import ServeOptions, build_broker, build_network, open_broker
from broker.config import Config, ConfigError, ServerConfig
from tests.support.rawws import RawWebSocket


async def test_open_broker_serves_until_the_block_ends() -> None:
    with trio.fail_after(60):
        async with open_broker(Config(), ServeOptions(api_keys=["k1"], port=0)) as broker:
            assert broker.port is not None
            assert broker.host == "127.0.0.1"
            url = f"http://127.0.0.1:{broker.port}/v3/k1"
            async with httpx.AsyncClient() as client:
                reply = await client.post(
                    url, json={"jsonrpc": "2.0", "id": 1, "method": "eth_chainId"}
                )
                assert reply.json()["result"] == "0x539"
                refused = await client.post(
                    f"http://127.0.0.1:{broker.port}/v3/dev",
                    json={"jsonrpc": "2.0", "id": 1, "method": "eth_chainId"},
                )
                assert refused.status_code == 401  # only the keys the options name
            port = broker.port
        with pytest.raises(OSError, match="all attempts to connect"):
            await trio.open_tcp_stream("127.0.0.1", port)


def test_options_say_what_a_command_line_would() -> None:
    broker = build_broker(Config(), ServeOptions(approval="manual", block_time=0))
    assert broker.sessions is not None
    assert broker.sessions.policy.mode == "manual"
    assert [n.name for n in broker.networks] == ["dev", "solana"]
    with pytest.raises(ConfigError, match="needs --redis-url"):
        build_broker(Config(), ServeOptions(role="web"))


async def test_leaving_open_broker_closes_websockets_with_1012_as_a_deploy_does() -> None:
    codes: list[int | None] = []

    async def until_closed(conn: RawWebSocket) -> None:
        while (frame := await conn.frame()) is not None and frame[0] != 0x8:
            pass
        codes.append(conn.close_code)
        conn.close()

    with trio.fail_after(60):
        async with trio.open_nursery() as clients:
            async with open_broker(Config(), port=0) as broker:
                assert broker.port is not None
                conn = await RawWebSocket.connect(broker.port, "/ws/v3/dev")
                clients.start_soon(until_closed, conn)
            # Left: the connection was drained before the broker stopped.
    assert codes == [1012]


def test_a_plug_in_refusing_its_options_is_a_configuration_error_naming_the_network() -> None:
    # The SDK's contract: from_spec raises ValueError for bad options (the example plug-in does).
    spec = NetworkSpec("ledger", "ledger:demo", "example-ledger", {"genisis": ["x"]})
    with pytest.raises(
        ConfigError, match=r"^networks.ledger \(example-ledger adapter\): .*genisis"
    ):
        build_network(spec)


async def test_leaving_open_broker_closes_idle_keep_alive_http_at_once() -> None:
    # An hour of grace: a stop that waited for idle keep-alive connections would not end in time.
    config = Config(server=ServerConfig(shutdown_grace=3600))
    body = b'{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}'
    request = (
        b"POST /v3/dev HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    with trio.fail_after(60):
        async with open_broker(config, port=0) as broker:
            assert broker.port is not None
            idle = await trio.open_tcp_stream("127.0.0.1", broker.port)
            await idle.send_all(request)
            reply = b""
            while b"0x539" not in reply:
                reply += await idle.receive_some(65536)
            assert reply.startswith(b"HTTP/1.1 200 ")
        # Left: the idle connection was closed, not waited for.
        assert await idle.receive_some(65536) == b""
        await idle.aclose()


async def test_a_busy_port_raises_the_plain_config_error_as_the_readme_says() -> None:
    """``except ConfigError`` around ``open_broker`` catches it: no exception group around it."""
    with trio.fail_after(60), trio.socket.socket() as taken:
        await taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        # pytest.raises matches the exception itself: an ExceptionGroup around it fails here.
        with pytest.raises(ConfigError) as caught:
            async with open_broker(Config(), ServeOptions(block_time=0), port=port):
                raise AssertionError("served on a port that is taken")
        assert f"cannot listen on 127.0.0.1:{port}: the address is in use" in str(caught.value)
        # The adapters it started were closed: a second broker starts on a free port.
        async with open_broker(Config(), ServeOptions(block_time=0), port=0) as broker:
            assert broker.port not in (None, port)


async def test_a_port_outside_the_range_is_refused_before_anything_starts() -> None:
    for port in (70000, -5):
        with trio.fail_after(30), pytest.raises(ConfigError, match=r"outside the range 0\.\.65535"):
            async with open_broker(Config(), ServeOptions(block_time=0), port=port):
                raise AssertionError(f"served on port {port}")
