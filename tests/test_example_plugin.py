"""The example plug-in (examples/example-ledger, installed through its own entry point) served by
a real broker beside the dev chain: its methods over HTTP, in rpc.discover, through the cache."""

from __future__ import annotations

import json
import logging
import re

import pytest
import trio

from broker.config import Config
from tests.support.inprocess import running_broker

CONFIG = Config(
    networks={
        "dev": {"chain": "eip155:1337", "adapter": "devchain", "default": True},
        "ledger": {"chain": "ledger:demo", "adapter": "example-ledger", "genesis": ["hello"]},
    }
)


async def test_a_third_party_chain_is_served_beside_the_dev_chain() -> None:
    with trio.fail_after(60):
        async with running_broker(config=CONFIG) as node:
            assert (await node.rpc("ledger_head", [], network="ledger"))["result"] == 0
            appended = await node.rpc("ledger_append", ["world"], network="ledger")
            assert appended["result"]["height"] == 1
            for _ in range(2):  # the second is answered from the response cache
                entry = await node.rpc("ledger_getEntry", [1], network="ledger")
                assert entry["result"]["text"] == "world"
            assert (await node.rpc("ledger_head", [], network="ledger"))["result"] == 1
            missing = await node.rpc("ledger_head", [], network="dev")
            assert missing["error"]["code"] == -32601
            document = (await node.rpc("rpc.discover", [], network="ledger"))["result"]
    store = node.broker.dispatcher.cache.store
    assert store is not None
    assert store.hits >= 1
    described = {m["name"]: m for m in document["methods"]}
    assert {"ledger_head", "ledger_getEntry", "ledger_append"} <= set(described)
    assert "x-undescribed" not in described["ledger_getEntry"]
    assert "eth_getLogs" not in described  # the ledger's own methods, not the dev chain's
    schemas = document["components"]["schemas"]
    text = json.dumps(document)
    refs = set(re.findall(r'"#/components/schemas/([^"]+)"', text))
    assert refs <= set(schemas), refs - set(schemas)


def test_start_up_says_which_networks_can_sign(caplog: pytest.LogCaptureFixture) -> None:
    from broker.cli import _log_signing_accounts
    from broker.compose import build_broker

    broker = build_broker(CONFIG)
    trio.run(broker.start_adapters)
    with caplog.at_level(logging.INFO, logger="scopecast"):
        _log_signing_accounts(broker)
    lines = [r.getMessage() for r in caplog.records]
    assert "network dev (eip155:1337): 10 signing accounts" in lines
    assert any(
        line.startswith("network ledger (ledger:demo): no signing accounts") for line in lines
    )
