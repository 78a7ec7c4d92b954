"""Keys' limits counted in Redis, shared by every web process: the Lua scripts against a real
redis-server, two real ``serve --role web`` processes sharing one key's rate and connection cap,
and the limits while Redis is unreachable (``[server] limits_when_redis_down``)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from broker.access import RedisLimiter
from broker.access._policy import Rate
from broker.redis import RedisClient
from tests.redis.test_deployment import Upstream
from tests.redis.test_deployment import upstream as upstream  # the fixture
from tests.support.processes import ScopecastProcess, start_scopecast
from tests.support.rawws import RawWebSocket
from tests.support.redis_server import RedisServer, redis_server
from tests.support.upgrades import try_upgrade
from tests.support.waiting import eventually

DEV = "eip155:1337"
CALL = {"jsonrpc": "2.0", "id": 1, "method": "eth_chainId", "params": []}

# -- the scripts ----------------------------------------------------------------------------------


@asynccontextmanager
async def serving(*limiters: RedisLimiter) -> AsyncIterator[None]:
    async with trio.open_nursery() as nursery:
        for limiter in limiters:
            await nursery.start(limiter.serve)
        yield
        nursery.cancel_scope.cancel()


async def test_the_rate_script_admits_the_burst_then_none(client: RedisClient, prefix: str) -> None:
    a, b = RedisLimiter(client, prefix), RedisLimiter(client, prefix)  # two processes
    with trio.fail_after(10):
        async with serving(a, b):
            taken = [await (a if i % 2 else b).take("k", Rate(5, 5), 1) for i in range(10)]
            assert sum(t.admitted for t in taken) == 5
            assert [t.admitted for t in taken[:5]] == [1] * 5
            assert 150_000 < taken[-1].retry_after_us <= 200_000
            batch = await a.take("batch", Rate(50, 50), 1000)
            assert batch.admitted == 50
            assert 0 < batch.retry_after_us <= 20_000
            assert (await b.take("batch", Rate(50, 50), 1000)).admitted <= 1


async def test_requests_at_once_share_round_trips(client: RedisClient, prefix: str) -> None:
    """100 requests at once on one key: a handful of script calls, the burst given in order."""
    limiter = RedisLimiter(client, prefix)
    taken: list[int] = []
    with trio.fail_after(10):
        async with serving(limiter):
            before = await script_calls(client)

            async def one() -> None:
                taken.append((await limiter.take("k", Rate(1, 30), 1)).admitted)

            async with trio.open_nursery() as nursery:
                for _ in range(100):
                    nursery.start_soon(one)
            calls = await script_calls(client) - before
    assert sum(taken) == 30
    assert calls <= 5, calls


async def script_calls(client: RedisClient) -> int:
    info = await client.info("commandstats")
    return sum(
        int(stats["calls"])  # type: ignore[index]
        for name, stats in info.items()
        if str(name).startswith("cmdstat_eval")
    )


async def test_connection_slots_are_shared_and_reaped_when_not_refreshed(
    client: RedisClient, prefix: str
) -> None:
    with trio.fail_after(10):
        a = RedisLimiter(client, prefix, slot_ttl=0.3)
        b = RedisLimiter(client, prefix, slot_ttl=0.3)
        async with trio.open_nursery() as nursery:
            await nursery.start(a.serve)  # a refreshes its slots; b does not (it "died")
            held = await a.open_slot("k", 2)
            assert held is not None
            assert await b.open_slot("k", 2) is not None
            assert await a.open_slot("k", 2) is None
            # b's slot expires (b opens one again then); a's, opened first, was refreshed:
            await eventually(lambda: b.open_slot("k", 2), "b's unrefreshed slot expires")
            assert await a.open_slot("k", 2) is None
            await a.close_slot("k", held)
            assert await a.open_slot("k", 2) is not None
            nursery.cancel_scope.cancel()


# -- two web processes ----------------------------------------------------------------------------


@dataclass
class Webs:
    a: ScopecastProcess
    b: ScopecastProcess


KEYS = """
[keys.shared]
requests_per_second = 5
burst = 5
[keys.capped]
max_connections = 3
[keys.fifty]
requests_per_second = 50
"""


@pytest.fixture
async def webs(upstream: Upstream) -> AsyncIterator[Webs]:
    """Two web processes on the dev chain node, without a worker (these calls need no events)."""
    with upstream.config.open("a") as config:
        config.write(KEYS)
    with redis_server() as redis:  # its own: the processes use the default key prefix
        processes = [upstream.web(redis.url) for _ in range(2)]
        with trio.fail_after(120):
            async with trio.open_nursery() as starting:
                for process in processes:
                    starting.start_soon(process.start)
        yield Webs(*processes)


async def test_two_processes_share_a_key_rate(webs: Webs) -> None:
    """5 calls a second, burst 5: 50 calls over one second, half to each process."""
    replies: list[httpx.Response] = []
    with trio.fail_after(60):
        async with httpx.AsyncClient(trust_env=False) as client:
            await client.post(webs.a.http_url("capped"), json=CALL)  # connections warmed up
            await client.post(webs.b.http_url("capped"), json=CALL)

            started = trio.current_time()

            async def one(i: int) -> None:
                await trio.sleep(i * 0.02)  # the clients' schedule (not a wait): 50 a second
                web = webs.a if i % 2 else webs.b
                replies.append(await client.post(web.http_url("shared"), json={**CALL, "id": i}))

            async with trio.open_nursery() as nursery:
                for i in range(50):
                    nursery.start_soon(one, i)
            elapsed = trio.current_time() - started
    ok = [r for r in replies if r.status_code == 200]
    limited = [r for r in replies if r.status_code == 429]
    # The burst, and what time earned meanwhile (however long a loaded machine took): one bucket.
    assert 5 <= len(ok) <= 5 + 5 * elapsed + 2, (len(ok), elapsed)
    assert len(ok) + len(limited) == 50
    for reply in replies:
        body = reply.json()
        assert body["jsonrpc"] == "2.0"
        assert isinstance(body["id"], int)
        assert ("result" in body) != ("error" in body)
    for reply in limited:
        assert int(reply.headers["retry-after"]) >= 1
        error = reply.json()["error"]
        assert error["code"] == -32005
        assert error["message"] == "limit exceeded"
        assert 0 < error["data"]["retryAfterMs"] <= 1000
    assert {r.json()["result"] for r in ok} == {"0x539"}


async def test_a_batch_of_1000_against_a_50_per_second_key_on_two_processes(webs: Webs) -> None:
    batch = [{**CALL, "id": i} for i in range(1000)]
    with trio.fail_after(60):
        async with httpx.AsyncClient(trust_env=False) as client:
            started = trio.current_time()
            first = await client.post(webs.a.http_url("fifty"), json=batch)
            second = await client.post(webs.b.http_url("fifty"), json=batch)
            elapsed = trio.current_time() - started
    answered = [sum("result" in r for r in reply.json()) for reply in (first, second)]
    # The burst (50) on A, then B finds the same bucket empty but for what time earned meanwhile.
    assert answered[0] >= 50
    assert sum(answered) <= 50 + 50 * elapsed + 2
    assert first.status_code == 200
    for reply in (first, second):
        replies = reply.json()
        assert [r["id"] for r in replies] == list(range(1000))
        assert {r["error"]["code"] for r in replies if "error" in r} == {-32005}
    if answered[1] == 0:
        assert second.status_code == 429
        assert int(second.headers["retry-after"]) >= 1


async def test_two_processes_share_a_key_connection_cap(webs: Webs) -> None:
    held: list[RawWebSocket] = []
    try:
        with trio.fail_after(60):
            for web in (webs.a, webs.a, webs.b):
                held.append(await RawWebSocket.connect(web.port, "/ws/v3/capped"))
            for web in (webs.a, webs.b):
                refused = await try_upgrade(web.port, "/ws/v3/capped")
                assert refused.status == 429
                assert refused.headers["retry-after"] == "5"
                assert refused.json()["error"]["data"] == {"limit": "max_connections", "max": 3}
            held.pop(0).close()  # a connection on A ends: B may open one

            async def upgraded_on_b() -> bool:  # once A saw the close and gave the slot back
                return (await try_upgrade(webs.b.port, "/ws/v3/capped")).status == 101

            await eventually(upgraded_on_b, "the closed connection's slot comes back", every=0.05)
            async with httpx.AsyncClient(trust_env=False) as client:
                text = (await client.get(f"{webs.a.base_url}/metrics")).text
            assert 'scopecast_connections_refused_total{key="capped"} 1.0' in text
    finally:
        for conn in held:
            conn.close()


# -- Redis unreachable ----------------------------------------------------------------------------


@pytest.mark.parametrize(("mode", "status"), [("open", 200), ("closed", 429)])
async def test_limits_when_redis_is_down(mode: str, status: int, tmp_path: Path) -> None:
    config = tmp_path / "scopecast.toml"
    config.write_text(
        f'[server]\nlimits_when_redis_down = "{mode}"\n[keys.k]\nrequests_per_second = 100\n'
    )
    redis = RedisServer()  # its own: stopped mid-test
    redis.start()
    try:
        async with trio.open_nursery() as nursery:
            with trio.fail_after(60):
                args = ["--block-time", "0", "--config", str(config), "--redis-url", redis.url]
                node = await start_scopecast(nursery, *args)
                async with httpx.AsyncClient(trust_env=False) as client:
                    assert (await client.post(node.http_url("k"), json=CALL)).status_code == 200
                    redis.stop()
                    reply = await client.post(node.http_url("k"), json=CALL)
                    started = trio.current_time()
                    again = await client.post(node.http_url("k"), json=CALL)
                    # Redis failed a moment ago: decided at once, not after another timeout.
                    assert trio.current_time() - started < 0.4
                    assert again.status_code == status
                    text = (await client.get(f"{node.base_url}/metrics")).text
                    redis.start()  # back: counted there again, once a second has passed

                    async def counted_again() -> httpx.Response | None:
                        back = await client.post(node.http_url("k"), json=CALL)
                        again = "limits counted in Redis again" in node.output_tail(200)
                        return back if again else None

                    back = await eventually(
                        counted_again, "a request counted in Redis again", every=0.1
                    )
                    output = node.output_tail(200)
            nursery.cancel_scope.cancel()
    finally:
        redis.close()
    assert reply.status_code == status
    body: Any = json.loads(reply.content)
    assert body["id"] == 1
    if status == 429:
        assert body["error"]["code"] == -32005
        assert reply.headers["retry-after"] == "1"
    else:
        assert body["result"] == "0x539"
    assert f'scopecast_limiter_unavailable_total{{decision="{mode}"}} 2.0' in text
    assert "limits without Redis" in output
    assert f"failing {mode}, as [server] limits_when_redis_down says" in output
    assert "limits counted in Redis again" in output
    assert back.status_code == 200
