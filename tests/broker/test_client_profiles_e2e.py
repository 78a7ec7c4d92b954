"""The ``metamask`` client profile over real sockets: chosen with ``?client=metamask`` or by a
key's ``client`` setting; SPEC's answers stay the default (README "Client profiles")."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import msgspec
import pytest
import trio

from adapters._ed25519 import DEV_MNEMONIC, derive_keypairs
from adapters.solana import dev_chain_id
from broker.compose import ServeOptions
from broker.config import Config
from schemas.errors import ConfigError
from tests.support.inprocess import Dapp, RunningBroker, dapp, running_broker

SOLANA = dev_chain_id()
DEV = "eip155:1337"
ORIGIN = "https://dapp.example"
ALICE = str(derive_keypairs(DEV_MNEMONIC, 1)[0].pubkey())
BOB = "GrAkKfEpTKQuVHG2Y97Y2FF4i7y7Q5AHLK94JBy7Y5yv"  # not a dev account
SOLANA_SCOPE = {"methods": [], "notifications": []}


@asynccontextmanager
async def broker(keys: dict[str, Any] | None = None) -> AsyncIterator[RunningBroker]:
    config = msgspec.convert({"keys": keys or {}}, Config)
    async with running_broker(ServeOptions(block_time=0), config=config) as node:
        yield node


def accounts_changed(message: dict[str, Any]) -> list[str] | None:
    """The accounts of a ``wallet_notify`` carrying ``metamask_accountsChanged`` (else None)."""
    if message.get("method") != "wallet_notify":
        return None
    notification = message["params"]["notification"]
    if notification["method"] != "metamask_accountsChanged":
        return None
    assert message["params"]["scope"] == SOLANA
    accounts: list[str] = notification["params"]
    return accounts


async def next_notification(conn: Dapp, method: str) -> dict[str, Any]:
    while True:
        message = await conn.notification()
        if message["method"] == method:
            return message


async def test_the_metamask_profile_grants_answers_and_notifies_as_metamask() -> None:
    with trio.fail_after(60):
        async with (
            broker() as node,
            dapp(node.ws_url() + "?client=metamask", origin=ORIGIN) as tab,
            dapp(node.ws_url(), origin=ORIGIN) as other_tab,
        ):
            created = await tab.result(
                "wallet_createSession",
                {
                    "optionalScopes": {
                        SOLANA: SOLANA_SCOPE,
                        DEV: {"methods": ["eth_chainId"], "notifications": []},
                    },
                    "sessionProperties": {
                        "solana_accountChanged_notifications": True,
                        "somethingElse": 1,
                    },
                },
            )
            solana = created["sessionScopes"][SOLANA]
            # Every method served on the chain, though none was listed (getNonEvmSupportedMethods)
            for method in ("signMessage", "signIn", "signAndSendTransaction", "getBalance"):
                assert method in solana["methods"]
            assert "accountNotification" in solana["notifications"]
            assert "eth_sendTransaction" in created["sessionScopes"][DEV]["methods"]
            properties = created["sessionProperties"]
            assert properties["solana_accountChanged_notifications"] is True
            assert "somethingElse" not in properties  # MetaMask keeps the properties it knows
            assert "expiry" in properties
            # The requester heard its account before its answer; the other tab after the scopes.
            assert [accounts_changed(m) for m in tab.notifications] == [[ALICE]]
            await next_notification(other_tab, "wallet_sessionChanged")
            told = await next_notification(other_tab, "wallet_notify")
            assert accounts_changed(told) == [ALICE]

            invoke = {"scope": SOLANA, "request": {"method": "getBalance", "params": [ALICE]}}
            raw = await tab.result("wallet_invokeMethod", invoke)
            assert raw["value"] == 1000 * 10**9  # the method's own result, no envelope
            wrapped = await other_tab.result("wallet_invokeMethod", invoke)
            assert wrapped["scope"] == SOLANA
            assert wrapped["result"]["method"] == "getBalance"
            assert wrapped["result"]["result"]["value"] == raw["value"]

            # Revoking the Solana scope takes its account away: [] to every tab.
            tab.notifications.clear()
            assert await tab.result("wallet_revokeSession", {"scopes": [SOLANA]}) is True
            assert [accounts_changed(m) for m in tab.notifications] == [[]]
            assert list((await tab.result("wallet_getSession", {}))["sessionScopes"]) == [DEV]
            changed = await next_notification(other_tab, "wallet_sessionChanged")
            assert list(changed["params"]["sessionScopes"]) == [DEV]
            told = await next_notification(other_tab, "wallet_notify")
            assert accounts_changed(told) == []
            # No Solana account before or after: nothing more to say of them.
            tab.notifications.clear()
            assert await tab.result("wallet_revokeSession", {}) is True
            await next_notification(other_tab, "wallet_sessionChanged")
            assert tab.notifications == other_tab.notifications == []


async def test_a_new_metamask_tab_is_told_its_selected_account() -> None:
    asked = {
        "optionalScopes": {SOLANA: SOLANA_SCOPE},
        "sessionProperties": {"solana_accountChanged_notifications": True},
    }
    with trio.fail_after(60):
        async with broker() as node, dapp(node.ws_url() + "?client=metamask") as tab:
            await tab.result("wallet_createSession", asked)
            async with dapp(node.ws_url() + "?client=metamask") as loaded:
                told = await next_notification(loaded, "wallet_notify")
                assert accounts_changed(told) == [ALICE]  # as the extension on page load
            async with dapp(node.ws_url()) as spec_tab:
                assert (await spec_tab.result("wallet_getSession", {}))["sessionScopes"]
                assert spec_tab.notifications == []  # SPEC's clients are not told


async def test_no_accounts_changed_unless_the_session_asked_for_it() -> None:
    with trio.fail_after(60):
        async with broker() as node, dapp(node.ws_url() + "?client=metamask") as tab:
            # An account the wallet does not hold is dropped, as MetaMask drops it: the wallet's
            # own is granted instead of none.
            unknown = {**SOLANA_SCOPE, "accounts": [f"{SOLANA}:{BOB}"]}
            # A malformed scope beside it is dropped, as MetaMask drops it (SPEC: -32602).
            scopes = {SOLANA: unknown, DEV: {"methods": []}}
            created = await tab.result("wallet_createSession", {"optionalScopes": scopes})
            assert list(created["sessionScopes"]) == [SOLANA]
            assert created["sessionScopes"][SOLANA]["accounts"] == [f"{SOLANA}:{ALICE}"]
            refused = await tab.call("wallet_createSession", {"optionalScopes": {DEV: {}}})
            assert refused["error"]["code"] == 5100  # no well-formed scope left
            await tab.result("wallet_revokeSession", {})
            assert tab.notifications == []


async def test_a_key_may_set_the_profile_and_the_url_overrides_it() -> None:
    keys = {"mm": {"client": "metamask"}, "plain": {}}
    invoke = {"scope": SOLANA, "request": {"method": "getGenesisHash", "params": []}}
    with trio.fail_after(60):
        async with broker(keys) as node:
            scopes = {"optionalScopes": {SOLANA: SOLANA_SCOPE}}
            async with dapp(node.ws_url("mm")) as conn:
                await conn.result("wallet_createSession", scopes)
                genesis = await conn.result("wallet_invokeMethod", invoke)
                assert isinstance(genesis, str)
                assert genesis.startswith(SOLANA.split(":")[1])
            async with dapp(node.ws_url("mm") + "?client=spec") as conn:
                assert (await conn.result("wallet_invokeMethod", invoke))["scope"] == SOLANA
            async with dapp(node.ws_url("plain")) as conn:
                granted = await conn.result("wallet_createSession", scopes)
                assert granted["sessionScopes"][SOLANA]["methods"] == []  # SPEC: none listed
                refused = await conn.call("wallet_invokeMethod", invoke)
                assert refused["error"]["code"] == 4100
            async with httpx.AsyncClient(trust_env=False) as client:
                reply = await client.post(
                    node.http_url("mm"),
                    json={
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "wallet_invokeMethod",
                        "params": invoke,
                    },
                )
            assert reply.json()["result"] == genesis  # HTTP on the key too


async def test_an_unknown_profile_is_refused() -> None:
    with trio.fail_after(30):
        async with broker() as node, httpx.AsyncClient(trust_env=False) as client:
            reply = await client.get(
                node.ws_url().replace("ws://", "http://") + "?client=phantom",
                headers={
                    "connection": "upgrade",
                    "upgrade": "websocket",
                    "sec-websocket-version": "13",
                    "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
                },
            )
    assert reply.status_code == 400
    assert "unknown client profile 'phantom' (known: spec, metamask)" in reply.text
    with pytest.raises(ConfigError, match=r"keys\.k\.client: unknown client profile 'x'"):
        async with broker({"k": {"client": "x"}}):
            pass
