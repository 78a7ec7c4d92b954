"""SPEC §8 and the broker's own bounds: unpolled filters expire, ``eth_getLogs`` stops at 10,000
results and at its time budget (-32005), and a call that waits does not hold up the others on its
WebSocket."""

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import msgspec
import pytest
import trio
import trio.testing
import trio_websocket

from adapters.base import NetworkSpec
from adapters.devchain import DevChainAdapter, methods
from adapters.devchain.methods import ReadMethods
from adapters.devchain.txpool import TxPool
from adapters.evm.filters import FILTER_TIMEOUT, FilterRegistry
from broker.compose import ServeOptions
from broker.config import Config, ServerConfig
from schemas.errors import LimitExceeded, ServerError
from tests.adapters.devchain.conftest import Rpc, Wallet
from tests.adapters.devchain.test_logs import SPAM_TOPIC, deploy, spammer
from tests.support.inprocess import RunningBroker, running_broker, waiting_approval

CHAIN = "eip155:1337"
KEY = "dev"
TOO_MANY = {"code": -32005, "message": "query returned more than 10000 results"}

# --------------------------------------------------------------------------------------------------
# Polled filters expire after 15 minutes without a poll


async def no_logs(chain: str, spec: dict[str, Any]) -> list[Any]:
    return []


async def test_unpolled_filters_expire_after_15_minutes_and_polled_ones_stay(
    autojump_clock: trio.testing.MockClock,
) -> None:
    assert FILTER_TIMEOUT == 15 * 60
    registry = FilterRegistry(no_logs)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(registry.serve_expiry)  # checks every 60 s, from now
        start = trio.current_time()
        polled = registry.new_block_filter(KEY, CHAIN)
        idle_blocks = registry.new_block_filter(KEY, CHAIN)
        idle_logs = registry.new_log_filter(KEY, CHAIN, [{"topics": [SPAM_TOPIC]}])

        async def poll_until(offset: float) -> None:
            # polls between the expiry checks, so that no check and poll share an instant
            while trio.current_time() - start < offset:
                await trio.sleep(30)
                assert registry.changes(KEY, [polled]) == []
                await trio.sleep(30)

        await poll_until(FILTER_TIMEOUT - 60)
        assert len(registry) == 3, "nothing expires before 15 minutes"
        await poll_until(FILTER_TIMEOUT + 120)
        assert len(registry) == 1
        for fid in (idle_blocks, idle_logs):
            with pytest.raises(ServerError, match="filter not found"):
                registry.changes(KEY, [fid])
        with pytest.raises(ServerError, match="filter not found"):
            await registry.logs(KEY, [idle_logs])
        assert registry.uninstall(KEY, [idle_logs]) is False
        await poll_until(4 * FILTER_TIMEOUT)
        assert registry.changes(KEY, [polled]) == []
        assert registry.uninstall(KEY, [polled]) is True
        nursery.cancel_scope.cancel()


# --------------------------------------------------------------------------------------------------
# eth_getLogs: its time budget


async def test_get_logs_past_its_time_budget_is_32005_query_timeout_exceeded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    adapter = DevChainAdapter(NetworkSpec("dev", CHAIN, "devchain", {"block_time": 0}))
    with trio.fail_after(60):
        await adapter.start()
        try:
            rpc, wallet = Rpc(adapter), Wallet(adapter)
            address = await deploy(wallet, rpc, spammer())
            # Over the 2,000 logs scanned inline: this scan runs in a worker thread.
            await wallet.send(
                0, {"to": address, "data": (2_500).to_bytes(32, "big"), "gas": 5_000_000}
            )
            small = {"fromBlock": "0x0", "toBlock": "0x2"}  # the token's seed transfers: inline
            large = {"fromBlock": "0x0", "address": address}
            read = ReadMethods(adapter.chain, TxPool())
            assert len(await call(read, small)) > 0
            assert len(await call(read, large)) == 2_500
            # A budget spent before the scan starts (the scan checks it before each run of blocks).
            monkeypatch.setattr(methods, "MAX_SECONDS", -1.0)
            for criteria in (small, large):
                with pytest.raises(LimitExceeded) as failed:
                    await call(read, criteria)
                assert (failed.value.code, failed.value.message) == (
                    -32005,
                    "query timeout exceeded",
                )
        finally:
            await adapter.aclose()


async def call(methods: ReadMethods, criteria: dict[str, Any]) -> list[Any]:
    raw = await methods.get_logs(msgspec.Raw(msgspec.json.encode([criteria])))
    found: list[Any] = msgspec.json.decode(raw)
    return found


# --------------------------------------------------------------------------------------------------
# eth_getLogs: more than 10,000 results, over both transports


