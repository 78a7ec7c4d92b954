"""The bare broker (:func:`broker.compose.build_bare_broker`: no session service, as library
users and the bench build it) resumes a direct subscription whole: its connections follow no
session-change feed, so a resume must not wait for one (it did, and every resume ended with
``complete: false``)."""

from __future__ import annotations

from urllib.parse import quote

import httpx
import trio

from adapters.base import NetworkSpec
from adapters.devchain import DevChainAdapter
from broker.compose import build_bare_broker
from broker.rpc.networks import Network, Networks
from tests.support.rawws import RawWebSocket

CHAIN = "eip155:1337"


async def test_a_core_broker_resumes_a_direct_subscription_whole() -> None:
    adapter = DevChainAdapter.from_spec(
        NetworkSpec(name="dev", chain=CHAIN, adapter="devchain", options={"block_time": 0})
    )
    broker = build_bare_broker(Networks([Network("dev", CHAIN, adapter)]), api_keys=["dev"])
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery, httpx.AsyncClient() as http:
            port = await nursery.start(broker.serve, "127.0.0.1", 0)
            url = f"http://127.0.0.1:{port}/v3/dev"

            async def mine() -> None:
                body = {"jsonrpc": "2.0", "id": 1, "method": "evm_mine", "params": []}
                assert "error" not in (await http.post(url, json=body)).json()

            first = await RawWebSocket.connect(port, "/ws/v3/dev")
            await first.call(
                {"jsonrpc": "2.0", "id": 1, "method": "eth_subscribe", "params": ["newHeads"]}
            )
            assert "result" in await first.message()
            await mine()
            note = await first.message()
            cursor = note["params"]["cursor"]
            first.close()
            for _ in range(2):  # mined while the dapp is away
                await mine()

            again = await RawWebSocket.connect(port, f"/ws/v3/dev?resume={quote(cursor)}")
            numbers = []
            for _ in range(2):
                replayed = await again.message()
                assert replayed["method"] == "eth_subscription", replayed
                numbers.append(int(replayed["params"]["result"]["number"], 16))
            done = await again.message()
            assert done["method"] == "scopecast_resumed", done
            assert done["params"] == {"replayed": 2, "complete": True}
            start = int(note["params"]["result"]["number"], 16)
            assert numbers == [start + 1, start + 2]
            again.close()
            broker.shutdown()
