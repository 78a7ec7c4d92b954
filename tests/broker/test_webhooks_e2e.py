"""Webhooks over real sockets: a broker on the dev chain POSTs to a receiver on 127.0.0.1 that
verifies every signature with the ``standardwebhooks`` package and fails on purpose (500s, a
stall past the timeout, a refused connection); every event still arrives once in order, a retry
with the delivery id it had. Parking, replay, a reorg on a log filter, the operator's errors."""

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import trio

from broker.compose import ServeOptions
from broker.config import Config, ServerConfig
from tests.broker.test_subscriptions_e2e import mine, token_address, transfer
from tests.broker.test_transaction_life_e2e import signed_transfer
from tests.support.inprocess import RunningBroker, running_broker
from tests.support.waiting import eventually
from tests.support.webhook_receiver import Receiver, webhook_receiver

DEV = "eip155:1337"
#: Short times, so that retries take milliseconds.
FAST = ServerConfig(webhook_timeout=0.3, webhook_backoff_initial=0.02, webhook_backoff_max=0.1)


async def create(node: RunningBroker, receiver: Receiver, params: list[Any], **extra: Any) -> str:
    reply = await node.admin(
        "admin_createWebhook",
        {
            "url": receiver.url,
            "chain": DEV,
            "subscription": {"method": "eth_subscribe", "params": params},
            "allowPrivate": True,
            **extra,
        },
    )
    result = reply["result"]
    assert result["secret"].startswith("whsec_")
    receiver.secrets[result["id"]] = result["secret"]
    return str(result["id"])


async def listed(node: RunningBroker, hook_id: str) -> dict[str, Any]:
    hooks = (await node.admin("admin_listWebhooks", {}))["result"]
    (found,) = [h for h in hooks if h["id"] == hook_id]
    assert isinstance(found, dict)
    return found


def numbers(receiver: Receiver) -> list[int]:
    return [
        int(r.body["notification"]["params"]["result"]["number"], 16) for r in receiver.accepted
    ]


async def test_every_head_arrives_once_in_order_through_500s_a_stall_and_refusal() -> None:
    failing = range(3, 7)  # requests 3 to 6 get a 500; the 7th stalls past the timeout

    def behaviour(n: int) -> int | None:
        return 500 if n in failing else None if n == 7 else 200

    with trio.fail_after(60):
        async with (
            running_broker(ServeOptions(block_time=0), config=Config(server=FAST)) as node,
            webhook_receiver(behaviour) as receiver,
        ):
            hook = await create(node, receiver, ["newHeads"])
            first = int((await node.rpc("eth_blockNumber"))["result"], 16) + 1
            await mine(node, 4)
            await receiver.until(lambda: receiver.requests >= 8)  # past the 500s and the stall
            await receiver.close()  # now connecting is refused
            await mine(node, 3)
            await eventually(
                lambda: _error_has(node, hook, "cannot connect"), "a refused connection"
            )
            await receiver.open()
            await mine(node, 2)
            await receiver.until(lambda: len({r.delivery_id for r in receiver.accepted}) >= 9)
            state = await listed(node, hook)
    assert receiver.bad_signatures == 0
    # Once each, in order; a duplicate (none expected here) would carry the id it had.
    ids = [r.delivery_id for r in receiver.accepted]
    assert len(ids) == len(set(ids))
    assert numbers(receiver) == list(range(first, first + 9))
    body = receiver.accepted[0].body
    assert body["webhook"] == hook
    assert body["chain"] == DEV
    assert body["notification"]["method"] == "eth_subscription"
    assert body["notification"]["params"]["subscription"] == hook
    assert body["cursor"] in receiver.accepted[0].delivery_id
    assert state["state"] == "active"
    assert state["delivered"] == 9
    assert state["backlog"] == 0
    assert state["position"] == receiver.accepted[-1].body["cursor"]
    assert receiver.requests > 9  # the failures were retried


async def _error_has(node: RunningBroker, hook: str, text: str) -> bool:
    return text in ((await listed(node, hook))["lastError"] or "")


