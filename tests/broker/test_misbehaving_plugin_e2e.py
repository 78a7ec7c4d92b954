"""A chain adapter that misbehaves in every way a plug-in can (tests/support/misbehaving_adapter.py,
installed through its entry point) served over HTTP, the WebSocket and inside a session, beside the
dev chain: each fault is -32603 naming the adapter for the one call that met it, logged once
without key material, while a bystander keeps receiving heads and the broker keeps serving."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio_websocket

from broker.compose import ServeOptions
from broker.config import Config
from tests.support.inprocess import Dapp, RunningBroker, running_broker
from tests.support.misbehaving_adapter import (
    HUGE,
    RAISED,
    RETURNED,
    MisbehavingAdapter,
    installed,
)
from tests.support.waiting import eventually

KEY = "k-misbehaving-7f3a"
BAD = "eip155:4242"
CALL_TIMEOUT = 0.5
CONFIG = Config(
    networks={
        "dev": {"chain": "eip155:1337", "adapter": "devchain", "default": True, "block_time": 0},
        "bad": {"chain": BAD, "adapter": "misbehaving", "call_timeout": CALL_TIMEOUT},
    }
)
ADAPTER = "adapter 'misbehaving'"


def faults() -> list[tuple[str, list[Any], str]]:
    """Every faulty call: method, params, what the error's message says."""
    cases = [("misbehave_raise", [kind], f"{ADAPTER} failed") for kind in RAISED]
    cases.append(("misbehave_now_raise", ["ValueError"], f"{ADAPTER} failed"))
    for method in RETURNED:
        for name in (method, method.replace("misbehave_", "misbehave_now_")):
            said = (
                "a number that JSON cannot carry"
                if "nan" in method or "inf" in method
                else "a result that is not JSON"
            )
            cases.append((name, [], f"{ADAPTER} returned {said}"))
    return cases


class Transports:
    """One call of the bad network's, over each way a dapp has to make it."""

    def __init__(self, node: RunningBroker, ws: Dapp, in_session: Dapp) -> None:
        self.node, self.ws, self.in_session = node, ws, in_session

    async def each(self, method: str, params: list[Any]) -> dict[str, dict[str, Any]]:
        invoked = await self.in_session.call(
            "wallet_invokeMethod",
            {"scope": BAD, "request": {"method": method, "params": params}},
        )
        return {
            "http": await self.node.rpc(method, params, key=KEY, network="bad"),
            "websocket": await self.ws.call(method, params),
            "session": invoked,
        }


async def mine(node: RunningBroker) -> None:
    reply = await node.rpc("evm_mine", [], key=KEY)
    assert "error" not in reply, reply


@asynccontextmanager
async def dapp(url: str, *, origin: str | None = None) -> AsyncIterator[Dapp]:
    """A dapp that takes messages as large as the huge result."""
    headers = [(b"Origin", origin.encode())] if origin else []
    async with trio_websocket.open_websocket_url(
        url, extra_headers=headers, max_message_size=2 * HUGE
    ) as ws:
        yield Dapp(ws)


def adapter_of(node: RunningBroker) -> MisbehavingAdapter:
    network = node.broker.networks.by_name("bad")
    assert network is not None
    assert isinstance(network.adapter, MisbehavingAdapter)
    return network.adapter


async def test_every_fault_of_a_plugin_is_its_own_calls_error(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with installed(monkeypatch), trio.fail_after(120):
        async with running_broker(ServeOptions(api_keys=[KEY]), config=CONFIG) as node:
            async with (
                dapp(node.ws_url(KEY)) as bystander,
                dapp(node.ws_url(KEY, network="bad")) as ws,
                dapp(node.ws_url(KEY), origin="https://dapp.example") as in_session,
            ):
                await bystander.result("eth_subscribe", ["newHeads"])
                methods = sorted(adapter_of(node).methods(BAD))
                await in_session.result(
                    "wallet_createSession",
                    {"optionalScopes": {BAD: {"methods": methods, "notifications": []}}},
                )
                transports = Transports(node, ws, in_session)
                heads = 0
                for method, params, said in faults():
                    caplog.clear()
                    for way, reply in (await transports.each(method, params)).items():
                        assert reply["error"]["code"] == -32603, (method, way, reply)
                        assert said in reply["error"]["message"], (method, way, reply)
                        assert method.replace("_now_", "_") in reply["error"]["message"] or (
                            method in reply["error"]["message"]
                        ), (method, way, reply)
                    # Logged once per call (three calls), naming the adapter and the network.
                    logged = [r for r in caplog.records if r.levelno >= logging.ERROR]
                    assert len(logged) == 3, (method, [r.getMessage() for r in logged])
                    assert all("misbehaving" in r.getMessage() for r in logged)
                    assert all("network bad" in r.getMessage() for r in logged)
                    assert KEY not in caplog.text
                    # The bystander on the dev chain never noticed.
                    await mine(node)
                    heads += 1
                    head = await bystander.notification()
                    assert head["method"] == "eth_subscription", head
                assert heads == len(faults())

                # A huge result is not a fault: it is served whole, every way.
                for way, reply in (await transports.each("misbehave_huge", [])).items():
                    assert (
                        len(
                            reply["result"]
                            if way != "session"
                            else reply["result"]["result"]["result"]
                        )
                        == HUGE
                    ), way

                # A call that hangs is cancelled after call_timeout, and delays no other call.
                adapter = adapter_of(node)
                await ws.ws.send_message(
                    '{"jsonrpc":"2.0","id":"hang","method":"misbehave_hang","params":[]}'
                )
                await eventually(lambda: adapter.hanging == 1, "the call hanging")
                assert await ws.result("misbehave_ok", []) == "ok"
                assert adapter.hanging == 1  # answered while the other still hung
                while "hang" not in ws._replies:
                    await ws._receive_one()
                hung = ws._replies.pop("hang")
                assert hung["error"]["code"] == -32603
                assert hung["error"]["message"] == (
                    f"{ADAPTER} did not answer within {CALL_TIMEOUT:g} s (misbehave_hang)"
                )
                assert adapter.hanging == 0
                for way, reply in (await transports.each("misbehave_hang", [])).items():
                    assert "did not answer within" in reply["error"]["message"], (way, reply)

                # A connection that goes away cancels its hanging call at once.
                async with dapp(node.ws_url(KEY, network="bad")) as leaving:
                    await leaving.ws.send_message(
                        '{"jsonrpc":"2.0","id":1,"method":"misbehave_hang","params":[]}'
                    )
                    await eventually(lambda: adapter.hanging == 1, "the call hanging")
                await eventually(lambda: adapter.hanging == 0, "the hanging call cancelled")

                # Everything still works: the same connections, a new head for the bystander.
                assert await ws.result("misbehave_ok", []) == "ok"
                await mine(node)
                assert (await bystander.notification())["method"] == "eth_subscription"
            assert (await node.rpc("eth_chainId", [], key=KEY))["result"] == "0x539"