@pytest.fixture
async def spammed() -> AsyncIterator[RunningBroker]:
    """A broker whose dev chain holds 10,001 logs of one contract (10,000 in one block)."""
    with trio.fail_after(120):
        async with running_broker(ServeOptions(block_time=0)) as node:
            network = node.broker.networks.by_name(None)
            assert network is not None
            adapter = network.adapter
            assert isinstance(adapter, DevChainAdapter)
            rpc, wallet = Rpc(adapter), Wallet(adapter)
            address = await deploy(wallet, rpc, spammer())
            for count, gas in ((10_000, 15_000_000), (1, 100_000)):
                await wallet.send(0, {"to": address, "data": count.to_bytes(32, "big"), "gas": gas})
            yield node


async def test_more_than_10000_results_over_http_and_websocket(spammed: RunningBroker) -> None:
    queries: list[dict[str, Any]] = [
        {"fromBlock": "0x0"},
        {"fromBlock": "0x0", "toBlock": "latest", "topics": [SPAM_TOPIC]},
    ]
    with trio.fail_after(60):
        async with httpx.AsyncClient(timeout=30) as client:
            for n, criteria in enumerate(queries):
                body = {"jsonrpc": "2.0", "id": n, "method": "eth_getLogs", "params": [criteria]}
                reply = (await client.post(spammed.http_url(), json=body)).json()
                assert reply == {"jsonrpc": "2.0", "id": n, "error": TOO_MANY}
            fid = (
                await client.post(
                    spammed.http_url(),
                    json={
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "eth_newFilter",
                        "params": [queries[0]],
                    },
                )
            ).json()["result"]
            through_filter = await client.post(
                spammed.http_url(),
                json={"jsonrpc": "2.0", "id": 2, "method": "eth_getFilterLogs", "params": [fid]},
            )
            assert through_filter.json()["error"] == TOO_MANY
        async with trio_websocket.open_websocket_url(spammed.ws_url()) as ws:
            for n, criteria in enumerate(queries):
                body = {"jsonrpc": "2.0", "id": n, "method": "eth_getLogs", "params": [criteria]}
                await ws.send_message(json.dumps(body))
                reply = json.loads(await ws.get_message())
                assert reply == {"jsonrpc": "2.0", "id": n, "error": TOO_MANY}
            # The connection lives on, and a narrower query over the same logs answers.
            latest = await result(ws, "eth_blockNumber", [])
            logs = await result(ws, "eth_getLogs", [{**queries[1], "fromBlock": latest}])
            assert [log["topics"] for log in logs] == [[SPAM_TOPIC, "0x" + "00" * 32]]


async def test_exactly_10000_results_reach_a_websocket_client_in_one_reply(
    spammed: RunningBroker,
) -> None:
    # About 5 MB: more than the 4 MiB outbox limit, which bounds what waits, not one reply.
    with trio.fail_after(60):
        async with trio_websocket.open_websocket_url(
            spammed.ws_url(), max_message_size=64 * 1024 * 1024
        ) as ws:
            latest = int(await result(ws, "eth_blockNumber", []), 16)
            block = hex(latest - 1)  # the block of the 10,000-log transaction
            logs = await result(ws, "eth_getLogs", [{"fromBlock": block, "toBlock": block}])
            assert len(logs) == 10_000
            assert [int(log["logIndex"], 16) for log in logs] == list(range(10_000))
            assert await result(ws, "eth_chainId", []) == "0x539"


async def result(ws: trio_websocket.WebSocketConnection, method: str, params: Any) -> Any:
    await ws.send_message(
        json.dumps({"jsonrpc": "2.0", "id": 0, "method": method, "params": params})
    )
    reply = json.loads(await ws.get_message())
    assert "error" not in reply, reply
    return reply["result"]


# --------------------------------------------------------------------------------------------------
# One WebSocket, concurrent calls


async def test_a_waiting_call_does_not_hold_up_the_next_ones_on_its_websocket() -> None:
    # wallet_createSession under manual approval waits for the operator, however long that takes:
    # a call that is slow by nature, with no timing in the test.
    manual = Config(server=ServerConfig(approval="manual"))
    create = {
        "jsonrpc": "2.0",
        "id": "slow",
        "method": "wallet_createSession",
        "params": {
            "optionalScopes": {CHAIN: {"methods": ["eth_blockNumber"], "notifications": []}}
        },
    }
    with trio.fail_after(60):
        async with (
            running_broker(ServeOptions(block_time=0), config=manual) as node,
            trio_websocket.open_websocket_url(node.ws_url()) as ws,
        ):
            await ws.send_message(json.dumps(create))
            approval = await waiting_approval(node)
            for request_id in ("fast-1", 2, None):
                await ws.send_message(
                    json.dumps(
                        {"jsonrpc": "2.0", "id": request_id, "method": "eth_chainId", "params": []}
                    )
                )
            fast = [json.loads(await ws.get_message()) for _ in range(3)]
            assert {reply["id"]: reply["result"] for reply in fast} == {
                "fast-1": "0x539",
                2: "0x539",
                None: "0x539",
            }
            assert (await node.admin("admin_approve", {"id": approval["id"]}))["result"] is True
            slow = json.loads(await ws.get_message())
            assert slow["id"] == "slow"
            assert list(slow["result"]["sessionScopes"]) == [CHAIN]
