"""MetaMask's @metamask/multichain-api-client drives a CAIP-25 session on scopecast over a WebSocket
transport (``ws_transport.mjs``); the script's checks are in ``multichain_client.mjs``."""

from __future__ import annotations

import trio

from tests.interop.nodejs import run_node_script
from tests.support.inprocess import RunningBroker

ORIGIN = "https://interop.example"
SCOPE = "eip155:1337"


async def test_session_lifecycle_with_the_metamask_client(node: RunningBroker) -> None:
    with trio.fail_after(30):
        run = await run_node_script(
            "multichain_client.mjs",
            {
                "ws": node.ws_url(),
                "http": node.http_url(),
                "admin": f"{node.base}/admin",
                "adminToken": "dev",
                "apiKey": "dev",
                "origin": ORIGIN,
            },
        )
    assert run.ok, run.explain()
    report = run.report
    assert report is not None
    observed = report["observed"]
    assert observed["createSession"]["sessionScopes"][SCOPE]["notifications"] == [
        "eth_subscription"
    ]
    assert observed["wallet_notify"]["params"]["scope"] == SCOPE
    # what went over the wire: the client's own requests, as it builds them
    sent = [frame["out"] for frame in observed["wireA"] if "out" in frame]
    assert any(
        '"method":"wallet_getSession"' in frame and '"params"' not in frame for frame in sent
    )
    assert any('"method":"wallet_revokeSession"' in frame for frame in sent)

    # the operator sees what the client did: the identity's session is gone
    with trio.fail_after(10):
        listed = await node.admin("admin_listSessions", {})
    assert "error" not in listed, listed
    assert [s for s in listed["result"] if s["origin"] == ORIGIN and s["sessionScopes"]] == []
