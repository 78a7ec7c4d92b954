"""The operator's side of sessions over real sockets: narrowing approvals, timeouts, the admin API's
HTTP answers, expiry reaching a tab that only listens, and 5000 when the session store fails."""

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import msgspec
import pytest
import trio
from eth_account import Account
from eth_account.messages import encode_defunct

from broker.compose import ServeOptions
from broker.config import Config, ServerConfig
from broker.operator.admin import DISABLED, AdminApi
from broker.sessions import Identity, Session
from tests.support.inprocess import Dapp, RunningBroker, dapp, running_broker, waiting_approval
from tests.support.processes import start_scopecast
from tests.support.redis_server import redis_server
from tests.support.waiting import eventually

DEV = "eip155:1337"
FIRST = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"
SECOND = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"
METHODS = ["eth_blockNumber", "eth_getBlockByNumber", "eth_subscribe", "personal_sign"]
REQUEST = {"optionalScopes": {DEV: {"methods": METHODS, "notifications": ["eth_subscription"]}}}
DAPP = Identity.of("dev", None)  # the dapps of these tests send no Origin
USER_REJECTED = {"code": 4001, "message": "User rejected the request."}


def manual(timeout: float = 300.0) -> Config:
    return Config(server=ServerConfig(approval="manual", approval_timeout=timeout))


async def create_with_operator(node: RunningBroker, a: Dapp, answer: dict[str, Any]) -> Any:
    """createSession while the operator sends ``admin_approve`` with ``answer``; the dapp's reply."""
    replies: list[Any] = []

    async def create() -> None:
        replies.append(await a.call("wallet_createSession", REQUEST))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(create)
        approval = await waiting_approval(node)
        reply = await node.admin("admin_approve", {"id": approval["id"], **answer})
        if "error" in reply:
            nursery.cancel_scope.cancel()
            return reply
        assert reply["result"] is True
    return replies[0]


async def test_operator_narrows_methods_and_notifications_but_never_widens() -> None:
    with trio.fail_after(60):
        async with running_broker(ServeOptions(block_time=0), config=manual()) as node:
            async with dapp(node.ws_url()) as a:
                narrowed = {
                    DEV: {
                        # eth_getBalance was not requested: an approval cannot add it
                        "methods": ["eth_blockNumber", "eth_getBalance"],
                        "notifications": [],
                        "accounts": [f"{DEV}:{SECOND}"],
                    }
                }
                reply = await create_with_operator(node, a, {"sessionScopes": narrowed})
                granted = reply["result"]["sessionScopes"][DEV]
                assert granted == {
                    "methods": ["eth_blockNumber"],
                    "notifications": [],
                    "accounts": [f"{DEV}:{SECOND}"],
                }
                denied = await a.call(
                    "wallet_invokeMethod",
                    {"scope": DEV, "request": {"method": "personal_sign", "params": []}},
                )
                assert denied["error"]["code"] == 4100


async def test_operator_scopes_are_validated_like_a_request() -> None:
    with trio.fail_after(60):
        async with running_broker(ServeOptions(block_time=0), config=manual()) as node:
            async with dapp(node.ws_url()) as a:
                reply = await create_with_operator(
                    node, a, {"sessionScopes": {DEV: {"methods": "eth_blockNumber"}}}
                )
                assert reply["error"]["code"] == -32602
                assert "sessionScopes['eip155:1337']" in reply["error"]["message"]


