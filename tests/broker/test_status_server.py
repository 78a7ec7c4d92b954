"""The worker's status endpoint over a real socket: metrics, health, and nothing else."""

import httpx
import trio

from broker.metrics import Metrics
from broker.operator.status_server import serve_status


async def test_metrics_and_health_are_served_and_nothing_else() -> None:
    metrics = Metrics()
    metrics.reorgs.labels("eip155:1").inc()
    state = {"status": "ok", "chains": {"eip155:1": "leading"}}
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(serve_status, metrics, lambda: state, "127.0.0.1", 0)
            base = f"http://127.0.0.1:{port}"
            async with httpx.AsyncClient() as client:
                scraped = await client.get(f"{base}/metrics")
                assert scraped.status_code == 200
                assert scraped.headers["content-type"].startswith("text/plain")
                assert 'scopecast_reorgs_total{chain="eip155:1"} 1.0' in scraped.text

                health = await client.get(f"{base}/healthz")
                assert health.status_code == 200
                assert health.json() == state

                state["chains"]["eip155:1"] = "standby"  # read at each request
                assert (await client.get(f"{base}/healthz")).json()["chains"] == {
                    "eip155:1": "standby"
                }
                assert (await client.post(f"{base}/metrics", content=b"x")).status_code == 405
                assert (await client.get(f"{base}/v3/dev")).status_code == 404
            nursery.cancel_scope.cancel()
