"""Multichain sessions over real WebSockets on the dev chain: create, get, invoke, revoke, changes."""

from datetime import UTC, datetime, timedelta
from typing import Any

import trio
import trio.testing

from broker.compose import ServeOptions
from tests.support.inprocess import RunningBroker, dapp, running_broker, waiting_approval

DEV = "eip155:1337"
FIRST = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"
SECOND = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"
ORIGIN = "https://dapp.example"
METHODS = ["eth_blockNumber", "eth_getBlockByNumber", "eth_subscribe", "personal_sign"]
NOTIFICATIONS = ["eth_subscription"]


def scopes(**extra: Any) -> dict[str, Any]:
    return {DEV: {"methods": METHODS, "notifications": NOTIFICATIONS, **extra}}


async def test_create_get_invoke_revoke(node: RunningBroker) -> None:
    with trio.fail_after(30):
        async with dapp(node.ws_url(), origin=ORIGIN) as a:
            created = await a.result("wallet_createSession", {"optionalScopes": scopes()})
            granted = created["sessionScopes"][DEV]
            assert granted["methods"] == METHODS
            assert granted["notifications"] == NOTIFICATIONS
            assert granted["accounts"] == [f"{DEV}:{FIRST}"]
            expiry = datetime.fromisoformat(created["sessionProperties"]["expiry"])
            assert timedelta(days=6) < expiry - datetime.now(UTC) <= timedelta(days=7)
            assert created["sessionProperties"]["globalConfig"] == {}

            assert (await a.result("wallet_getSession", {}))["sessionScopes"] == created[
                "sessionScopes"
            ]

            invoked = await a.result(
                "wallet_invokeMethod",
                {"scope": DEV, "request": {"method": "eth_blockNumber", "params": []}},
            )
            assert invoked["scope"] == DEV
            assert invoked["result"]["method"] == "eth_blockNumber"
            assert invoked["result"]["result"].startswith("0x")

            assert await a.result("wallet_revokeSession", {}) is True
            assert (await a.result("wallet_getSession", {}))["sessionScopes"] == {}
            denied = await a.call(
                "wallet_invokeMethod", {"scope": DEV, "request": {"method": "eth_blockNumber"}}
            )
            assert denied["error"] == {
                "code": 4100,
                "message": "The requested account and/or method has not been authorized by the user.",
                "data": {"reason": "no session: call wallet_createSession first"},
            }


async def test_requested_accounts_are_granted_when_held(node: RunningBroker) -> None:
    with trio.fail_after(30):
        async with dapp(node.ws_url()) as a:
            created = await a.result(
                "wallet_createSession",
                {"optionalScopes": scopes(accounts=[f"{DEV}:{SECOND}", f"{DEV}:0x{'12' * 20}"])},
            )
            assert created["sessionScopes"][DEV]["accounts"] == [f"{DEV}:{SECOND}"]


async def test_connections_of_one_identity_share_the_session_and_see_changes(
    node: RunningBroker,
) -> None:
    with trio.fail_after(30):
        async with dapp(node.ws_url(), origin=ORIGIN) as a, dapp(node.ws_url(), origin=ORIGIN) as b:
            async with dapp(node.ws_url(), origin="https://other.example") as stranger:
                created = await a.result("wallet_createSession", {"optionalScopes": scopes()})
                changed = await b.notification()
                assert changed == {
                    "jsonrpc": "2.0",
                    "method": "wallet_sessionChanged",
                    "params": {"sessionScopes": created["sessionScopes"]},
                }
                assert (await b.result("wallet_getSession", {}))["sessionScopes"] == created[
                    "sessionScopes"
                ]
                # another origin sees nothing and cannot invoke in it
                assert (await stranger.result("wallet_getSession", {}))["sessionScopes"] == {}
                denied = await stranger.call(
                    "wallet_invokeMethod", {"scope": DEV, "request": {"method": "eth_blockNumber"}}
                )
                assert denied["error"]["code"] == 4100
                # b revokes: a hears of it, b (the requester) gets only its answer
                assert await b.result("wallet_revokeSession", {}) is True
                assert await a.notification() == {
                    "jsonrpc": "2.0",
                    "method": "wallet_sessionChanged",
                    "params": {"sessionScopes": {}},
                }
                assert await a.result("eth_chainId", []) == "0x539"
                assert a.notifications == []
                assert b.notifications == []
                assert stranger.notifications == []


