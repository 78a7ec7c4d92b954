"""Keys with rules and limits on a live broker (in memory, no Redis): Origins refused with 403 over
HTTP and at the WebSocket upgrade, methods outside the allowlist, the rate (429 with Retry-After
over HTTP, -32005 on a WebSocket that stays open, a batch counted as its calls), the subscription
and connection caps, Basic-auth secrets, tokens over HTTP and WebSocket (narrowing, expiry, renewal)
and the /metrics counts. A key without a table is served as before."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import httpx
import msgspec
import pytest
import trio
import trio.testing

from broker.access import CLOSE_TOKEN_EXPIRED
from broker.access._control import TOKEN_CHECK_INTERVAL
from broker.compose import ServeOptions
from broker.config import Config
from tests.support.inprocess import RunningBroker, dapp, running_broker
from tests.support.rawws import RawWebSocket
from tests.support.tokens import SigningKey
from tests.support.upgrades import try_upgrade
from tests.support.waiting import eventually

DEV = "eip155:1337"
APP = "https://app.example.com"
CALL = {"jsonrpc": "2.0", "id": 7, "method": "eth_chainId", "params": []}


@asynccontextmanager
async def keyed(
    keys: dict[str, Any],
    server: dict[str, Any] | None = None,
    *api_keys: str,
    clock: trio.testing.MockClock | None = None,
) -> AsyncIterator[RunningBroker]:
    """A broker with ``keys``; with ``clock``, its tokens expire on trio's clock, which runs at
    real speed and jumps when the test says."""
    config = msgspec.convert({"keys": keys, "server": server or {}}, Config)
    async with running_broker(
        ServeOptions(block_time=0, api_keys=api_keys), config=config, clock=clock, autojump=False
    ) as node:
        yield node


async def post(node: RunningBroker, key: str, body: Any = CALL, **kwargs: Any) -> httpx.Response:
    async with httpx.AsyncClient(trust_env=False) as client:
        return await client.post(node.http_url(key), json=body, **kwargs)


def error_of(response: httpx.Response) -> dict[str, Any]:
    error: dict[str, Any] = response.json()["error"]
    return error


# -- origins --------------------------------------------------------------------------------------

ORIGIN_CASES = [
    ({"origin": APP}, 200),  # exact
    ({"origin": "https://shop.example.org"}, 200),  # wildcard label
    ({"origin": "HTTPS://App.Example.COM"}, 200),  # mixed case
    ({}, 403),  # no Origin
    ({"origin": "null"}, 403),
    ({"origin": "https://example.org.evil.com"}, 403),  # the look-alike
    ({"origin": "https://a.b.example.org"}, 403),
]


async def test_origin_rules_over_http_and_at_the_upgrade() -> None:
    keys = {"web": {"origins": [APP, "https://*.example.org"]}}
    with trio.fail_after(60):
        async with keyed(keys) as node:
            for headers, status in ORIGIN_CASES:
                reply = await post(node, "web", headers=headers)
                assert reply.status_code == status, headers
                if status == 403:
                    assert reply.json()["id"] is None
                    assert error_of(reply)["code"] == -32002
                    assert "not allowed for this key" in error_of(reply)["message"]
                else:
                    assert reply.json()["result"] == "0x539"
            async with dapp(node.ws_url("web"), origin="https://shop.example.org") as conn:
                assert await conn.result("eth_chainId", []) == "0x539"
            for origin in ("https://example.org.evil.com", None):
                headers = {"origin": origin} if origin else {}
                refused = await try_upgrade(node.port, "/ws/v3/web", headers)
                assert refused.status == 403
                assert refused.json()["error"]["code"] == -32002


async def test_a_key_without_a_table_is_served_as_before() -> None:
    with trio.fail_after(60):
        async with keyed({"web": {"origins": [APP]}}, None, "plain") as node:
            reply = await post(node, "plain", body=[CALL] * 3)
            assert reply.status_code == 200
            assert [r["result"] for r in reply.json()] == ["0x539"] * 3
            assert (await post(node, "unknown")).status_code == 401


# -- methods ---------------------------------------------------------------------------------------


async def test_methods_outside_the_allowlist_name_the_rule() -> None:
    keys = {"m": {"methods": ["eth_blockNumber", "wallet_*"]}}
    with trio.fail_after(60):
        async with keyed(keys) as node:
            error = error_of(await post(node, "m"))
            assert error["code"] == -32601
            assert error["message"] == (
                "the method eth_chainId is not allowed for this key "
                "(keys.m.methods = ['eth_blockNumber', 'wallet_*'])"
            )
            assert (
                "result"
                in (await post(node, "m", body={**CALL, "method": "eth_blockNumber"})).json()
            )
            # Inside a session too: wallet_invokeMethod is allowed, its inner method is not.
            async with dapp(node.ws_url("m"), origin=APP) as conn:
                scopes = {DEV: {"methods": ["eth_chainId"], "notifications": []}}
                await conn.result("wallet_createSession", {"optionalScopes": scopes})
                reply = await conn.call(
                    "wallet_invokeMethod",
                    {"scope": DEV, "request": {"method": "eth_chainId", "params": []}},
                )
                assert reply["error"]["code"] == -32601
                assert "not allowed for this key" in reply["error"]["message"]


# -- the rate --------------------------------------------------------------------------------------


#: The rate of the over-the-rate tests: slow enough that calls on a busy machine (hundreds of ms
#: each) still outrun it after the burst; a token is earned every 2 s.
SLOW_RATE: Final = 0.5


def assert_limited(error: dict[str, Any], *, most_ms: float = 1000 / SLOW_RATE) -> int:
    assert error["code"] == -32005
    assert error["message"] == "limit exceeded"
    assert error["data"]["limit"] == "requests_per_second"
    retry: int = error["data"]["retryAfterMs"]
    assert 0 < retry <= most_ms
    return retry


async def test_over_the_rate_http_gets_429_with_retry_after() -> None:
    with trio.fail_after(60):
        async with keyed({"r": {"requests_per_second": SLOW_RATE, "burst": 5}}) as node:
            statuses = []
            started = trio.current_time()
            for _ in range(10):
                reply = await post(node, "r")
                statuses.append(reply.status_code)
                if reply.status_code == 429:
                    assert reply.json()["id"] == 7
                    retry_ms = assert_limited(error_of(reply))
                    # whole seconds, rounded up: the wait the error's retryAfterMs gives
                    assert reply.headers["retry-after"] == str(max(1, math.ceil(retry_ms / 1000)))
            elapsed = trio.current_time() - started
    assert statuses[:5] == [200] * 5  # the burst
    assert statuses.count(200) <= 5 + SLOW_RATE * elapsed  # and what was earned meanwhile
    assert 429 in statuses


async def test_over_the_rate_a_websocket_gets_the_error_and_stays_open() -> None:
    with trio.fail_after(60):
        async with keyed({"r": {"requests_per_second": SLOW_RATE, "burst": 5}}) as node:
            async with dapp(node.ws_url("r")) as conn:
                started = trio.current_time()
                replies = [await conn.call("eth_chainId", []) for _ in range(10)]
                elapsed = trio.current_time() - started
                limited = [r for r in replies if "error" in r]
                assert 5 - SLOW_RATE * elapsed <= len(limited) <= 5
                assert limited
                retry = max(assert_limited(r["error"]) for r in limited)
                await trio.sleep(retry / 1000)
                assert await conn.result("eth_chainId", []) == "0x539"


async def test_a_batch_of_1000_against_a_50_per_second_key() -> None:
    batch = [{**CALL, "id": i} for i in range(1000)]
    with trio.fail_after(60):
        async with keyed({"b": {"requests_per_second": 50}}) as node:  # burst: 50
            started = trio.current_time()
            reply = await post(node, "b", body=batch)
            elapsed = trio.current_time() - started
    assert reply.status_code == 200  # some calls answered: each reply says its outcome
    replies = reply.json()
    assert [r["id"] for r in replies] == list(range(1000))
    answered = [r for r in replies if "result" in r]
    assert 50 <= len(answered) <= 50 + 50 * elapsed + 1  # the burst, and what was earned since
    assert [r["id"] for r in answered] == list(range(len(answered)))  # the first ones
    for refused in replies[len(answered) :]:
        assert_limited(refused["error"], most_ms=1000)


async def test_a_batch_with_no_call_admitted_gets_429() -> None:
    batch = [{**CALL, "id": i} for i in range(3)]
    with trio.fail_after(60):
        async with keyed({"slow": {"requests_per_second": 0.2, "burst": 2}}) as node:
            first = await post(node, "slow", body=batch)
            second = await post(node, "slow", body=batch)
    assert first.status_code == 200
    assert ["result" in r for r in first.json()] == [True, True, False]
    assert second.status_code == 429
    assert second.headers["retry-after"] == "5"  # one call every 5 s
    assert [r["id"] for r in second.json()] == [0, 1, 2]
    assert {r["error"]["code"] for r in second.json()} == {-32005}


# -- caps ------------------------------------------------------------------------------------------


async def test_the_subscription_cap_per_connection() -> None:
    with trio.fail_after(60):
        async with keyed({"s": {"max_subscriptions": 2}}) as node:
            async with dapp(node.ws_url("s")) as conn:
                first = await conn.result("eth_subscribe", ["newHeads"])
                await conn.result("eth_subscribe", ["logs", {}])
                refused = await conn.call("eth_subscribe", ["newHeads"])
                assert refused["error"] == {
                    "code": -32005,
                    "message": "limit exceeded",
                    "data": {"limit": "max_subscriptions", "max": 2},
                }
                # Through a session too.
                scopes = {
                    DEV: {"methods": ["eth_subscribe"], "notifications": ["eth_subscription"]}
                }
                await conn.result("wallet_createSession", {"optionalScopes": scopes})
                invoke = {
                    "scope": DEV,
                    "request": {"method": "eth_subscribe", "params": ["newHeads"]},
                }
                refused = await conn.call("wallet_invokeMethod", invoke)
                assert refused["error"]["code"] == -32005
                assert await conn.result("eth_unsubscribe", [first]) is True
                await conn.result("wallet_invokeMethod", invoke)
                assert (await conn.call("eth_subscribe", ["newHeads"]))["error"]["code"] == -32005
            async with dapp(node.ws_url("s")) as other:  # per connection, not per key
                await other.result("eth_subscribe", ["newHeads"])


async def test_the_connection_cap_per_key() -> None:
    with trio.fail_after(60):
        async with keyed({"c": {"max_connections": 2}}, None, "free") as node:
            async with dapp(node.ws_url("c")), dapp(node.ws_url("c")) as second:
                refused = await try_upgrade(node.port, "/ws/v3/c")
                assert refused.status == 429
                assert refused.headers["retry-after"] == "5"
                error = refused.json()["error"]
                assert error["code"] == -32005
                assert error["data"] == {"limit": "max_connections", "max": 2}
                assert (await try_upgrade(node.port, "/ws/v3/free")).status == 101  # not counted
                await second.ws.aclose()

                async def upgraded() -> bool:  # once the server saw the close
                    return (await try_upgrade(node.port, "/ws/v3/c")).status == 101

                await eventually(upgraded, "the closed connection's slot comes back", every=0.05)


# -- secrets and tokens ----------------------------------------------------------------------------


async def test_a_secret_is_required_with_basic_auth(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECRET_OF_S", "open-sesame")
    with trio.fail_after(60):
        async with keyed({"s": {"secret": "env:SECRET_OF_S"}}) as node:
            missing = await post(node, "s")
            assert missing.status_code == 401
            assert missing.headers["www-authenticate"] == 'Basic realm="scopecast"'
            assert error_of(missing)["code"] == -32001
            assert (await post(node, "s", auth=("", "wrong"))).status_code == 401
            assert (await post(node, "s", auth=("s", "open-sesame"))).json()["result"] == "0x539"
            assert (await post(node, "s", auth=("", "open-sesame"))).status_code == 200


@pytest.fixture(scope="module")
def signer() -> SigningKey:
    return SigningKey.rsa()


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


async def test_tokens_over_http_only_the_valid_one_is_accepted(
    signer: SigningKey, tmp_path: Path
) -> None:
    keys = {"j": {"jwt_public_key": signer.write_public(tmp_path / "j.pem")}}
    cases = {
        "valid": signer.token("j"),
        "expired": signer.token("j", expires_in=-120),
        "wrong key": SigningKey.rsa().token("j"),
        "wrong audience": signer.token("other"),
        "alg none": signer.unsigned("j"),
        "HS256 with the public key as secret": signer.hs256_with_public_key("j"),
    }
    with trio.fail_after(60):
        async with keyed(keys) as node:
            accepted = [
                case
                for case, token in cases.items()
                if (await post(node, "j", headers=bearer(token))).status_code == 200
            ]
            assert accepted == ["valid"]
            refused = await post(node, "j", headers=bearer(cases["alg none"]))
            assert refused.status_code == 401
            assert error_of(refused)["message"].startswith("invalid token")
            assert (await post(node, "j")).status_code == 401


async def test_a_token_narrows_the_key_never_widens_it(signer: SigningKey, tmp_path: Path) -> None:
    keys = {
        "j": {
            "jwt_public_key": signer.write_public(tmp_path / "j.pem"),
            "methods": ["eth_chainId", "eth_blockNumber"],
            "origins": [APP],
        }
    }
    token = signer.token("j", methods=["eth_blockNumber", "eth_getBalance"])
    with trio.fail_after(60):
        async with keyed(keys) as node:
            headers = {**bearer(token), "origin": APP}
            narrowed = error_of(await post(node, "j", headers=headers))
            assert narrowed["code"] == -32601
            assert "the token's methods" in narrowed["message"]
            widened = {**CALL, "method": "eth_getBalance", "params": ["0x" + "00" * 20, "latest"]}
            assert (
                "keys.j.methods"
                in error_of(await post(node, "j", widened, headers=headers))["message"]
            )
            both = {**CALL, "method": "eth_blockNumber"}
            assert "result" in (await post(node, "j", both, headers=headers)).json()
            elsewhere = signer.token("j", origins=["https://other.example.com"])
            reply = await post(node, "j", headers={**bearer(elsewhere), "origin": APP})
            assert reply.status_code == 403


async def test_a_websocket_token_in_the_query_expires_unless_renewed(
    signer: SigningKey, tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    # The renewal is allowed whatever the key's methods (and the token's) are.
    public_key = signer.write_public(tmp_path / "j.pem")
    keys = {"j": {"jwt_public_key": public_key, "methods": ["eth_chainId"]}}
    with trio.fail_after(60):
        async with keyed(keys, {"token_grace": 0.5}, clock=mock_clock) as node:

            def token(audience: str, **claims: Any) -> str:
                return signer.token(audience, now=node.now().timestamp(), **claims)

            assert (await try_upgrade(node.port, "/ws/v3/j")).status == 401
            # Past the leeway, by the broker's clock: refused at the door.
            gone = token("j", expires_in=-61)
            assert (await try_upgrade(node.port, f"/ws/v3/j?token={gone}")).status == 401
            # The leeway admits a token 59 s past its expiry; the grace then closes it at once.
            stale = token("j", expires_in=-59)
            expiring = await RawWebSocket.connect(node.port, f"/ws/v3/j?token={stale}")
            try:
                await expiring.call(CALL)
                assert (await expiring.message())["result"] == "0x539"
                mock_clock.jump(TOKEN_CHECK_INTERVAL)  # the next check's time
                assert await expiring.message() is None  # closed by the server
                assert expiring.close_code == CLOSE_TOKEN_EXPIRED
            finally:
                expiring.close()
            first = token("j", expires_in=1, methods=["eth_*"])
            unrenewed = await RawWebSocket.connect(node.port, f"/ws/v3/j?token={first}")
            try:
                async with dapp(f"{node.ws_url('j')}?token={first}") as kept:
                    renewed = await kept.result("scopecast_refreshToken", [token("j")])
                    assert renewed["expires"] > node.now().timestamp() + 60
                    for wrong in ([], [token("j"), token("j")], [17], {"token": token("j")}):
                        refused = await kept.call("scopecast_refreshToken", wrong)
                        assert refused["error"]["code"] == -32602, wrong
                        assert "takes one parameter" in refused["error"]["message"]
                    bad = await kept.call("scopecast_refreshToken", [token("other")])
                    assert bad["error"]["code"] == -32001
                    late = await kept.call("scopecast_refreshToken", [token("j", expires_in=-61)])
                    assert late["error"]["code"] == -32001
                    # Past the first token's expiry and grace: the check that closes the other
                    # connection of that token (unrenewed) would have closed this one with it.
                    mock_clock.jump(1 + 0.5 + TOKEN_CHECK_INTERVAL)
                    assert await unrenewed.message() is None
                    assert unrenewed.close_code == CLOSE_TOKEN_EXPIRED
                    assert await kept.result("eth_chainId", []) == "0x539"
            finally:
                unrenewed.close()


# -- metrics ---------------------------------------------------------------------------------------


async def test_metrics_count_per_configured_key() -> None:
    keys = {"r": {"requests_per_second": 1, "burst": 1}, "c": {"max_connections": 1}}
    with trio.fail_after(60):
        async with keyed(keys) as node:
            await post(node, "r", body=[CALL] * 3)  # one answered, two limited
            await post(node, "nobody")  # unknown keys never become labels
            async with dapp(node.ws_url("c")):
                assert (await try_upgrade(node.port, "/ws/v3/c")).status == 429
            async with httpx.AsyncClient(trust_env=False) as client:
                text = (await client.get(f"{node.base}/metrics")).text
    assert 'scopecast_requests_limited_total{key="r"} 2.0' in text
    assert 'scopecast_requests_limited_total{key="c"} 0.0' in text
    assert 'scopecast_connections_refused_total{key="c"} 1.0' in text
    assert "nobody" not in text
