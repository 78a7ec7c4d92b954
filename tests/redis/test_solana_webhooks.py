"""Solana webhooks across processes' roles, with Redis: a web process's operator API defines them,
the worker that leads the Solana chain (its events on the chain's Redis Stream) holds the webhooks'
lease and delivers them, read back from the stream with the family's codec: an account's change
and a signature's life, signed."""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

import trio
from solders.keypair import Keypair

from adapters.base import NetworkSpec
from adapters.solana import SolanaDevAdapter
from broker.compose import ServeOptions
from broker.compose._webhooks import redis_webhooks
from broker.config import ServerConfig
from broker.redis import LeaseTiming
from broker.rpc.networks import Network
from broker.worker import Worker
from tests.broker.test_solana_pubsub_e2e import signed_transfer
from tests.redis.test_deployment import redis_process  # noqa: F401 - a fixture
from tests.redis.test_family_events import CHAIN, web_process
from tests.support.redis_server import RedisServer
from tests.support.waiting import eventually
from tests.support.webhook_receiver import webhook_receiver

LAMPORTS = 2_000_000
FAST = ServerConfig(webhook_timeout=2, webhook_backoff_initial=0.05, webhook_backoff_max=0.2)


async def test_the_worker_delivers_solana_webhooks_defined_on_a_web_process(
    redis_process: RedisServer,  # noqa: F811 - the fixture imported above
) -> None:
    spec = NetworkSpec("solana", CHAIN, "solana-dev", {"block_time": 0.2})
    network = Network("solana", CHAIN, SolanaDevAdapter(spec), direct_signing=True)
    options = ServeOptions(role="web", redis_url=redis_process.url)
    recipient = str(Keypair().pubkey())
    with trio.fail_after(90):
        async with (
            trio.open_nursery() as nursery,
            AsyncExitStack() as stack,
            webhook_receiver() as receiver,
        ):
            worker = Worker(
                [network], redis_process.url, maxlen=10_000, timing=LeaseTiming.for_ttl(1.5)
            )
            worker.services.append(
                redis_webhooks(worker.client, worker.networks, FAST, worker.activity).leader
            )
            await worker.start_adapters()
            nursery.start_soon(worker.serve)
            stack.callback(worker.shutdown)
            await eventually(lambda: worker.health()["chains"].get(CHAIN) == "leading", "a leader")
            web, _ = await stack.enter_async_context(web_process(nursery, options, network))

            async def create(method: str, params: list[Any]) -> str:
                reply = await web.admin(
                    "admin_createWebhook",
                    {
                        "url": receiver.url,
                        "chain": CHAIN,
                        "subscription": {"method": method, "params": params},
                        "allowPrivate": True,
                    },
                )
                assert "result" in reply, reply
                receiver.secrets[reply["result"]["id"]] = reply["result"]["secret"]
                return str(reply["result"]["id"])

            account = await create("accountSubscribe", [recipient, {"encoding": "base64"}])
            signature, tx = await signed_transfer(web, recipient, LAMPORTS)
            life = await create("signatureStatusSubscribe", [signature])
            # The worker may take the definitions up after the transfer: it delivers each from
            # the position it was created at (the account's change read back from the stream;
            # the signature's status asked of the node).
            sent = await web.rpc("sendTransaction", [tx, {"encoding": "base64"}], network="solana")
            assert sent.get("result") == signature, sent

            def kinds() -> list[str]:
                once = {r.delivery_id: r for r in receiver.accepted}.values()
                return [r.body["webhook"] for r in once]

            await receiver.until(lambda: kinds().count(life) == 3 and account in kinds())
    assert receiver.bad_signatures == 0
    by_hook: dict[str, list[dict[str, Any]]] = {}
    for received in {r.delivery_id: r for r in receiver.accepted}.values():
        by_hook.setdefault(received.body["webhook"], []).append(received.body["notification"])
    steps = [n["params"]["result"] for n in by_hook[life]]
    assert [(s["status"], s["commitment"]) for s in steps] == [
        ("included", "processed"),
        ("confirmed", "confirmed"),
        ("finalized", "finalized"),
    ]
    assert {s["hash"] for s in steps} == {signature}
    (changed,) = by_hook[account]
    assert changed["method"] == "accountNotification"
    assert changed["params"]["result"]["value"]["lamports"] == LAMPORTS