async def test_a_webhook_failing_past_retry_for_is_parked_then_replayed_from_its_cursor() -> None:
    healthy = trio.Event()

    def behaviour(n: int) -> int:
        return 200 if healthy.is_set() else 503

    server = ServerConfig(
        webhook_timeout=0.3,
        webhook_backoff_initial=0.02,
        webhook_backoff_max=0.05,
        webhook_retry_for=0.2,
    )
    with trio.fail_after(60):
        async with (
            running_broker(ServeOptions(block_time=0), config=Config(server=server)) as node,
            webhook_receiver(behaviour) as receiver,
        ):
            hook = await create(node, receiver, ["newHeads"])
            start = (await listed(node, hook))["position"]
            await mine(node, 2)
            parked = await eventually(lambda: _parked(node, hook), "the webhook parked as failed")
            (failed,) = parked["failedDeliveries"]
            assert failed["error"] == "HTTP 503"
            assert failed["attempts"] >= 2
            assert parked["position"] == start  # nothing acknowledged
            healthy.set()
            await mine(node)  # parked: not delivered, still on the log
            reply = await node.admin("admin_replayWebhook", {"id": hook, "cursor": start})
            assert reply["result"] == {"replayed": 3}
            await receiver.until(lambda: len(receiver.accepted) >= 3)
            assert (await listed(node, hook))["state"] == "active"
            bad = await node.admin("admin_replayWebhook", {"id": hook, "cursor": "nonsense"})
            assert bad["error"]["code"] == -32602
    assert receiver.accepted[0].delivery_id == failed["id"]  # the idempotency key it had
    assert len(numbers(receiver)) == 3
    assert numbers(receiver) == sorted(numbers(receiver))


async def _parked(node: RunningBroker, hook: str) -> dict[str, Any] | None:
    found = await listed(node, hook)
    return found if found["state"] == "failed" else None


async def test_a_reorg_reaches_a_log_filter_webhook_as_removed_logs() -> None:
    with trio.fail_after(60):
        async with (
            running_broker(ServeOptions(block_time=0), config=Config(server=FAST)) as node,
            webhook_receiver() as receiver,
        ):
            token = await token_address(node)
            await create(node, receiver, ["logs", {"address": token}])
            snapshot = (await node.rpc("evm_snapshot", []))["result"]
            old = [await transfer(node, token, "0x" + f"{i:02x}" * 20, i + 1) for i in range(5)]
            await receiver.until(lambda: len(receiver.accepted) >= 5)
            assert (await node.rpc("evm_revert", [snapshot]))["result"] is True
            new = [await transfer(node, token, "0x" + "b0" * 20, 9) for _ in range(6)]
            await receiver.until(lambda: len(receiver.accepted) >= 16)
    logs = [r.body["notification"]["params"]["result"] for r in receiver.accepted]
    seen = [(log["transactionHash"], log["removed"]) for log in logs]
    assert seen[:5] == [(h, False) for h in old]
    assert sorted(seen[5:10]) == sorted((h, True) for h in old)
    assert seen[10:] == [(h, False) for h in new]
    assert len({r.delivery_id for r in receiver.accepted}) == 16


async def test_the_operator_s_mistakes_get_clear_errors() -> None:
    with trio.fail_after(30):
        async with (
            running_broker(ServeOptions(block_time=0)) as node,
            webhook_receiver() as receiver,
        ):
            base = {
                "chain": DEV,
                "subscription": {"method": "eth_subscribe", "params": ["newHeads"]},
            }
            private = await node.admin("admin_createWebhook", {"url": receiver.url, **base})
            assert private["error"]["code"] == -32602
            assert "allowPrivate" in private["error"]["message"]
            for url in ("ftp://example.com/", "http://user:pw@example.com/", "not a url"):
                reply = await node.admin("admin_createWebhook", {"url": url, **base})
                assert reply["error"]["code"] == -32602, url
            wrong_chain = await node.admin(
                "admin_createWebhook", {"url": "https://example.com/", **base, "chain": "eip155:9"}
            )
            assert wrong_chain["error"]["code"] == -32602
            wrong_kind = await node.admin(
                "admin_createWebhook",
                {
                    **base,
                    "url": "https://example.com/",
                    "subscription": {"method": "eth_subscribe", "params": ["bogus"]},
                },
            )
            assert wrong_kind["error"]["code"] == -32601
            not_a_subscribe = await node.admin(
                "admin_createWebhook",
                {
                    **base,
                    "url": "https://example.com/",
                    "subscription": {"method": "eth_unsubscribe", "params": ["newHeads"]},
                },
            )
            assert not_a_subscribe["error"]["code"] == -32601
            missing = await node.admin("admin_createWebhook", {"url": "https://example.com/"})
            assert missing["error"]["code"] == -32602
            unknown = await node.admin("admin_deleteWebhook", {"id": "wh_nope"})
            assert unknown["error"]["code"] == -32602
            hook = await create(node, receiver, ["newHeads"])
            assert (await node.admin("admin_deleteWebhook", {"id": hook}))["result"] is True
            assert (await node.admin("admin_listWebhooks", {}))["result"] == []
            await mine(node)
    assert receiver.requests == 0


