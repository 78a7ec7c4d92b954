"""A whole broker in front of a node: the config picks the adapter from ``upstreams`` on a
``solana:`` chain; the keyring signs for the network when given keys (a mnemonic here), never with
the public development mnemonic by default, and the session gets the account's change through
``wallet_notify``; a dropped subscriber resumes with its cursor. A whole ``scopecast serve`` broker in this run, a node process behind it."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest
import trio

from adapters._ed25519 import DEV_MNEMONIC
from adapters.solana.upstream import SolanaUpstreamAdapter
from broker.compose import ServeOptions
from broker.compose._networks import build_accounts
from broker.config import Config, ConfigError, network_specs
from tests.broker.test_solana_sessions_e2e import unsigned_transfer
from tests.support.inprocess import dapp, running_broker
from tests.support.waiting import eventually

from .nodes import (
    ALICE,
    CHAIN,
    FAST,
    NETWORK,
    advance,
    entry,
    fresh_address,
    node_result,
    signed_transfer,
    solana_node,
)
from .test_one_node import first_slot

SOL = 1_000_000_000


def config(upstreams: list[dict[str, str]], accounts: dict[str, Any] | None) -> Config:
    network = {"chain": CHAIN, "upstreams": upstreams, **FAST}
    return Config(networks={NETWORK: network}, accounts=accounts)


def test_upstreams_on_a_solana_chain_pick_the_solana_upstream_adapter() -> None:
    upstreams = [{"http": "http://127.0.0.1:1/rpc"}]
    specs, _ = network_specs(config(upstreams, None))
    assert [s.adapter for s in specs] == ["solana-upstream"]
    with pytest.raises(ConfigError, match=f"mnemonic or keystore_dir .*for {CHAIN}"):
        build_accounts(config(upstreams, {"chains": [CHAIN]}), specs, None)


async def test_sign_and_send_through_a_session_reaches_the_node(nursery: trio.Nursery) -> None:
    with trio.fail_after(90):
        node = await solana_node(nursery)
        settings = config([entry(node)], {"chains": [CHAIN], "mnemonic": DEV_MNEMONIC})
        async with running_broker(ServeOptions(), config=settings) as broker:
            async with dapp(broker.ws_url(network=NETWORK)) as conn:
                alice = str(ALICE.pubkey())
                scopes = {
                    CHAIN: {
                        "methods": [
                            "getLatestBlockhash",
                            "signAndSendTransaction",
                            "accountSubscribe",
                        ],
                        "notifications": ["accountNotification"],
                        "accounts": [f"{CHAIN}:{alice}"],
                    }
                }
                await conn.result("wallet_createSession", {"optionalScopes": scopes})

                async def call(method: str, params: Any) -> Any:
                    request = {"scope": CHAIN, "request": {"method": method, "params": params}}
                    return (await conn.result("wallet_invokeMethod", request))["result"]["result"]

                blockhash = (await call("getLatestBlockhash", []))["value"]["blockhash"]
                to = fresh_address()
                await call("accountSubscribe", [to, {"encoding": "base64"}])
                unsigned = unsigned_transfer(alice, to, 2 * SOL, blockhash)
                sent = await call(
                    "signAndSendTransaction",
                    {"account": {"address": alice}, "transaction": unsigned, "scope": CHAIN},
                )
                await advance(node, 1)  # the transaction's slot closes
                message = await conn.notification()
                assert message["method"] == "wallet_notify"
                assert message["params"]["scope"] == CHAIN
                notification = message["params"]["notification"]
                assert notification["method"] == "accountNotification"
                assert notification["params"]["result"]["value"]["lamports"] == 2 * SOL
        status = await node_result(node, "getSignatureStatuses", [sent["signature"]])
        assert status["value"][0]["err"] is None
        assert (await node_result(node, "getBalance", to))["value"] == 2 * SOL


async def test_a_dropped_subscriber_resumes_with_its_cursor(nursery: trio.Nursery) -> None:
    with trio.fail_after(90):
        node = await solana_node(nursery)
        async with running_broker(ServeOptions(), config=config([entry(node)], None)) as broker:
            url = broker.ws_url(network=NETWORK)
            to = fresh_address()
            async with dapp(url) as conn:
                subscription = await conn.result("slotSubscribe", [])
                watching = await conn.result("accountSubscribe", [to, {"encoding": "base64"}])
                slots: list[int] = []
                await first_slot(conn, node, slots)
                cursor = conn.last_cursor
            assert cursor is not None
            # While the subscriber is away, its account receives a transfer: the account is
            # still read (it may resume), so the change is there to replay.
            node_url = node.http_url(network=NETWORK)
            signature, tx = await signed_transfer(node_url, to, SOL)
            await node_result(node, "sendTransaction", tx, {"encoding": "base64"})
            landed = (await node_result(node, "getSignatureStatuses", [signature]))["value"][0]
            top = await advance(node, 2)
            network = broker.broker.networks.by_name(NETWORK)
            assert network is not None
            adapter = network.adapter
            assert isinstance(adapter, SolanaUpstreamAdapter)
            await eventually(lambda: adapter.reported_slot == top, "the broker at the node's slot")
            # Everything after the last slot read (a slow machine may have sent more meanwhile).
            missed = list(range(slots[-1] + 1, top + 1))
            async with dapp(f"{url}?resume={quote(cursor)}") as again:
                replayed = []
                while (message := await again.notification())["method"] != "scopecast_resumed":
                    replayed.append(message)
                assert message["params"] == {"replayed": len(replayed), "complete": True}
        by_id = {subscription: "slots", watching: "account"}
        kinds = [by_id[m["params"]["subscription"]] for m in replayed]
        assert kinds.count("account") == 1
        assert [
            m["params"]["result"]["slot"] for m in replayed if m["method"] == "slotNotification"
        ] == missed
        (account,) = [
            m["params"]["result"] for m in replayed if m["method"] == "accountNotification"
        ]
        assert account["context"]["slot"] == landed["slot"]
        assert account["value"]["lamports"] == SOL
