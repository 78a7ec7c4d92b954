"""ethers v6's WebSocketProvider follows blocks and token Transfer logs through scopecast, whose
notifications carry a ``cursor`` it must ignore; see ``ethers_watch.mjs``."""

from __future__ import annotations

import trio

from tests.broker.test_subscriptions_e2e import token_address
from tests.interop.nodejs import run_node_script
from tests.support.inprocess import RunningBroker


async def test_ethers_follows_blocks_and_logs(node: RunningBroker) -> None:
    token = await token_address(node)
    with trio.fail_after(40):
        run = await run_node_script(
            "ethers_watch.mjs", {"ws": node.ws_url(), "http": node.http_url(), "token": token}
        )
    assert run.ok, run.explain()
