"""The operator console's server side over real sockets: the page's headers, the feed's sign-in
(first message, or the header), its refusals (401 like ``/admin``, 403 for another site's page),
and the events it pushes as dapps ask, are answered, connect and are revoked."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import msgspec
import pytest
import trio
import trio.testing
import trio_websocket

from broker.compose import ServeOptions
from broker.config import Config, ServerConfig
from broker.operator.admin import DISABLED
from broker.operator.console._feed import FeedSubscriber
from broker.operator.console._feed_connection import CLOSE_WRONG_TOKEN
from broker.sessions import Identity, Session
from tests.support.inprocess import RunningBroker, dapp, running_broker, waiting_approval
from tests.support.rawws import RawWebSocket

DEV = "eip155:1337"
REQUEST = {"optionalScopes": {DEV: {"methods": ["eth_blockNumber"], "notifications": []}}}


def manual(timeout: float = 300.0) -> Config:
    return Config(server=ServerConfig(approval="manual", approval_timeout=timeout))


def feed_url(node: RunningBroker) -> str:
    return f"ws://127.0.0.1:{node.port}/admin/ws"


@asynccontextmanager
async def signed_in_feed(
    node: RunningBroker, token: str = "dev"
) -> AsyncIterator[trio_websocket.WebSocketConnection]:
    """A feed connection signed in as a browser does (the token as the first message)."""
    async with trio_websocket.open_websocket_url(feed_url(node)) as ws:
        await ws.send_message(json.dumps({"token": token}))
        yield ws


async def refused_upgrade(node: RunningBroker, **headers: str) -> httpx.Response:
    """The answer to a WebSocket upgrade of the feed that is expected to be refused."""
    handshake = {
        "upgrade": "websocket",
        "connection": "Upgrade",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
        "sec-websocket-version": "13",
    }
    async with httpx.AsyncClient() as client:
        return await client.get(f"{node.base}/admin/ws", headers={**handshake, **headers})


async def next_message(ws: trio_websocket.WebSocketConnection) -> dict[str, Any]:
    message: dict[str, Any] = json.loads(await ws.get_message())
    return message


async def next_of(ws: trio_websocket.WebSocketConnection, kind: str) -> dict[str, Any]:
    """The next message of type ``kind`` (``connections`` counts may come in between)."""
    while True:
        message = await next_message(ws)
        if message["type"] == kind:
            return message


async def test_the_page_and_its_files_carry_a_strict_policy() -> None:
    with trio.fail_after(60):
        async with (
            running_broker(ServeOptions(block_time=0)) as node,
            httpx.AsyncClient() as client,
        ):
            page = await client.get(f"{node.base}/console")
            assert page.status_code == 200
            assert page.headers["content-type"].startswith("text/html")
            policy = page.headers["content-security-policy"]
            assert "script-src 'self'" in policy
            assert "connect-src 'self'" in policy
            assert "frame-ancestors 'none'" in policy
            assert "unsafe" not in policy  # no unsafe-inline, no unsafe-eval
            assert page.headers["x-frame-options"] == "DENY"
            assert page.headers["x-content-type-options"] == "nosniff"
            # No inline script or handler: the policy would block it anyway.
            assert not re.search(r"<script(?![^>]*\bsrc=)", page.text)
            assert not re.search(r"\son\w+=", page.text)
            script = await client.get(f"{node.base}/console/console.js")
            assert script.headers["content-type"].startswith("text/javascript")
            # Dapp values are set as text only: nothing in the script parses HTML.
            assert not re.search(
                r"\.(inner|outer)HTML\s*=|insertAdjacentHTML|document\.write|eval\(", script.text
            )
            assert script.headers["x-frame-options"] == "DENY"
            missing = await client.get(f"{node.base}/console/secrets.txt")
            assert missing.status_code == 404
            posted = await client.post(f"{node.base}/console")
            assert posted.status_code == 405


async def test_without_an_admin_token_off_loopback_the_console_answers_401() -> None:
    with trio.fail_after(60):
        async with running_broker(ServeOptions(host="0.0.0.0", api_keys=["k"], block_time=0)) as (
            node
        ):
            async with httpx.AsyncClient() as client:
                page = await client.get(f"{node.base}/console")
                assert page.status_code == 401
                assert page.json()["error"]["message"] == DISABLED
                assert page.headers["x-frame-options"] == "DENY"
            refused = await refused_upgrade(node)
            assert refused.status_code == 401
            assert refused.json()["error"]["message"] == DISABLED


async def test_a_wrong_token_gets_no_data() -> None:
    with trio.fail_after(60):
        async with running_broker(ServeOptions(block_time=0)) as node:
            ws = await RawWebSocket.connect(node.port, "/admin/ws")
            try:
                await ws.send_text(json.dumps({"token": "wrong"}))
                assert await ws.message() is None  # no snapshot: a close frame
                assert ws.close_code == CLOSE_WRONG_TOKEN
            finally:
                ws.close()
            # A header, when the client can send one, is checked like /admin's: 401.
            rejected = await refused_upgrade(node, authorization="Bearer wrong")
            assert rejected.status_code == 401


async def test_the_right_header_signs_in_at_once() -> None:
    with trio.fail_after(60):
        async with (
            running_broker(ServeOptions(block_time=0)) as node,
            trio_websocket.open_websocket_url(
                feed_url(node), extra_headers=[(b"Authorization", b"Bearer dev")]
            ) as ws,
        ):
            snapshot = await next_message(ws)
            assert snapshot["type"] == "snapshot"
            assert snapshot["devToken"] is True
            assert snapshot["approvals"] == []
            assert snapshot["sessions"] == []


async def test_another_sites_page_cannot_open_the_feed() -> None:
    with trio.fail_after(60):
        async with running_broker(ServeOptions(block_time=0)) as node:
            rejected = await refused_upgrade(node, origin="https://evil.example")
            assert rejected.status_code == 403
            same_site = [(b"Origin", f"http://127.0.0.1:{node.port}".encode())]
            async with trio_websocket.open_websocket_url(
                feed_url(node), extra_headers=same_site
            ) as ws:
                await ws.send_message(json.dumps({"token": "dev"}))
                assert (await next_message(ws))["type"] == "snapshot"


async def test_a_console_that_does_not_sign_in_is_closed(
    mock_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(60):  # the sign-in timeout passes in virtual seconds
        async with running_broker(ServeOptions(block_time=0), clock=mock_clock) as node:
            ws = await RawWebSocket.connect(node.port, "/admin/ws")
            try:
                assert await ws.message() is None
                assert ws.close_code == 1008
            finally:
                ws.close()


async def test_the_feed_follows_requests_answers_connections_and_revocations() -> None:
    with trio.fail_after(60):
        async with (
            running_broker(ServeOptions(block_time=0), config=manual()) as node,
            signed_in_feed(node) as ws,
        ):
            assert (await next_message(ws))["type"] == "snapshot"
            async with (
                dapp(node.ws_url(), origin="https://a.example") as a,
                trio.open_nursery() as n,
            ):
                replies: list[Any] = []

                async def create() -> None:
                    replies.append(await a.call("wallet_createSession", REQUEST))

                n.start_soon(create)
                asked = (await next_of(ws, "approval"))["approval"]
                assert asked["kind"] == "session"
                assert asked["origin"] == "https://a.example"
                assert asked["expires"] > asked["created"]
                assert asked["request"]["scopes"][DEV]["methods"] == ["eth_blockNumber"]
                await node.admin("admin_approve", {"id": asked["id"]})
                answered = await next_of(ws, "answered")
                assert answered == {"type": "answered", "id": asked["id"], "outcome": "approved"}
                changed = await next_of(ws, "session")
                assert changed["origin"] == "https://a.example"
                assert changed["session"]["connections"] == 1
                assert list(changed["session"]["sessionScopes"]) == [DEV]
            # The dapp left: its count went down (its session lives on).
            assert (await next_of(ws, "connections"))["count"] == 0
            # A console that signs in now gets it all in its snapshot.
            async with signed_in_feed(node) as late:
                snapshot = await next_message(late)
                assert [s["origin"] for s in snapshot["sessions"]] == ["https://a.example"]
            await node.admin(
                "admin_revokeSession", {"apiKey": "dev", "origin": "https://a.example"}
            )
            revoked = await next_of(ws, "session")
            assert revoked == {
                "type": "session",
                "apiKey": "dev",
                "origin": "https://a.example",
                "session": None,
            }


async def test_the_feed_says_when_a_request_times_out_or_is_withdrawn(
    mock_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(60):  # the approval timeout passes in virtual seconds
        async with (
            running_broker(
                ServeOptions(block_time=0), config=manual(timeout=0.5), clock=mock_clock
            ) as (node),
            signed_in_feed(node) as ws,
        ):
            await next_message(ws)
            async with dapp(node.ws_url()) as a:
                reply = await a.call("wallet_createSession", REQUEST)
                assert reply["error"]["code"] == 4001
            await next_of(ws, "approval")
            assert (await next_of(ws, "answered"))["outcome"] == "timedOut"
        async with (
            running_broker(ServeOptions(block_time=0), config=manual(), clock=mock_clock) as node,
            signed_in_feed(node) as ws,
        ):
            await next_message(ws)
            async with dapp(node.ws_url()) as gone:
                await gone.ws.send_message(
                    json.dumps(
                        {
                            "jsonrpc": "2.0",
                            "id": 1,
                            "method": "wallet_createSession",
                            "params": REQUEST,
                        }
                    )
                )
                await waiting_approval(node)
            assert (await next_of(ws, "answered"))["outcome"] == "withdrawn"


def test_a_console_that_falls_behind_is_told_once_and_gets_nothing_more() -> None:
    send, receive = trio.open_memory_channel[bytes](2)
    overflows: list[bool] = []
    subscriber = FeedSubscriber(send, lambda: overflows.append(True))
    subscriber.offer(b"held")  # held back while the snapshot is read
    subscriber.release(b"snapshot")
    subscriber.offer(b"after")  # the queue (2) is full now
    subscriber.offer(b"more")
    assert overflows == [True]
    assert subscriber.fell_behind
    assert [receive.receive_nowait(), receive.receive_nowait()] == [b"snapshot", b"held"]
    with pytest.raises(trio.WouldBlock):
        receive.receive_nowait()


async def test_a_session_ending_at_its_expiry_leaves_the_console() -> None:
    with trio.fail_after(60):
        async with (
            running_broker(ServeOptions(block_time=0), expiry_check=0.05) as node,
            signed_in_feed(node) as ws,
        ):
            assert node.broker.sessions is not None
            await next_message(ws)
            async with dapp(node.ws_url(), origin="https://a.example") as a:
                await a.result("wallet_createSession", REQUEST)
            assert (await next_of(ws, "session"))["session"] is not None
            past = datetime.now(UTC) - timedelta(seconds=1)

            def expired(current: Session | None) -> tuple[Session | None, None]:
                assert current is not None
                return msgspec.structs.replace(current, expiry=past), None

            identity = Identity.of("dev", "https://a.example")
            await node.broker.sessions.store.modify(identity, expired)
            # The dapp comes back: this process looks its session up, finds it over, ends it.
            async with dapp(node.ws_url(), origin="https://a.example"):
                ended = await next_of(ws, "session")
            assert ended["origin"] == "https://a.example"
            assert ended["session"] is None
