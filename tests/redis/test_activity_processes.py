"""Address activity across processes, as real OS processes: a dev chain node (mining each
transaction at once), a redis-server, a web process holding an ``activity`` subscription and a
worker that ingests the chain and delivers an ``activity`` webhook. The worker fetches the blocks'
transactions only once both announced their subscriptions in Redis; the transactions travel on
the chain's stream, so a dropped connection resumes them from its cursor, and a reorganisation
on the node removes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import trio

from tests.broker.test_activity_e2e import RECIPIENT, SENDER, brief, send_value
from tests.redis.test_deployment import (  # noqa: F401 - a fixture
    admin,
    redis_process,
    start_upstream,
)
from tests.support.inprocess import Dapp, dapp
from tests.support.redis_server import RedisServer, redis_command
from tests.support.waiting import eventually
from tests.support.webhook_receiver import webhook_receiver

DEV = "eip155:1337"
ANNOUNCED = "scopecast:activity:{eip155:1337}"


async def activity(conn: Dapp, count: int) -> list[dict[str, Any]]:
    found = []
    for _ in range(count):
        note = await conn.notification()
        assert note["method"] == "eth_subscription", note
        found.append(note["params"]["result"])
    return found


async def test_activity_travels_on_the_stream_and_resumes_from_a_cursor(
    tmp_path: Path,
    redis_process: RedisServer,  # noqa: F811 - the fixture imported above
) -> None:
    with trio.fail_after(90):
        async with trio.open_nursery() as nursery, webhook_receiver() as receiver:
            upstream = await start_upstream(nursery, tmp_path, "0")
            node = upstream.node
            assert node is not None
            worker = await upstream.start_worker(redis_process.url)
            await worker.wait_for("leading from block")
            await worker.wait_for("webhooks: delivering here")
            web = upstream.web(redis_process.url)
            await web.start()
            created = await admin(
                web,
                "admin_createWebhook",
                {
                    "url": receiver.url,
                    "chain": DEV,
                    "subscription": {
                        "method": "eth_subscribe",
                        "params": ["activity", {"address": SENDER}],
                    },
                    "allowPrivate": True,
                },
            )
            hook = created["result"]
            receiver.secrets[hook["id"]] = hook["secret"]
            async with dapp(web.ws_url()) as conn:
                sub = await conn.result("eth_subscribe", ["activity", {"address": RECIPIENT}])

                async def both_announced() -> bool:
                    # The web process (its connection's) and the worker (its webhook's).
                    reply = await redis_command(redis_process.port, "ZCARD", ANNOUNCED)
                    return reply == b":2\r\n"

                await eventually(both_announced, "both processes announced their activity")
                snapshot = await node.result("evm_snapshot", [])
                paid = await send_value(node, RECIPIENT, 2)
                (live,) = await activity(conn, 1)
                assert brief(live) == ("transaction", paid, False)
                assert live["transaction"]["from"] == SENDER
                cursor = conn.last_cursor
                assert sub
            # Dropped: what happens meanwhile comes back with ?resume= (the stream has it).
            missed = await send_value(node, RECIPIENT, 3)
            assert await node.result("evm_revert", [snapshot]) is True
            await node.result("evm_mine", [])
            await node.result("evm_mine", [])
            await node.result("evm_mine", [])
            await receiver.until(lambda: len(receiver.accepted) >= 4)
            async with dapp(f"{web.ws_url()}?resume={quote(cursor)}") as again:
                replayed = await activity(again, 3)
                resumed = await again.notification()
            nursery.cancel_scope.cancel()
    assert resumed["method"] == "scopecast_resumed"
    assert resumed["params"]["complete"] is True
    # The transfer missed, then both taken back by the reorganisation (oldest block first).
    assert [brief(r) for r in replayed] == [
        ("transaction", missed, False),
        ("transaction", paid, True),
        ("transaction", missed, True),
    ]
    bodies = [r.body["notification"]["params"]["result"] for r in receiver.accepted]
    assert [brief(b)[1:] for b in bodies[:2]] == [(paid, False), (missed, False)]
    assert [brief(b)[1:] for b in bodies[2:]] == [(paid, True), (missed, True)]
    assert receiver.bad_signatures == 0