async def test_other_api_key_is_another_identity() -> None:
    with trio.fail_after(60):
        async with running_broker(ServeOptions(api_keys=["k1", "k2"])) as node:
            async with dapp(node.ws_url("k1")) as a, dapp(node.ws_url("k2")) as b:
                await a.result("wallet_createSession", {"optionalScopes": scopes()})
                assert (await b.result("wallet_getSession", {}))["sessionScopes"] == {}
                assert b.notifications == []


async def test_partial_revoke_and_operator_update_notify_every_connection(
    node: RunningBroker,
) -> None:
    with trio.fail_after(30):
        async with dapp(node.ws_url(), origin=ORIGIN) as a, dapp(node.ws_url(), origin=ORIGIN) as b:
            await a.result("wallet_createSession", {"optionalScopes": scopes()})
            await b.notification()
            narrowed = {
                DEV: {
                    "methods": ["eth_blockNumber"],
                    "notifications": [],
                    "accounts": [f"{DEV}:{SECOND}"],
                }
            }
            reply = await node.admin(
                "admin_updateSession",
                {"apiKey": "dev", "origin": ORIGIN, "sessionScopes": narrowed},
            )
            assert reply["result"]["sessionScopes"][DEV]["accounts"] == [f"{DEV}:{SECOND}"]
            for conn in (a, b):
                note = await conn.notification()
                assert note["method"] == "wallet_sessionChanged"
                assert note["params"]["sessionScopes"][DEV]["methods"] == ["eth_blockNumber"]
            denied = await a.call(
                "wallet_invokeMethod",
                {
                    "scope": DEV,
                    "request": {"method": "eth_getBlockByNumber", "params": ["latest", False]},
                },
            )
            assert denied["error"]["code"] == 4100
            listed = await node.admin("admin_listSessions", {})
            assert [(s["apiKey"], s["origin"]) for s in listed["result"]] == [("dev", ORIGIN)]
            assert (
                await node.admin(
                    "admin_revokeSession", {"apiKey": "dev", "origin": ORIGIN, "scopes": [DEV]}
                )
            )["result"] is True
            for conn in (a, b):
                assert (await conn.notification())["params"] == {"sessionScopes": {}}


async def test_create_session_errors(node: RunningBroker) -> None:
    with trio.fail_after(30):
        async with dapp(node.ws_url()) as a:
            cases = [
                (
                    {
                        "optionalScopes": {
                            "eip155:999": {"methods": ["eth_blockNumber"], "notifications": []}
                        }
                    },
                    5100,
                ),
                (
                    {"optionalScopes": {DEV: {"methods": ["eth_nothing"], "notifications": []}}},
                    5101,
                ),
                ({"optionalScopes": {DEV: {"methods": [], "notifications": ["nothing"]}}}, 5102),
                (
                    {"optionalScopes": {"eip155:1337": {"methods": "x", "notifications": []}}},
                    -32602,
                ),
                (
                    {
                        "optionalScopes": {
                            "eip155:1337": {"references": ["1"], "methods": [], "notifications": []}
                        }
                    },
                    -32602,
                ),
                (
                    {
                        "optionalScopes": scopes(),
                        "sessionProperties": {"expiry": "2001-01-01T00:00:00Z"},
                    },
                    5302,
                ),
                ({"optionalScopes": scopes(), "sessionProperties": {}}, 5302),
                ({"optionalScopes": scopes(), "scopedProperties": {"eip155:5": {}}}, 5300),
                ({"optionalScopes": {DEV: {**scopes()[DEV], "scopedProperties": {}}}}, 5301),
                ([], -32602),
            ]
            for params, code in cases:
                reply = await a.call("wallet_createSession", params)
                assert reply["error"]["code"] == code, (params, reply)
                if code == 5100:  # it says which chains are served
                    assert DEV in reply["error"]["data"]["supported"]
            # the connection stays usable after every error
            assert await a.result("eth_chainId", []) == "0x539"


async def test_required_scopes_merge_and_expiry_is_capped(node: RunningBroker) -> None:
    far = (datetime.now(UTC) + timedelta(days=30)).isoformat()
    with trio.fail_after(30):
        async with dapp(node.ws_url()) as a:
            created = await a.result(
                "wallet_createSession",
                {
                    "requiredScopes": {
                        "eip155": {
                            "references": ["1337"],
                            "methods": ["eth_chainId"],
                            "notifications": [],
                        }
                    },
                    "optionalScopes": {DEV: {"methods": ["eth_blockNumber"], "notifications": []}},
                    "sessionProperties": {"expiry": far, "globalConfig": {"theme": "dark"}},
                },
            )
            assert sorted(created["sessionScopes"][DEV]["methods"]) == [
                "eth_blockNumber",
                "eth_chainId",
            ]
            expiry = datetime.fromisoformat(created["sessionProperties"]["expiry"])
            assert expiry - datetime.now(UTC) <= timedelta(days=7)
            assert created["sessionProperties"]["globalConfig"] == {"theme": "dark"}


