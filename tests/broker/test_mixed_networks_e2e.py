"""One broker, two networks side by side: the embedded dev chain and an upstream network (a separate
scopecast process serving the conformance chain), with one CAIP-25 session spanning both chains."""

import trio

from broker.config import Config
from tests.support.conformance import CONFORMANCE_DIR, needs_conformance
from tests.support.inprocess import dapp, running_broker
from tests.support.processes import start_scopecast

FIXTURES = CONFORMANCE_DIR
FIXTURE_CHAIN = "eip155:3503995874084926"
DEV = "eip155:1337"


async def upstream_node(nursery: trio.Nursery) -> str:
    """An upstream node on another chain than the dev chain's: the conformance fixture chain."""
    node = await start_scopecast(
        nursery,
        "--genesis",
        str(FIXTURES / "genesis.json"),
        "--chain-file",
        str(FIXTURES / "chain.rlp"),
        "--forkchoice",
        str(FIXTURES / "headfcu.json"),
    )
    return node.base_url


@needs_conformance
async def test_dev_chain_and_upstream_network_in_one_broker() -> None:
    with trio.fail_after(90):
        async with trio.open_nursery() as nursery:
            base = await upstream_node(nursery)
            config = Config(
                networks={
                    "dev": {"chain": DEV, "adapter": "devchain", "default": True},
                    "hive": {
                        "chain": FIXTURE_CHAIN,
                        "upstreams": [
                            {
                                "http": f"{base}/v3/dev",
                                "ws": base.replace("http", "ws") + "/ws/v3/dev",
                            }
                        ],
                    },
                }
            )
            async with running_broker(config=config) as node:
                assert (await node.rpc("eth_chainId", []))["result"] == "0x539"
                assert (await node.rpc("eth_chainId", [], network="hive"))["result"] == hex(
                    3503995874084926
                )
                head = (await node.rpc("eth_blockNumber", [], network="hive"))["result"]
                assert head == "0x2d"
                async with dapp(node.ws_url()) as conn:
                    scopes = {
                        chain: {"methods": ["eth_blockNumber"], "notifications": []}
                        for chain in (DEV, FIXTURE_CHAIN)
                    }
                    granted = await conn.result("wallet_createSession", {"optionalScopes": scopes})
                    assert set(granted["sessionScopes"]) == {DEV, FIXTURE_CHAIN}
                    assert granted["sessionScopes"][FIXTURE_CHAIN]["accounts"] == []
                    for chain, expected in ((FIXTURE_CHAIN, "0x2d"), (DEV, None)):
                        reply = await conn.result(
                            "wallet_invokeMethod",
                            {
                                "scope": chain,
                                "request": {"method": "eth_blockNumber", "params": []},
                            },
                        )
                        if expected is not None:
                            assert reply["result"]["result"] == expected
                        else:
                            assert reply["result"]["result"].startswith("0x")
                    # The upstream network holds no keys: a 5101 for signing there says so.
                    only_signing = {
                        FIXTURE_CHAIN: {"methods": ["personal_sign"], "notifications": []}
                    }
                    refused = await conn.call(
                        "wallet_createSession", {"optionalScopes": only_signing}
                    )
                    assert refused["error"]["code"] == 5101
                    assert refused["error"]["data"]["reason"].startswith(
                        f"the wallet holds no signing accounts on {FIXTURE_CHAIN}"
                    )
            nursery.cancel_scope.cancel()
