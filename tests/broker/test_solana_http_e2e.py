"""``scopecast serve`` with no configuration: the dev chain (the default network, unchanged) and the
Solana dev network beside it, on ``/solana/v3/<KEY>``, both listed by GET /healthz."""

from __future__ import annotations

import httpx
import trio

from adapters.solana import dev_chain_id
from broker.compose import ServeOptions
from tests.support.inprocess import running_broker

SOLANA = dev_chain_id()


async def test_two_networks_by_default_in_healthz_and_on_their_urls() -> None:
    with trio.fail_after(60):
        async with (
            running_broker(ServeOptions(block_time=0)) as node,
            httpx.AsyncClient() as client,
        ):
            health = (await client.get(f"{node.base}/healthz")).json()
            assert health["networks"] == [
                {"name": "dev", "chain": "eip155:1337"},
                {"name": "solana", "chain": SOLANA},
            ]
            assert node.broker.networks.default.name == "dev"
            assert (await node.rpc("eth_chainId"))["result"] == "0x539"
            genesis = (await node.rpc("getGenesisHash", network="solana"))["result"]
            assert f"solana:{genesis[:32]}" == SOLANA
            # Each network answers its own family's methods only.
            assert (await node.rpc("getSlot"))["error"]["code"] == -32601
            assert (await node.rpc("eth_chainId", network="solana"))["error"]["code"] == -32601


async def test_solana_batches_errors_and_api_keys() -> None:
    with trio.fail_after(60):
        async with (
            running_broker(ServeOptions(block_time=0)) as node,
            httpx.AsyncClient() as client,
        ):
            url = node.http_url(network="solana")
            batch = [
                {"jsonrpc": "2.0", "id": 1, "method": "getHealth"},
                {"jsonrpc": "2.0", "id": 2, "method": "getBalance", "params": ["n0pe"]},
                {"jsonrpc": "2.0", "id": 3, "method": "sendTransaction", "params": ["!!"]},
                {"jsonrpc": "2.0", "id": 4, "method": "getBalance", "params": {"a": 1}},
            ]
            replies = {r["id"]: r for r in (await client.post(url, json=batch)).json()}
            assert replies[1]["result"] == "ok"
            assert replies[2]["error"] == {"code": -32602, "message": "Invalid param: Invalid"}
            assert replies[3]["error"]["code"] == -32602
            assert replies[4]["error"]["code"] == -32602
            # The runtime survived the bad input.
            assert (await node.rpc("getHealth", network="solana"))["result"] == "ok"
            bad_key = await client.post(
                node.http_url(key="wrong", network="solana"),
                json={"jsonrpc": "2.0", "id": 1, "method": "getSlot"},
            )
            assert bad_key.status_code == 401


async def test_rpc_discover_describes_the_solana_methods() -> None:
    from adapters.solana._docs import METHOD_DOCS
    from adapters.solana._methods import SolanaMethods
    from tests.broker.test_discover_e2e import errors_of

    assert set(METHOD_DOCS) == SolanaMethods.METHODS, "every Solana method is described"
    with trio.fail_after(60):
        async with running_broker(ServeOptions(block_time=0)) as node:
            document = (await node.rpc("rpc.discover", network="solana"))["result"]
    assert errors_of(document) == []
    methods = {method["name"]: method for method in document["methods"]}
    send = methods["sendTransaction"]
    assert [param["name"] for param in send["params"]] == ["transaction", "config"]
    assert {"code": -32002, "message": "Transaction simulation failed"} in send["errors"]
    assert "SolanaAddress" in document["components"]["schemas"]
    # The keyring's Solana account methods take one params object.
    sign = methods["signMessage"]
    assert sign["paramStructure"] == "by-name"
    assert [param["name"] for param in sign["params"]] == ["account", "message"]
