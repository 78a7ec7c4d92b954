"""MetaMask's @metamask/multichain-api-client drives a CAIP-25 session on scopecast over a WebSocket
transport (``ws_transport.mjs``); the script's checks are in ``multichain_client.mjs`` and, for a
session spanning eip155 and Solana, ``multichain_solana.mjs``."""

from __future__ import annotations

import os
import re
import shutil

import trio
from solders.pubkey import Pubkey
from solders.signature import Signature

from adapters.solana import dev_chain_id
from tests.interop.nodejs import INTEROP_DIR, run_node_script
from tests.support.inprocess import RunningBroker
from tests.test_docs import ROOT, blocks

ORIGIN = "https://interop.example"
SCOPE = "eip155:1337"
SOLANA = dev_chain_id()


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


async def test_a_session_with_eip155_and_solana_scopes(node: RunningBroker) -> None:
    """One session, two chains (``multichain_solana.mjs``): Solana accounts in base58,
    ``signMessage`` verified with ed25519, and newHeads and an ``accountNotification`` through
    ``wallet_notify`` on the one socket."""
    with trio.fail_after(30):
        run = await run_node_script(
            "multichain_solana.mjs",
            {
                "ws": node.ws_url(),
                "evmHttp": node.http_url(),
                "solanaHttp": node.http_url(network="solana"),
                "solana": SOLANA,
                "origin": ORIGIN,
            },
        )
    assert run.ok, run.explain()
    report = run.report
    assert report is not None
    observed = report["observed"]
    assert set(observed["createSession"]["sessionScopes"]) == {SCOPE, SOLANA}
    signed = observed["signMessage"]["result"]["result"]
    signer = observed["createSession"]["sessionScopes"][SOLANA]["accounts"][0].rsplit(":", 1)[1]
    assert Signature.from_string(signed["signature"]).verify(
        Pubkey.from_string(signer), b"scopecast: one session, two chains"
    )
    notification = observed["accountNotification"]
    assert notification["scope"] == SOLANA
    assert notification["notification"]["method"] == "accountNotification"


async def test_the_readme_transport_connects_the_client(node: RunningBroker) -> None:
    """README's few lines (a Transport over the global WebSocket) run as written, against this
    broker instead of port 8545."""
    readme = [b for b in blocks(ROOT / "README.md") if b.kind == "js"]
    (snippet,) = [b for b in readme if "scopecastTransport" in b.text]
    script = INTEROP_DIR / f".readme-transport-{os.getpid()}.mjs"  # beside node_modules
    script.write_text(snippet.text.replace("127.0.0.1:8545", f"127.0.0.1:{node.port}"))
    try:
        with trio.fail_after(30):
            # Node 20's WebSocket global is behind a flag (a browser and Node 22 have it).
            done = await trio.run_process(
                [shutil.which("node") or "node", "--experimental-websocket", script.name],
                cwd=INTEROP_DIR,
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
    finally:
        script.unlink()
    output = done.stdout.decode()
    assert done.returncode == 0, done.stderr.decode()
    assert f"'{SCOPE}': {{" in output, output  # the granted scopes, as Node prints objects
    assert re.search(r"method: 'eth_blockNumber', result: '0x[0-9a-f]+'", output), output
