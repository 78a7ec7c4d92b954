"""``GET /metrics`` exports every documented metric, with values that follow what happened."""

import httpx
import trio
from prometheus_client.parser import text_string_to_metric_families

from broker.compose import ServeOptions
from broker.config import Config, ServerConfig
from tests.support.inprocess import RunningBroker, dapp, running_broker
from tests.support.rawws import RawWebSocket

DEV = "eip155:1337"
SCOPE = {"methods": ["eth_subscribe"], "notifications": ["eth_subscription"]}
#: A small outbox, so that a client that stops reading is closed after a few blocks.
SMALL_OUTBOX = Config(server=ServerConfig(outbox_limit_bytes=64 * 1024))

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def scrape(node: RunningBroker) -> tuple[Samples, set[str]]:
    """The samples of ``/metrics`` by (name, labels), and the metric families' types."""
    async with httpx.AsyncClient() as client:
        reply = await client.get(f"{node.base}/metrics")
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("text/plain")
    samples: Samples = {}
    types: set[str] = set()
    for family in text_string_to_metric_families(reply.text):
        types.add(f"{family.name} {family.type}")
        for sample in family.samples:
            samples[sample.name, frozenset(sample.labels.items())] = sample.value
    return samples, types


def value(samples: Samples, name: str, **labels: str) -> float:
    key = (name, frozenset(labels.items()))
    assert key in samples, (key, sorted(n for n, _ in samples))
    return samples[key]


async def mine(node: RunningBroker) -> int:
    reply = await node.rpc("evm_mine", [])
    assert "error" not in reply, reply
    return int((await node.rpc("eth_blockNumber", []))["result"], 16)


async def test_every_metric_is_exported_after_activity() -> None:
    with trio.fail_after(60):
        async with (
            running_broker(ServeOptions(block_time=0), config=SMALL_OUTBOX) as node,
            dapp(node.ws_url(), origin="https://dapp.example") as conn,
        ):
            await conn.result("wallet_createSession", {"optionalScopes": {DEV: SCOPE}})
            scoped = await conn.result(
                "wallet_invokeMethod",
                {"scope": DEV, "request": {"method": "eth_subscribe", "params": ["newHeads"]}},
            )
            direct = await conn.result("eth_subscribe", ["newHeads"])
            await conn.result("eth_subscribe", ["logs", {"address": "0x" + "11" * 20}])
            failed = await conn.call("eth_getBalance", [])
            assert "error" in failed

            # a reorganisation of depth one: snapshot, mine, revert, mine at the same height
            snapshot = (await node.rpc("evm_snapshot", []))["result"]
            first = await mine(node)
            assert (await node.rpc("evm_revert", [snapshot]))["result"] is True
            assert await mine(node) == first
            numbers: list[tuple[str, int]] = []
            while len(numbers) < 4:
                note = await conn.notification()
                if note["method"] == "wallet_notify":
                    sub = note["params"]["notification"]["params"]["subscription"]
                    result = note["params"]["notification"]["params"]["result"]
                else:
                    sub, result = note["params"]["subscription"], note["params"]["result"]
                numbers.append((sub, int(result["number"], 16)))
            assert sorted(numbers) == sorted(
                [(scoped["result"]["result"], first), (direct, first)] * 2
            )

            # a client that stops reading: subscribed 200 times, it falls behind within blocks
            slow = await RawWebSocket.connect(node.port, "/ws/v3/dev", rcvbuf=4096)
            for i in range(200):
                await slow.call(
                    {"jsonrpc": "2.0", "id": i, "method": "eth_subscribe", "params": ["newHeads"]}
                )
            registry = node.broker.metrics.registry
            while not registry.get_sample_value("scopecast_slow_consumer_disconnects_total"):
                await mine(node)
            slow.close()

            samples, types = await scrape(node)

        assert value(samples, "scopecast_connections") >= 1
        assert value(samples, "scopecast_sessions") == 1
        assert value(samples, "scopecast_subscriptions", kind="newHeads") == 2
        assert value(samples, "scopecast_subscriptions", kind="logs") == 1
        assert value(samples, "scopecast_notifications_total") >= 4
        assert value(samples, "scopecast_slow_consumer_disconnects_total") == 1
        assert value(samples, "scopecast_reorgs_total", chain=DEV) == 1
        assert value(samples, "scopecast_reorg_depth_count", chain=DEV) == 1
        assert value(samples, "scopecast_reorg_depth_sum", chain=DEV) == 1
        assert value(samples, "scopecast_reorg_depth_bucket", chain=DEV, le="1.0") == 1
        assert value(samples, "scopecast_skipped_heights_total", chain=DEV) == 0
        ok = value(samples, "scopecast_requests_total", method="eth_subscribe", outcome="ok")
        assert ok >= 2
        assert value(samples, "scopecast_requests_total", method="eth_getBalance", outcome="error")
        assert value(samples, "scopecast_request_seconds_count", method="eth_subscribe") == ok
        assert value(samples, "scopecast_request_seconds_bucket", method="eth_subscribe", le="+Inf")
        assert "scopecast_blocks_without_logs" in {name.split()[0] for name in types}
        assert {
            "scopecast_connections gauge",
            "scopecast_sessions gauge",
            "scopecast_subscriptions gauge",
            "scopecast_notifications counter",
            "scopecast_slow_consumer_disconnects counter",
            "scopecast_reorgs counter",
            "scopecast_reorg_depth histogram",
            "scopecast_skipped_heights counter",
            "scopecast_requests counter",
            "scopecast_request_seconds histogram",
            "scopecast_blocks_without_logs counter",
        } <= types
