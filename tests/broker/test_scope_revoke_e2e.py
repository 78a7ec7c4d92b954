"""Revoking one scope of a two-network session: the other tabs hear of it, the requester does not,
and only the revoked scope's subscriptions end."""

from typing import Any

import trio

from broker.compose import ServeOptions
from broker.config import Config
from tests.support.inprocess import Dapp, RunningBroker, dapp, running_broker

FIRST = "eip155:1337"
SECOND = "eip155:1338"
ORIGIN = "https://dapp.example"
SCOPE = {"methods": ["eth_subscribe"], "notifications": ["eth_subscription"]}
TWO_NETWORKS = Config(
    networks={
        "dev": {"chain": FIRST, "adapter": "devchain", "default": True},
        "second": {"chain": SECOND, "adapter": "devchain"},
    }
)


async def subscribe_heads(conn: Dapp, scope: str) -> str:
    invoked = await conn.result(
        "wallet_invokeMethod",
        {"scope": scope, "request": {"method": "eth_subscribe", "params": ["newHeads"]}},
    )
    assert invoked["scope"] == scope, invoked
    sub: str = invoked["result"]["result"]
    return sub


async def mine(node: RunningBroker, network: str) -> int:
    reply = await node.rpc("evm_mine", [], network=network)
    assert "error" not in reply, reply
    head = await node.rpc("eth_blockNumber", [], network=network)
    return int(head["result"], 16)


def head_notice(note: dict[str, Any]) -> tuple[str, str, int]:
    """(scope, subscription id, block number) of a ``wallet_notify`` carrying a new head."""
    assert note["method"] == "wallet_notify", note
    inner = note["params"]["notification"]
    assert inner["method"] == "eth_subscription", note
    params = inner["params"]
    return note["params"]["scope"], params["subscription"], int(params["result"]["number"], 16)


async def test_revoking_one_scope_ends_its_subscriptions_and_tells_the_other_tabs() -> None:
    with trio.fail_after(60):
        async with (
            running_broker(ServeOptions(block_time=0), config=TWO_NETWORKS) as node,
            dapp(node.ws_url(), origin=ORIGIN) as requester,
            dapp(node.ws_url(), origin=ORIGIN) as other_tab,
            # another identity, subscribed directly to the second network's heads: once it has a
            # head, the fan-out has handled that head for every subscription (it is synchronous)
            dapp(node.ws_url(network="second"), origin="https://watcher.example") as watcher,
        ):
            created = await requester.result(
                "wallet_createSession", {"optionalScopes": {FIRST: SCOPE, SECOND: SCOPE}}
            )
            assert set(created["sessionScopes"]) == {FIRST, SECOND}
            assert (await other_tab.notification())["method"] == "wallet_sessionChanged"
            subs = {
                (conn, scope): await subscribe_heads(conn, scope)
                for conn in (requester, other_tab)
                for scope in (FIRST, SECOND)
            }
            watched = await watcher.result("eth_subscribe", ["newHeads"])
            assert node.broker.hub.count() == 5

            # before: both scopes deliver to both tabs
            for network, scope in (("second", SECOND), ("dev", FIRST)):
                number = await mine(node, network)
                for conn in (requester, other_tab):
                    assert head_notice(await conn.notification()) == (
                        scope,
                        subs[conn, scope],
                        number,
                    )
            assert (await watcher.notification())["params"]["subscription"] == watched

            assert await requester.result("wallet_revokeSession", {"scopes": [SECOND]}) is True
            changed = await other_tab.notification()
            assert changed["method"] == "wallet_sessionChanged", changed
            assert changed["params"]["sessionScopes"] == {FIRST: created["sessionScopes"][FIRST]}
            assert node.broker.hub.count() == 3, "the revoked scope's two subscriptions ended"

            # after: a head of the revoked scope reaches the watcher but neither tab; a head of the
            # remaining scope is each tab's very next notification (so nothing came before it:
            # neither a head of the revoked scope nor, for the requester, a sessionChanged)
            second_head = await mine(node, "second")
            watched_note = await watcher.notification()
            assert int(watched_note["params"]["result"]["number"], 16) == second_head
            number = await mine(node, "dev")
            for conn in (requester, other_tab):
                assert head_notice(await conn.notification()) == (FIRST, subs[conn, FIRST], number)
                assert conn.notifications == []
            assert (await requester.result("wallet_getSession", {}))["sessionScopes"] == {
                FIRST: created["sessionScopes"][FIRST]
            }
            refused = await other_tab.call(
                "wallet_invokeMethod",
                {"scope": SECOND, "request": {"method": "eth_subscribe", "params": ["newHeads"]}},
            )
            assert refused["error"]["code"] == 4100