async def test_expiry_ends_the_session_and_tells_connections(
    mock_clock: trio.testing.MockClock,
) -> None:
    # The clock jumps whenever the broker waits: the checks come every 0.2 s, on trio's clock.
    with trio.fail_after(30):
        async with (
            running_broker(ServeOptions(block_time=0), expiry_check=0.2, clock=mock_clock) as node,
            dapp(node.ws_url()) as a,
        ):
            soon = (node.now() + timedelta(seconds=2)).isoformat()
            await a.result(
                "wallet_createSession",
                {"optionalScopes": scopes(), "sessionProperties": {"expiry": soon}},
            )
            assert (await a.notification())["params"] == {"sessionScopes": {}}
            assert (await a.result("wallet_getSession", {}))["sessionScopes"] == {}


async def test_manual_approval_parks_until_the_operator_answers() -> None:
    with trio.fail_after(60):
        async with (
            running_broker(ServeOptions(approval="manual")) as node,
            dapp(node.ws_url()) as a,
        ):
            replies: list[Any] = []

            async def create() -> None:
                replies.append(await a.call("wallet_createSession", {"optionalScopes": scopes()}))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(create)
                pending = await waiting_approval(node)
                assert pending["kind"] == "session"
                assert pending["request"]["scopes"][DEV]["walletAccounts"][0] == FIRST
                ok = await node.admin(
                    "admin_approve", {"id": pending["id"], "accounts": [f"{DEV}:{SECOND}"]}
                )
                assert ok["result"] is True
            assert replies[0]["result"]["sessionScopes"][DEV]["accounts"] == [f"{DEV}:{SECOND}"]

            replies.clear()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(create)
                pending = await waiting_approval(node)
                assert (await node.admin("admin_reject", {"id": pending["id"]}))["result"] is True
            assert replies[0]["error"] == {"code": 4001, "message": "User rejected the request."}


async def test_admin_requires_its_token(node: RunningBroker) -> None:
    reply = await node.admin("admin_listSessions", {}, token="wrong")
    assert reply["error"]["code"] == -32001


async def test_the_2025_dialect_is_answered_in_kind_on_every_tab(node: RunningBroker) -> None:
    request = {
        "scopes": {
            "eip155": {
                "chains": ["1337"],
                "methods": METHODS,
                "notifications": NOTIFICATIONS,
                "accounts": [FIRST],
                "rpcEndpoints": ["https://rpc.example.com"],
            }
        },
        "properties": {"expiry": (datetime.now(UTC) + timedelta(hours=1)).isoformat()},
    }
    with trio.fail_after(30):
        async with (
            dapp(node.ws_url(), origin=ORIGIN) as first,
            dapp(node.ws_url(), origin=ORIGIN) as second,
        ):
            created = await first.result("wallet_createSession", request)
            assert set(created) == {"scopes", "properties"}
            assert created["scopes"] == {
                "eip155": {
                    "chains": ["1337"],
                    "accounts": [FIRST],
                    "methods": METHODS,
                    "notifications": NOTIFICATIONS,
                    "rpcEndpoints": ["https://rpc.example.com"],
                }
            }
            assert created["properties"]["expiry"].endswith("+00:00")
            # The other tab hears the new session in the dialect it was created in.
            changed = await second.notification()
            assert changed["method"] == "wallet_sessionChanged"
            assert changed["params"] == {"scopes": created["scopes"]}
            assert await second.result("wallet_getSession") == created
            invoked = await second.result(
                "wallet_invokeMethod",
                {"scope": DEV, "request": {"method": "eth_blockNumber", "params": []}},
            )
            assert invoked["result"]["result"].startswith("0x")
            assert await first.result("wallet_revokeSession") is True
            ended = await second.notification()
            assert ended["params"] == {"scopes": {}}
            assert await second.result("wallet_getSession") == {"scopes": {}}
            mixed = await first.call(
                "wallet_createSession", {**request, "optionalScopes": request["scopes"]}
            )
            assert mixed["error"]["code"] == -32602
            assert "optionalScopes" in mixed["error"]["message"]
