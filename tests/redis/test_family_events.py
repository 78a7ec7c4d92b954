"""A chain family's own events across processes' roles: the Solana dev chain ingested once by a
worker (its leader lease), its slots and account changes on the chain's Redis Stream, fanned out
by web brokers that read it from a real redis-server. Session clients (``wallet_notify``) and
direct ones (``/solana/ws/v3/<KEY>``) follow slots and an account receiving transfers on web A;
web A is cut off (its sockets dropped, no drain) and every client resumes on web B with its last
cursor; then web B is stopped as for a deploy (1012 and a cursor) and every client resumes on
web C. Each must have seen every slot and every account change exactly once, in order, judged
against the chain's own balances.

The fleet runs in the test's trio run (real sockets, real Redis): the worker and both web brokers
share one Solana dev adapter, as a fleet's processes share their nodes. A Solana upstream adapter
lets a fleet of OS processes follow a Solana node; until then no worker process can ingest a
Solana chain (``worker`` refuses embedded dev chains).
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import trio
from solders.hash import Hash
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.system_program import TransferParams, transfer
from solders.transaction import Transaction

from adapters._ed25519 import DEV_MNEMONIC, derive_keypairs
from adapters.base import NetworkSpec
from adapters.solana import SolanaDevAdapter, dev_chain_id
from broker.compose import ServeOptions
from broker.redis import LeaseTiming
from broker.rpc.networks import Network
from broker.worker import Worker
from tests.redis.test_deployment import redis_process  # noqa: F401 - a fixture
from tests.support.inprocess import RunningBroker, running_broker
from tests.support.rawws import RawWebSocket
from tests.support.redis_server import RedisServer
from tests.support.waiting import eventually

CHAIN = dev_chain_id({"block_time": 0.2})
(ALICE,) = derive_keypairs(DEV_MNEMONIC, 1)
CLIENTS = 10  # of each kind
#: Transfers before web A goes, while no web process serves the clients, and after they resume.
BEFORE, DURING, AFTER = 3, 3, 3
BASE = 1_000_000  # above the rent-exempt minimum of a new account


@dataclass
class Follower:
    """One client: the slots and the recipient's balances it saw, in order, and its cursor."""

    index: int
    session: bool
    slots: list[int] = field(default_factory=list)
    balances: list[int] = field(default_factory=list)
    cursor: str | None = None
    resumed: list[dict[str, Any]] = field(default_factory=list)
    #: The close frames received (code, reason).
    closes: list[tuple[int, str]] = field(default_factory=list)
    _ids: int = 0

    async def connect(self, web: RunningBroker, resume: bool) -> RawWebSocket:
        path = "/ws/v3/dev" if self.session else "/solana/ws/v3/dev"
        if resume:
            assert self.cursor is not None
            path += f"?resume={quote(self.cursor)}"
        return await RawWebSocket.connect(
            web.port, path, origin=f"https://dapp{self.index}.example"
        )

    def take(self, message: dict[str, Any]) -> None:
        """One notification (a reply is not one)."""
        if message["method"] == "scopecast_resumed":
            self.resumed.append(message["params"])
            return
        self.cursor = message["params"]["cursor"]
        if self.session:
            assert message["method"] == "wallet_notify", message
            assert message["params"]["scope"] == CHAIN
            message = message["params"]["notification"]
        result = message["params"]["result"]
        if message["method"] == "slotNotification":
            self.slots.append(result["slot"])
        elif message["method"] == "accountNotification":
            self.balances.append(result["value"]["lamports"])

    async def call(self, ws: RawWebSocket, method: str, params: Any) -> Any:
        self._ids += 1
        await ws.call({"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params})
        while True:
            message = await ws.message()
            assert message is not None, f"closed while calling {method}"
            if message.get("id") == self._ids:
                assert "error" not in message, message
                return message["result"]
            self.take(message)

    async def subscribe(self, ws: RawWebSocket, recipient: str) -> None:
        calls = [("slotSubscribe", []), ("accountSubscribe", [recipient, {"encoding": "base64"}])]
        if not self.session:
            for method, params in calls:
                assert isinstance(await self.call(ws, method, params), int)
            return
        scope = {
            "methods": ["slotSubscribe", "accountSubscribe"],
            "notifications": ["slotNotification", "accountNotification"],
        }
        await self.call(ws, "wallet_createSession", {"optionalScopes": {CHAIN: scope}})
        for method, params in calls:
            request = {"scope": CHAIN, "request": {"method": method, "params": params}}
            answer = await self.call(ws, "wallet_invokeMethod", request)
            assert isinstance(answer["result"]["result"], int)

    async def run(
        self,
        web: RunningBroker,
        recipient: str | None,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Connect to ``web`` (subscribing to ``recipient`` too, or resuming when it is None),
        then take every notification until the connection drops."""
        ws = await self.connect(web, resume=recipient is None)
        try:
            if recipient is not None:
                await self.subscribe(ws, recipient)
            task_status.started()
            while (frame := await ws.frame()) is not None:
                opcode, payload = frame
                if opcode == 0x8:  # a drain's close: 1012 and the cursor to resume from
                    self.closes.append((struct.unpack("!H", payload[:2])[0], payload[2:].decode()))
                    return
                if opcode == 0x1:
                    self.take(json.loads(payload))
        except OSError:
            return  # the web process went away: the drop the test makes
        finally:
            ws.close()


class Sender:
    """Transfers from the first dev account to ``recipient``, each of its own amount, through a
    web broker's HTTP; the recipient's balance after each, as the chain computes it."""

    def __init__(self, recipient: str) -> None:
        self.recipient = recipient
        self.balances: list[int] = []

    async def send(self, web: RunningBroker) -> None:
        lamports = BASE + len(self.balances)
        reply = await web.rpc("getLatestBlockhash", [], network="solana")
        blockhash = Hash.from_string(reply["result"]["value"]["blockhash"])
        to = Pubkey.from_string(self.recipient)
        instruction = transfer(
            TransferParams(from_pubkey=ALICE.pubkey(), to_pubkey=to, lamports=lamports)
        )
        tx = Transaction([ALICE], Message([instruction], ALICE.pubkey()), blockhash)
        encoded = base64.b64encode(bytes(tx)).decode()
        sent = await web.rpc("sendTransaction", [encoded, {"encoding": "base64"}], network="solana")
        assert sent.get("result") == str(tx.signatures[0]), sent
        self.balances.append((self.balances[-1] if self.balances else 0) + lamports)


async def seen_by_all(web: RunningBroker, sender: Sender, followers: list[Follower]) -> None:
    """Wait until every follower has every transfer sent and the slots after them."""
    slot = (await web.rpc("getSlot", [], network="solana"))["result"]
    await eventually(
        lambda: all(
            f.balances and f.balances[-1] == sender.balances[-1] and f.slots[-1] >= slot + 2
            for f in followers
        ),
        f"every client on port {web.port} sees every transfer and the slots after them",
    )


@asynccontextmanager
async def web_process(
    nursery: trio.Nursery, options: ServeOptions, network: Network
) -> AsyncIterator[tuple[RunningBroker, trio.CancelScope]]:
    """A web broker and the scope that cuts it off at once (no drain: its sockets just drop)."""
    cut = trio.CancelScope()

    async def run(*, task_status: trio.TaskStatus[RunningBroker]) -> None:
        with cut:
            async with running_broker(options, built=[network]) as web:
                task_status.started(web)
                await trio.sleep_forever()

    web: RunningBroker = await nursery.start(run)
    try:
        yield web, cut
    finally:
        cut.cancel()


async def test_solana_subscriptions_resume_on_another_web_process(
    redis_process: RedisServer,  # noqa: F811 - the fixture imported above
) -> None:
    spec = NetworkSpec("solana", CHAIN, "solana-dev", {"block_time": 0.2})
    network = Network("solana", CHAIN, SolanaDevAdapter(spec), direct_signing=True)
    options = ServeOptions(role="web", redis_url=redis_process.url)
    sender = Sender(str(Keypair().pubkey()))
    followers = [Follower(i, session=i % 2 == 0) for i in range(2 * CLIENTS)]
    witness = Follower(len(followers), session=False)
    witness_c = Follower(len(followers) + 1, session=False)
    with trio.fail_after(90):
        async with trio.open_nursery() as nursery, AsyncExitStack() as stack:
            worker = Worker(
                [network], redis_process.url, maxlen=10_000, timing=LeaseTiming.for_ttl(1.5)
            )
            await worker.start_adapters()
            nursery.start_soon(worker.serve)
            stack.callback(worker.shutdown)
            await eventually(lambda: worker.health()["chains"].get(CHAIN) == "leading", "a leader")
            web_a, cut_a = await stack.enter_async_context(web_process(nursery, options, network))
            web_b, _ = await stack.enter_async_context(web_process(nursery, options, network))
            # A client of web B all along: once it has seen the transfers made while web A's
            # clients were away, web B has delivered them, and resuming must replay them.
            await nursery.start(witness.run, web_b, sender.recipient)

            async with trio.open_nursery() as clients:
                for follower in followers:
                    await clients.start(follower.run, web_a, sender.recipient)
                for _ in range(BEFORE):
                    await sender.send(web_b)
                await eventually(
                    lambda: all(len(f.balances) == BEFORE and f.slots for f in followers),
                    "every client on web A sees the first transfers",
                )
                cut_a.cancel()  # web A goes: its clients' sockets drop
            for _ in range(DURING):
                await sender.send(web_b)
            await eventually(
                lambda: len(witness.balances) == BEFORE + DURING, "web B delivers the transfers"
            )

            async with trio.open_nursery() as clients:
                for follower in followers:
                    await clients.start(follower.run, web_b, None)
                await eventually(
                    lambda: all(f.resumed for f in followers), "every client resumed on web B"
                )
                for _ in range(AFTER):
                    await sender.send(web_b)
                await seen_by_all(web_b, sender, [*followers, witness])
                # Web C starts; web B is stopped as for a deploy: each client gets 1012 and the
                # cursor to resume from.
                web_c, _ = await stack.enter_async_context(web_process(nursery, options, network))
                await nursery.start(witness_c.run, web_c, sender.recipient)
                web_b.broker.shutdown()
            for _ in range(DURING):
                await sender.send(web_c)
            await eventually(
                lambda: len(witness_c.balances) == DURING, "web C delivers the transfers"
            )
            async with trio.open_nursery() as clients:
                for follower in followers:
                    code, cursor = follower.closes[-1]
                    assert code == 1012
                    # The drain's cursor is the last notification's: nothing sent was lost.
                    assert cursor == follower.cursor
                    follower.cursor = cursor
                    await clients.start(follower.run, web_c, None)
                for _ in range(AFTER):
                    await sender.send(web_c)
                await seen_by_all(web_c, sender, [*followers, witness_c])
                clients.cancel_scope.cancel()
            nursery.cancel_scope.cancel()

    balance = sender.balances[-1]
    for follower in followers:
        who = f"client {follower.index} ({'session' if follower.session else 'direct'})"
        assert [r["complete"] for r in follower.resumed] == [True, True], (who, follower.resumed)
        assert follower.balances == sender.balances, who
        slots = follower.slots
        assert slots == list(range(slots[0], slots[0] + len(slots))), (who, slots)
        # The transfers made meanwhile (and their slots) were replayed, not only sent live.
        assert [r["replayed"] >= DURING for r in follower.resumed] == [True, True], who
    total = BEFORE + 2 * (DURING + AFTER)
    assert witness.balances == sender.balances[: BEFORE + DURING + AFTER]
    assert witness_c.balances == sender.balances[BEFORE + DURING + AFTER :]
    assert balance == sum(BASE + i for i in range(total))