async def test_a_session_nobody_approves_is_rejected_at_the_timeout(
    mock_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(60):  # the approval timeout passes in virtual seconds
        config = manual(timeout=0.5)
        async with running_broker(
            ServeOptions(block_time=0), config=config, clock=mock_clock
        ) as node:
            async with dapp(node.ws_url()) as a:
                reply = await a.call("wallet_createSession", REQUEST)
                assert reply["error"] == {**USER_REJECTED, "data": {"reason": "approval timed out"}}
                assert (await a.result("wallet_getSession", {}))["sessionScopes"] == {}


async def test_a_signature_nobody_approves_is_rejected_at_the_timeout(
    mock_clock: trio.testing.MockClock,
) -> None:
    with trio.fail_after(60):  # the approval timeout passes in virtual seconds
        config = manual(timeout=1.0)
        async with running_broker(
            ServeOptions(block_time=0), config=config, clock=mock_clock
        ) as node:
            async with dapp(node.ws_url()) as a:
                created = await create_with_operator(node, a, {})
                assert created["result"]["sessionScopes"][DEV]["accounts"] == [f"{DEV}:{FIRST}"]
                sign = {"method": "personal_sign", "params": ["0x6869", FIRST]}
                reply = await a.call("wallet_invokeMethod", {"scope": DEV, "request": sign})
                assert reply["error"] == {**USER_REJECTED, "data": {"reason": "approval timed out"}}


async def test_admin_answers_401_without_the_right_bearer_token() -> None:
    with trio.fail_after(60):
        async with (
            running_broker(ServeOptions(block_time=0)) as node,
            httpx.AsyncClient() as client,
        ):
            assert isinstance(node.broker.admin, AdminApi)
            assert node.broker.admin.enabled  # the dev token on loopback
            body = {"jsonrpc": "2.0", "id": 1, "method": "admin_listSessions", "params": {}}
            for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": "dev"}):
                reply = await client.post(f"{node.base}/admin", json=body, headers=headers)
                assert reply.status_code == 401
                assert reply.json()["error"]["code"] == -32001
            ok = await client.post(
                f"{node.base}/admin", json=body, headers={"authorization": "Bearer dev"}
            )
            assert ok.status_code == 200
            assert ok.json()["result"] == []


async def test_admin_off_loopback_without_a_token_answers_401() -> None:
    # Built as for `serve --host 0.0.0.0` (no dev token there), served on loopback for the test.
    with trio.fail_after(60):
        async with running_broker(ServeOptions(host="0.0.0.0", api_keys=["k"], block_time=0)) as (
            node
        ):
            assert isinstance(node.broker.admin, AdminApi)
            assert not node.broker.admin.enabled
            async with httpx.AsyncClient() as client:
                reply = await client.post(
                    f"{node.base}/admin",
                    json={"jsonrpc": "2.0", "id": 1, "method": "admin_listSessions"},
                    headers={"authorization": "Bearer dev"},
                )
            assert reply.status_code == 401
            assert reply.json()["error"] == {"code": -32001, "message": DISABLED}


async def test_a_tab_that_reconnects_and_only_listens_hears_its_session_expire() -> None:
    with trio.fail_after(60):
        async with running_broker(ServeOptions(block_time=0), expiry_check=0.05) as node:
            assert node.broker.sessions is not None
            async with dapp(node.ws_url()) as a:
                await a.result("wallet_createSession", REQUEST)
            # The session expires while no tab is connected (the in-memory store keeps it: whoever
            # reads it next ends it), without waiting on the clock.
            past = datetime.now(UTC) - timedelta(seconds=1)

            def expired(current: Session | None) -> tuple[Session | None, None]:
                assert current is not None
                return msgspec.structs.replace(current, expiry=past), None

            await node.broker.sessions.store.modify(DAPP, expired)
            async with dapp(node.ws_url()) as b:  # the same identity, after a reconnect: no calls
                assert (await b.notification())["params"] == {"sessionScopes": {}}
            assert await node.broker.sessions.store.get(DAPP) is None


async def test_direct_signing_over_the_websocket_of_the_dev_network() -> None:
    with trio.fail_after(60):
        async with running_broker(ServeOptions(block_time=0)) as node, dapp(node.ws_url()) as a:
            signature = await a.result("personal_sign", ["0x6869", SECOND])
            recovered = Account.recover_message(encode_defunct(b"hi"), signature=signature)
            assert recovered.lower() == SECOND


@pytest.mark.slow
async def test_session_store_failure_is_5000_and_the_connection_lives_on() -> None:
    with redis_server() as redis, trio.fail_after(90):
        async with trio.open_nursery() as nursery:
            node = await start_scopecast(nursery, "--block-time", "0", "--redis-url", redis.url)
            async with dapp(node.ws_url()) as a:
                await a.result("wallet_createSession", REQUEST)
                redis.stop()  # a real outage of the session store
                failed = await a.call("wallet_createSession", REQUEST)
                assert failed["error"]["code"] == 5000
                revoked = await a.call("wallet_revokeSession", {})
                assert revoked["error"]["code"] == 5000
                assert (await a.result("eth_chainId", [])) == "0x539"
            await node.stop()


async def test_answering_a_request_that_is_not_waiting_names_it() -> None:
    with trio.fail_after(60):
        async with running_broker(ServeOptions(approval="manual", block_time=0)) as node:
            for method in ("admin_approve", "admin_reject"):
                reply = await node.admin(method, {"id": "404"})
                assert reply["error"]["code"] == -32602
                assert "no request '404' is waiting" in reply["error"]["message"]
            # A dapp that asks, then hangs up: its request is dropped, not left approvable.
            async with dapp(node.ws_url(), origin="https://gone.example") as gone:
                await gone.ws.send_message(
                    msgspec.json.encode(
                        {
                            "jsonrpc": "2.0",
                            "id": 1,
                            "method": "wallet_createSession",
                            "params": REQUEST,
                        }
                    ).decode()
                )
                approval = await waiting_approval(node)

            async def none_waiting() -> bool:  # dropped as the connection's calls end
                return (await node.admin("admin_listApprovals", {}))["result"] == []

            await eventually(none_waiting, "the request of the dapp that hung up is dropped")
            reply = await node.admin("admin_approve", {"id": approval["id"]})
            assert "hung up" in reply["error"]["message"]


async def test_an_approval_id_may_be_sent_as_a_number() -> None:
    """admin_listApprovals gives "1"; the operator may type {"id": 1}."""
    with trio.fail_after(60):
        async with running_broker(ServeOptions(block_time=0), config=manual()) as node:
            async with dapp(node.ws_url()) as a:
                reply = await create_with_operator(node, a, {"id": 1})
                assert reply["result"]["sessionScopes"][DEV]["accounts"] == [f"{DEV}:{FIRST}"]
