"""CORS is the broker's policy per endpoint (broker.access.origins), over real sockets: the JSON-RPC
paths grant browser dapps (any origin, or the key's ``origins``), the operator endpoints grant
nobody, and ``/admin`` refuses a page of another origin before it looks at the token."""

from __future__ import annotations

from typing import Any

import httpx
import msgspec
import pytest
import trio

from broker.access.origins import loopback_host, same_origin
from broker.compose import ServeOptions
from broker.config import Config
from tests.support.inprocess import RunningBroker, running_broker

APP = "https://app.example.com"
EVIL = "https://evil.example"
CALL = {"jsonrpc": "2.0", "id": 7, "method": "eth_chainId", "params": []}
PREFLIGHT = {
    "access-control-request-method": "POST",
    "access-control-request-headers": "content-type",
}


def grants(response: httpx.Response) -> dict[str, str]:
    return {k: v for k, v in response.headers.items() if k.startswith("access-control-")}


def serving() -> Any:
    # "plain" has no [keys] table (its cached answers come from the HTTP reactor's fast path),
    # "open" has a table without origins, "dapp" allows APP alone.
    config = msgspec.convert({"keys": {"open": {}, "dapp": {"origins": [APP]}}}, Config)
    return running_broker(ServeOptions(block_time=0, api_keys=["plain"]), config=config)


async def test_the_rpc_paths_grant_browser_dapps_as_their_key_allows() -> None:
    with trio.fail_after(60):
        async with serving() as node, httpx.AsyncClient(trust_env=False) as client:
            for key in ("plain", "open"):
                for _ in range(3):  # the first answer from the chain, then from the cache
                    answer = await client.post(
                        node.http_url(key), json=CALL, headers={"origin": EVIL}
                    )
                    assert answer.json()["result"] == "0x539"
                    assert grants(answer)["access-control-allow-origin"] == "*"
                preflight = await client.options(
                    node.http_url(key), headers={"origin": EVIL, **PREFLIGHT}
                )
                assert preflight.status_code == 204
                assert grants(preflight)["access-control-allow-origin"] == "*"
                assert "content-type" in grants(preflight)["access-control-allow-headers"]

            allowed = await client.post(node.http_url("dapp"), json=CALL, headers={"origin": APP})
            assert allowed.json()["result"] == "0x539"
            assert grants(allowed)["access-control-allow-origin"] == APP
            assert allowed.headers["vary"] == "origin"
            preflight = await client.options(
                node.http_url("dapp"), headers={"origin": APP, **PREFLIGHT}
            )
            assert preflight.status_code == 204
            assert grants(preflight)["access-control-allow-origin"] == APP
            assert "POST" in grants(preflight)["access-control-allow-methods"]

            refused = await client.post(node.http_url("dapp"), json=CALL, headers={"origin": EVIL})
            assert refused.status_code == 403
            assert grants(refused) == {}
            preflight = await client.options(
                node.http_url("dapp"), headers={"origin": EVIL, **PREFLIGHT}
            )
            assert grants(preflight) == {}

            unknown = await client.post(node.http_url("nobody"), json=CALL, headers={"origin": APP})
            assert unknown.status_code == 401
            assert grants(unknown)["access-control-allow-origin"] == "*"  # a dapp reads why


async def admin_call(
    client: httpx.AsyncClient, node: RunningBroker, headers: dict[str, str]
) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "admin_listApprovals", "params": {}}
    return await client.post(f"{node.base}/admin", json=body, headers=headers)


async def test_the_operator_endpoints_grant_no_origin_and_admin_refuses_other_sites() -> None:
    token = {"authorization": "Bearer dev"}
    with trio.fail_after(60):
        async with running_broker(ServeOptions(block_time=0)) as node:
            own = f"http://127.0.0.1:{node.port}"
            async with httpx.AsyncClient(trust_env=False) as client:
                # A page of another site, even one that knows the dev token: refused, no grant.
                foreign = await admin_call(client, node, {**token, "origin": EVIL})
                assert foreign.status_code == 403
                assert "not other sites" in foreign.json()["error"]["message"]
                assert grants(foreign) == {}
                for origin in (EVIL, "null", f"http://127.0.0.1:{node.port + 1}"):
                    refused = await admin_call(client, node, {**token, "origin": origin})
                    assert refused.status_code == 403, origin
                # DNS rebinding: a page whose name now resolves to 127.0.0.1 is of its own origin
                # to the browser, and names itself in Host: refused while the token is public.
                rebound = f"evil.example:{node.port}"
                refused = await admin_call(
                    client, node, {**token, "host": rebound, "origin": f"http://{rebound}"}
                )
                assert refused.status_code == 403
                # Its preflight gets no grant either, before any token.
                preflight = await client.options(
                    f"{node.base}/admin",
                    headers={
                        "origin": EVIL,
                        **PREFLIGHT,
                        "access-control-request-headers": "authorization",
                    },
                )
                assert preflight.status_code == 403
                assert grants(preflight) == {}
                # A script (no Origin) and the console's own page (its origin) are answered.
                for headers in (token, {**token, "origin": own}):
                    answered = await admin_call(client, node, headers)
                    assert answered.status_code == 200, answered.text
                    assert answered.json()["result"] == []
                    assert grants(answered) == {}
                for path in ("/metrics", "/console", "/healthz"):
                    page = await client.get(f"{node.base}{path}", headers={"origin": EVIL})
                    assert page.status_code == 200, path
                    assert grants(page) == {}, path


@pytest.mark.parametrize(
    ("origin", "host", "same"),
    [
        (None, b"127.0.0.1:8545", True),  # a script
        (b"http://127.0.0.1:8545", b"127.0.0.1:8545", True),
        (b"HTTP://LocalHost:8545", b"localhost:8545", True),
        (b"https://broker.example", b"broker.example", True),  # behind a TLS proxy
        (b"https://broker.example", b"broker.example:443", True),
        (b"http://127.0.0.1:8546", b"127.0.0.1:8545", False),
        (b"https://evil.example", b"127.0.0.1:8545", False),
        (b"null", b"127.0.0.1:8545", False),
        (b"http://127.0.0.1:8545", None, False),
    ],
)
def test_same_origin(origin: bytes | None, host: bytes | None, same: bool) -> None:
    assert same_origin(origin, host) is same


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        (b"127.0.0.1:8545", True),
        (b"127.9.9.9", True),
        (b"localhost", True),
        (b"app.localhost:3000", True),
        (b"[::1]:8545", True),
        (b"[::1]", True),
        (b"evil.example:8545", False),
        (b"10.0.0.1:8545", False),
        (b"127.0.0.1.evil.example", False),
        (None, False),
    ],
)
def test_loopback_host(host: bytes | None, loopback: bool) -> None:
    assert loopback_host(host) is loopback
