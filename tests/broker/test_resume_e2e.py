"""Resume after a dropped socket (one process, the dev chain mining on demand): a client that
reconnects with its last cursor gets exactly what it missed, in order, with the same subscription
ids, then ``scopecast_resumed``, then the live notifications; a cursor that cannot be honoured says
so at once and the connection starts fresh."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any
from urllib.parse import quote

import pytest
import trio
import trio.testing

from broker.compose import ServeOptions
from broker.sessions import Identity
from tests.broker.test_subscriptions_e2e import mine, token_address, transfer
from tests.support.inprocess import Dapp, RunningBroker, dapp, running_broker
from tests.support.rawws import RawWebSocket
from tests.support.waiting import eventually

DEV = "eip155:1337"
ORIGIN = "https://dapp.example"
SCOPES = {
    DEV: {"methods": ["eth_subscribe", "eth_unsubscribe"], "notifications": ["eth_subscription"]}
}


def resume_url(node: RunningBroker, cursor: str) -> str:
    return f"{node.ws_url()}?resume={quote(cursor)}"


async def resumed(conn: Dapp) -> dict[str, Any]:
    message = await conn.notification()
    assert message["method"] == "scopecast_resumed", message
    assert "cursor" not in message["params"]
    params: dict[str, Any] = message["params"]
    return params


async def session_subscription(conn: Dapp) -> str:
    await conn.result("wallet_createSession", {"optionalScopes": SCOPES})
    reply = await conn.result(
        "wallet_invokeMethod",
        {"scope": DEV, "request": {"method": "eth_subscribe", "params": ["newHeads"]}},
    )
    sub_id: str = reply["result"]["result"] if "result" in reply else reply
    return sub_id


def head_number(message: dict[str, Any]) -> tuple[str, int]:
    """(subscription id, block number) of a newHeads notification, direct or in a session."""
    params = message["params"]
    if message["method"] == "wallet_notify":
        assert params["scope"] == DEV
        params = params["notification"]["params"]
    else:
        assert message["method"] == "eth_subscription"
    return params["subscription"], int(params["result"]["number"], 16)


async def test_a_session_client_gets_exactly_the_blocks_it_missed(node: RunningBroker) -> None:
    with trio.fail_after(60):
        async with dapp(node.ws_url(), origin=ORIGIN) as conn:
            sub_id = await session_subscription(conn)
            await mine(node)
            _, seen = head_number(await conn.notification())
            cursor = conn.last_cursor
        assert cursor is not None
        await mine(node, 20)
        async with dapp(resume_url(node, cursor), origin=ORIGIN) as again:
            replayed = [head_number(await again.notification()) for _ in range(20)]
            assert replayed == [(sub_id, seen + i) for i in range(1, 21)]
            assert await resumed(again) == {"replayed": 20, "complete": True}
            await mine(node)
            assert head_number(await again.notification()) == (sub_id, seen + 21)
            # The subscription is this connection's now: it can end it.
            reply = await again.result(
                "wallet_invokeMethod",
                {"scope": DEV, "request": {"method": "eth_unsubscribe", "params": [sub_id]}},
            )
            assert reply["result"]["result"] is True


async def test_a_direct_subscription_resumes_and_cursors_advance(node: RunningBroker) -> None:
    with trio.fail_after(60):
        async with dapp(node.ws_url()) as conn:
            sub_id = await conn.result("eth_subscribe", ["newHeads"])
            await mine(node, 2)
            _, first = head_number(await conn.notification())
            cursor_one = conn.last_cursor
            await conn.notification()
            cursor = conn.last_cursor
            assert cursor is not None
            assert cursor != cursor_one
        await mine(node, 5)
        async with dapp(resume_url(node, cursor)) as again:
            replayed = [head_number(await again.notification()) for _ in range(5)]
            assert replayed == [(sub_id, first + i) for i in range(2, 7)]
            assert await resumed(again) == {"replayed": 5, "complete": True}
        # Resuming from the earlier cursor (after resuming once) still works: the token stays.
        assert cursor_one is not None
        async with dapp(resume_url(node, cursor_one)) as third:
            replayed = [head_number(await third.notification()) for _ in range(6)]
            assert replayed == [(sub_id, first + i) for i in range(1, 7)]
            assert await resumed(third) == {"replayed": 6, "complete": True}


async def test_a_logs_subscription_resumes_across_a_reorg(node: RunningBroker) -> None:
    token = await token_address(node)
    with trio.fail_after(60):
        async with dapp(node.ws_url()) as conn:
            await conn.result("eth_subscribe", ["logs", {"address": token}])
            before = await transfer(node, token, "0x" + "c1" * 20, 1)
            assert (await conn.notification())["params"]["result"]["transactionHash"] == before
            cursor = conn.last_cursor
        assert cursor is not None
        snapshot = (await node.rpc("evm_snapshot", []))["result"]
        orphaned = await transfer(node, token, "0x" + "a1" * 20, 7)
        assert (await node.rpc("evm_revert", [snapshot]))["result"] is True
        replacing = await transfer(node, token, "0x" + "b0" * 20, 8)
        async with dapp(resume_url(node, cursor)) as again:
            logs = [(await again.notification())["params"]["result"] for _ in range(3)]
            assert [(log["transactionHash"], log["removed"]) for log in logs] == [
                (orphaned, False),
                (orphaned, True),
                (replacing, False),
            ]
            assert await resumed(again) == {"replayed": 3, "complete": True}


@pytest.mark.parametrize(
    "cursor",
    ["garbage", "0123456789abcdef01234567.m000000-1", "not.a cursor", ""],
)
async def test_a_cursor_that_cannot_be_honoured_says_so_and_starts_fresh(
    node: RunningBroker, cursor: str
) -> None:
    with trio.fail_after(30):
        async with dapp(resume_url(node, cursor)) as conn:
            assert await resumed(conn) == {"replayed": 0, "complete": False}
            await mine(node)
            assert await conn.result("eth_blockNumber", []) is not None
            assert conn.notifications == []  # no subscription came back


async def test_another_dapps_cursor_is_refused(node: RunningBroker) -> None:
    with trio.fail_after(30):
        async with dapp(node.ws_url(), origin=ORIGIN) as conn:
            await conn.result("eth_subscribe", ["newHeads"])
            await mine(node)
            await conn.notification()
            cursor = conn.last_cursor
        assert cursor is not None
        async with dapp(resume_url(node, cursor), origin="https://evil.example") as thief:
            assert await resumed(thief) == {"replayed": 0, "complete": False}
            await mine(node)
            await thief.result("eth_blockNumber", [])
            assert thief.notifications == []


async def test_resuming_a_connection_still_open_takes_its_subscriptions_over(
    node: RunningBroker,
) -> None:
    with trio.fail_after(30):
        old = await RawWebSocket.connect(node.port, "/ws/v3/dev")
        try:
            await old.call(
                {"jsonrpc": "2.0", "id": 1, "method": "eth_subscribe", "params": ["newHeads"]}
            )
            sub_id = (await old.message())["result"]
            await mine(node)
            cursor = (await old.message())["params"]["cursor"]
            async with dapp(resume_url(node, cursor)) as new:
                assert await resumed(new) == {"replayed": 0, "complete": True}
                assert await old.message() is None  # closed by the server...
                assert old.close_code == 4010  # ...because another connection resumed it
                await mine(node)
                assert (await new.notification())["params"]["subscription"] == sub_id
        finally:
            old.close()


async def test_a_session_revoked_during_the_gap_is_heard_and_its_subscriptions_end(
    node: RunningBroker,
) -> None:
    with trio.fail_after(30):
        async with dapp(node.ws_url(), origin=ORIGIN) as conn:
            await session_subscription(conn)
            await mine(node)
            await conn.notification()
            cursor = conn.last_cursor
        assert cursor is not None
        sessions = (await node.admin("admin_listSessions", {}))["result"]
        (session,) = [s for s in sessions if s["origin"] == ORIGIN]
        reply = await node.admin(
            "admin_revokeSession", {"apiKey": session["apiKey"], "origin": ORIGIN}
        )
        assert "error" not in reply, reply
        async with dapp(resume_url(node, cursor), origin=ORIGIN) as again:
            changed = await again.notification()
            assert changed["method"] == "wallet_sessionChanged"
            assert changed["params"] == {"sessionScopes": {}}
            assert await resumed(again) == {"replayed": 1, "complete": True}
            await mine(node)
            await again.result("eth_blockNumber", [])
            assert again.notifications == []  # the revoked scope's subscription is gone


async def test_a_graceful_stop_closes_with_1012_and_the_last_cursor(node: RunningBroker) -> None:
    with trio.fail_after(30):
        conn = await RawWebSocket.connect(node.port, "/ws/v3/dev")
        try:
            await conn.call(
                {"jsonrpc": "2.0", "id": 1, "method": "eth_subscribe", "params": ["newHeads"]}
            )
            await conn.message()
            await mine(node)
            cursor = (await conn.message())["params"]["cursor"]
            node.broker.shutdown()  # what SIGTERM does
            while (frame := await conn.frame()) is not None and frame[0] != 0x8:
                pass
            assert frame is not None
            assert conn.close_code == 1012
            assert frame[1][2:].decode() == cursor
        finally:
            conn.close()


@pytest.fixture
async def clocked_node(mock_clock: trio.testing.MockClock) -> AsyncIterator[RunningBroker]:
    """The ``node`` on trio's clock: it runs at real speed (the dev chain mines in a worker
    thread, which a jumping clock would outrun) and jumps where the test says."""
    with trio.fail_after(60):
        async with running_broker(
            ServeOptions(block_time=0), clock=mock_clock, autojump=False
        ) as node:
            yield node


async def test_a_session_that_expired_during_the_gap_is_heard_on_resume(
    clocked_node: RunningBroker, mock_clock: trio.testing.MockClock
) -> None:
    node = clocked_node
    # Ended at its expiry (the watch sleeps until then): far enough for the connected part to
    # finish first on a busy machine, then reached by jumping the clock.
    lifetime = 20.0
    expiry = node.now() + timedelta(seconds=lifetime)
    with trio.fail_after(30 + lifetime):  # the jump counts
        async with dapp(node.ws_url(), origin=ORIGIN) as conn:
            await conn.result(
                "wallet_createSession",
                {"optionalScopes": SCOPES, "sessionProperties": {"expiry": expiry.isoformat()}},
            )
            await conn.result(
                "wallet_invokeMethod",
                {"scope": DEV, "request": {"method": "eth_subscribe", "params": ["newHeads"]}},
            )
            await mine(node)
            await conn.notification()
            cursor = conn.last_cursor
        assert cursor is not None
        # No connection of the dapp is open: the broker still ends the session on time (the
        # expiry watch wakes at its expiry and deletes it from the store), because the dapp may
        # resume.
        assert node.broker.sessions is not None
        store, identity = node.broker.sessions.store, Identity.of("dev", ORIGIN)

        async def deleted() -> bool:
            return await store.get(identity) is None

        mock_clock.jump(lifetime)  # to the expiry
        await eventually(deleted, "the expired session is deleted from the store")
        await mine(node, 2)
        async with dapp(resume_url(node, cursor), origin=ORIGIN) as again:
            changed = await again.notification()
            assert changed["method"] == "wallet_sessionChanged"
            assert changed["params"] == {"sessionScopes": {}}
            # No head of the expired session's subscription, then or later.
            assert await resumed(again) == {"replayed": 1, "complete": True}
            await mine(node)
            assert (await again.result("wallet_getSession", {}))["sessionScopes"] == {}
            assert again.notifications == []
