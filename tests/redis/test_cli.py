"""How the command line wires Redis: ``serve`` with ``--redis-url`` in one process (sessions and
events through Redis, ingestion under a lease), the checks of ``--role web`` and ``worker``."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import trio

from broker.cli import _work, build_broker, parser
from broker.compose import ServeOptions
from broker.config import ConfigError, load_config
from broker.redis import RedisChangeBus, RedisClient, RedisEventBus, RedisSessionStore
from broker.sessions import Identity
from tests.support.inprocess import dapp, running_broker
from tests.support.redis_server import RedisServer

DEV = "eip155:1337"
ORIGIN = "https://dapp.example"
UPSTREAM = (
    '[networks.dev]\nchain = "eip155:1337"\nupstreams = [{http = "http://127.0.0.1:9/v3/dev"}]\n'
)


def serve_args(*args: str) -> argparse.Namespace:
    return parser().parse_args(["serve", *args])


async def test_one_process_with_redis_keeps_sessions_and_events_there(
    redis: RedisServer, client: RedisClient
) -> None:
    with trio.fail_after(60):
        async with running_broker(ServeOptions(block_time=0, redis_url=redis.url)) as node:
            async with dapp(node.ws_url(), origin=ORIGIN) as conn:
                scopes = {DEV: {"methods": ["eth_blockNumber"], "notifications": []}}
                await conn.result("wallet_createSession", {"optionalScopes": scopes})
                stored = await RedisSessionStore(client).get(Identity.of("dev", ORIGIN))
                assert stored is not None
                assert set(stored.scopes) == {DEV}

                await conn.result("eth_subscribe", ["newHeads"])
                before = int(await conn.result("eth_blockNumber", []), 16)
                await node.rpc("evm_mine", [])
                number = -1
                while number < before + 1:  # the head published at start may come first
                    head = (await conn.notification())["params"]["result"]
                    number = int(head["number"], 16)
                assert number == before + 1
            assert await client.exists(["scopecast:events:{eip155:1337}"]) == 1
            assert await client.exists(["scopecast:lease:{eip155:1337}"]) == 1
            await RedisSessionStore(client).delete(Identity.of("dev", ORIGIN))


def test_role_web_needs_redis(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    with pytest.raises(ConfigError, match="--redis-url"):
        build_broker(serve_args("--role", "web"), load_config(None))


def test_role_web_refuses_an_embedded_dev_chain(tmp_path: Path) -> None:
    config = tmp_path / "dev.toml"
    config.write_text('[networks.dev]\nchain = "eip155:1337"\nblock_time = 1\n')
    args = serve_args("--role", "web", "--redis-url", "redis://127.0.0.1:1/0")
    with pytest.raises(ConfigError, match="upstream network"):
        build_broker(args, load_config(config))
    with pytest.raises(ConfigError, match="upstream networks"):
        build_broker(args, load_config(None))


def test_role_web_takes_sessions_and_events_from_redis_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:1/0")
    config = tmp_path / "web.toml"
    config.write_text(UPSTREAM)
    broker = build_broker(serve_args("--role", "web", "--config", str(config)), load_config(config))
    assert isinstance(broker.bus, RedisEventBus)
    assert broker.sessions is not None
    assert isinstance(broker.sessions.store, RedisSessionStore)
    assert isinstance(broker.sessions.changes, RedisChangeBus)


async def test_the_worker_needs_redis_and_upstreams(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    config = tmp_path / "worker.toml"
    config.write_text(UPSTREAM)
    with trio.fail_after(10):
        with pytest.raises(ConfigError, match="--redis-url"):
            await _work(parser().parse_args(["worker"]), load_config(config))
        args = parser().parse_args(["worker", "--redis-url", "redis://x/0"])
        with pytest.raises(ConfigError, match="upstream networks"):
            await _work(args, load_config(None))


def test_worker_help_names_the_settings_that_matter(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parser().parse_args(["worker", "--help"])
    shown = capsys.readouterr().out
    for setting in ("REDIS_URL", "--config", "stream_maxlen", "--lease-ttl", "standby"):
        assert setting in shown
