"""Webhooks across processes, as real OS processes: a dev chain node (every block 0.5 s), a
redis-server, a web process whose operator API defines the webhook, and workers, one of which
holds the webhooks' lease and delivers. The receiver answers 500 while the first worker retries;
that worker is killed with ``kill -9`` mid-retry; the second takes the lease over and, once the
receiver recovers, every head since the webhook was created arrives once, in order, signed
(a repeat only with the delivery id it had); a replay asked through the web process follows."""

from __future__ import annotations

from pathlib import Path

import trio

from broker.events.cursors import position_order
from tests.redis.test_deployment import (  # noqa: F401 - a fixture
    admin,
    redis_process,
    start_upstream,
)
from tests.support.redis_server import RedisServer
from tests.support.waiting import eventually
from tests.support.webhook_receiver import webhook_receiver

DEV = "eip155:1337"
FAST = "[server]\nwebhook_backoff_initial = 0.05\nwebhook_backoff_max = 0.2\nwebhook_timeout = 2\n"


async def test_a_worker_killed_mid_retry_loses_no_delivery(
    tmp_path: Path,
    redis_process: RedisServer,  # noqa: F811 - the fixture imported above
) -> None:
    healthy = trio.Event()
    with trio.fail_after(90):
        async with (
            trio.open_nursery() as nursery,
            webhook_receiver(lambda n: 200 if healthy.is_set() else 500) as receiver,
        ):
            upstream = await start_upstream(nursery, tmp_path, "0.5")
            config = trio.Path(upstream.config)
            await config.write_text(await config.read_text() + FAST)
            first = await upstream.start_worker(redis_process.url)
            await first.wait_for("webhooks: delivering here")
            web = upstream.web(redis_process.url)
            await web.start()
            start = int((await web.result("eth_blockNumber")), 16)
            created = await admin(
                web,
                "admin_createWebhook",
                {
                    "url": receiver.url,
                    "chain": DEV,
                    "subscription": {"method": "eth_subscribe", "params": ["newHeads"]},
                    "allowPrivate": True,
                },
            )
            hook = created["result"]
            receiver.secrets[hook["id"]] = hook["secret"]
            await receiver.until(lambda: receiver.requests >= 5)  # the first worker retries
            second = await upstream.start_worker(redis_process.url)
            await first.kill()
            await second.wait_for("webhooks: delivering here")
            healthy.set()
            await receiver.until(lambda: len({r.delivery_id for r in receiver.accepted}) >= 8)

            async def caught_up() -> bool:
                (found,) = (await admin(web, "admin_listWebhooks", {}))["result"]
                return found["state"] == "active" and found["delivered"] >= 8

            await eventually(caught_up, "the listing shows the deliveries")
            # A replay asked through the web process reaches the worker that delivers.
            again_from = receiver.accepted[2].body["cursor"]
            replayed = await admin(
                web, "admin_replayWebhook", {"id": hook["id"], "cursor": again_from}
            )
            assert replayed["result"]["replayed"] >= 5
            seen = len(receiver.accepted)
            await receiver.until(lambda: len(receiver.accepted) >= seen + 5)
            nursery.cancel_scope.cancel()
    assert receiver.bad_signatures == 0
    by_id: dict[str, dict[str, object]] = {}
    for received in receiver.accepted:
        # At least once: a repeat carries the id it had, and the same body.
        assert by_id.setdefault(received.delivery_id, received.body) == received.body
    bodies = list(by_id.values())
    numbers = [int(b["notification"]["params"]["result"]["number"], 16) for b in bodies]  # type: ignore[index]
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))
    # From the head after the webhook was created: what the killed worker owed was not lost.
    assert start < numbers[0] <= start + 2
    # The replay sent again what followed its cursor, each with the id it had.
    again = receiver.accepted[seen]
    assert by_id[again.delivery_id] == again.body
    assert position_order(str(again.body["cursor"])) > position_order(again_from)
