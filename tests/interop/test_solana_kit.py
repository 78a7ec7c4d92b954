"""@solana/kit against scopecast's Solana network: ``createSolanaRpc`` over HTTP and
``createSolanaRpcSubscriptions`` over ``/solana/ws/v3/dev`` (the script's checks are in
``solana_kit.mjs``): a balance, a transfer built, signed and sent with kit while
``accountNotifications``, ``signatureNotifications``, ``logsNotifications`` and
``slotNotifications`` subscriptions watch it, and kit's own ``sendAndConfirmTransactionFactory``."""

from __future__ import annotations

import json

import trio

from adapters._ed25519 import DEV_MNEMONIC, derive_keypairs
from tests.interop.nodejs import run_node_script
from tests.support.inprocess import RunningBroker

(ALICE,) = derive_keypairs(DEV_MNEMONIC, 1)


async def test_rpc_and_subscriptions_with_solana_kit(node: RunningBroker) -> None:
    with trio.fail_after(40):
        run = await run_node_script(
            "solana_kit.mjs",
            {
                "http": node.http_url(network="solana"),
                "ws": node.ws_url(network="solana"),
                "payerSeed": list(bytes(ALICE)[:32]),
                "lamports": 250_000_000,
            },
        )
    assert run.ok, run.explain()
    report = run.report
    assert report is not None
    observed = report["observed"]
    assert observed["payerBalance"]["value"] == str(1000 * 10**9)
    assert observed["accountNotification"]["value"]["lamports"] == "250000000"
    assert observed["signatureNotification"]["value"] == {"err": None}
    assert observed["logsNotification"]["value"]["err"] is None
    reply = await node.rpc("getGenesisHash", [], network="solana")
    assert observed["genesis"] == reply["result"]
    # what went over the wire: kit's string ids echoed as sent, Solana's integer subscription ids
    frames = [json.loads(f.get("in") or f["out"]) for f in observed["wire"]]
    subscribed = {f["id"]: f["method"] for f in frames if f.get("method", "").endswith("Subscribe")}
    answers = {f["id"]: f["result"] for f in frames if "result" in f and f["id"] in subscribed}
    assert set(answers) == set(subscribed)
    assert all(isinstance(i, str) for i in answers)
    assert all(type(result) is int for result in answers.values())