async def test_activity_follows_the_logs_that_name_an_address() -> None:
    watched = "0x" + "ab" * 20
    with trio.fail_after(60):
        async with (
            running_broker(ServeOptions(block_time=0), config=Config(server=FAST)) as node,
            webhook_receiver() as receiver,
        ):
            token = await token_address(node)
            await create(
                node, receiver, ["activity", {"address": watched.upper().replace("0X", "0x")}]
            )
            await transfer(node, token, "0x" + "cd" * 20, 1)  # names another address
            mine_tx = await transfer(node, token, watched, 2)
            await receiver.until(lambda: len(receiver.accepted) >= 1)
            bad = await node.admin(
                "admin_createWebhook",
                {
                    "url": receiver.url,
                    "chain": DEV,
                    "allowPrivate": True,
                    "subscription": {"method": "eth_subscribe", "params": ["activity", {}]},
                },
            )
            assert bad["error"]["code"] == -32602
    (only,) = [r.body["notification"]["params"]["result"] for r in receiver.accepted]
    assert (only["kind"], only["removed"]) == ("log", False)
    assert only["log"]["transactionHash"] == mine_tx
    assert only["log"]["topics"][2] == "0x" + "0" * 24 + watched[2:]


def readme_receiver() -> str:
    """The Python receiver the README shows."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    marker = "tests/broker/test_webhooks_e2e.py runs this block as a process) -->\n```python\n"
    return readme.split(marker, 1)[1].split("```", 1)[0]


async def test_the_readme_s_python_receiver_verifies_a_delivery() -> None:
    with socket.socket() as probe:  # a free port for the receiver, which starts after the webhook
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with trio.fail_after(60):
        async with running_broker(ServeOptions(block_time=0), config=Config(server=FAST)) as node:
            reply = await node.admin(
                "admin_createWebhook",
                {
                    "url": f"http://127.0.0.1:{port}/",
                    "chain": DEV,
                    "allowPrivate": True,
                    "subscription": {"method": "eth_subscribe", "params": ["newHeads"]},
                },
            )
            hook = reply["result"]
            env = {**os.environ, "WEBHOOK_SECRET": hook["secret"], "PORT": str(port)}
            process = await trio.lowlevel.open_process(
                [sys.executable, "-c", readme_receiver()], env=env, stdout=subprocess.PIPE
            )
            try:
                await mine(node)
                assert process.stdout is not None
                line = b""
                while b"\n" not in line:
                    line += await process.stdout.receive_some(4096)
            finally:
                process.kill()
                await process.wait()
    delivery_id, cursor, _ = line.decode().split(" ", 2)
    assert delivery_id == f"msg_{hook['id']}_{cursor}_0"


async def test_a_webhook_follows_a_transaction_to_finality() -> None:
    with trio.fail_after(60):
        async with (
            running_broker(ServeOptions(block_time=0), config=Config(server=FAST)) as node,
            webhook_receiver() as receiver,
        ):
            raw, tx_hash = await signed_transfer(node)
            hook = await create(node, receiver, ["transaction", {"hash": tx_hash}])
            assert (await node.rpc("eth_sendRawTransaction", [raw]))["result"] == tx_hash
            await receiver.until(lambda: len(receiver.accepted) >= 1)
            await mine(node, 12)
            await receiver.until(lambda: len(receiver.accepted) >= 5)
            await mine(node)
            assert (await listed(node, hook))["state"] == "active"
    results = [r.body["notification"]["params"]["result"] for r in receiver.accepted]
    assert [(r["status"], r["depth"]) for r in results] == [
        ("included", 0),
        ("confirmed", 1),
        ("confirmed", 6),
        ("confirmed", 12),
        ("finalized", 12),
    ]
    assert {r["hash"] for r in results} == {tx_hash}
    assert len({r.delivery_id for r in receiver.accepted}) == 5
