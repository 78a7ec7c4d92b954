"""The Solana section: a fleet in front of two Solana nodes, faults injected while session clients
count every slot and every change of an account receiving transfers.

The deployment (real processes on 127.0.0.1): two ``scopecast serve --block-time 0.4`` nodes (their
``solana`` dev networks play the Solana nodes: a slot every 400 ms, with demo transfers between dev
accounts), a ``redis-server``, two workers (the leader's ``solana-upstream`` adapter follows the
first healthy node and publishes slots and account changes on the chain's Redis Stream) and two web
processes, all from one config listing both nodes as the network's ``upstreams``. A sender sends a
transfer to a fresh account (the *recipient*) every second, the same amount to both nodes (each
signed on its node's own blockhash): both chains hold the same balances of the recipient.

Session clients (:class:`SolanaClient`, the EVM soak's :class:`soak.clients.Client` reading Solana
notifications) each open a CAIP-25 session on a web process and hold ``slotSubscribe`` and
``accountSubscribe`` (the recipient) through ``wallet_invokeMethod``; dropped, they resume with
``?resume=<cursor>`` on the other web process, as the EVM ones do.

Faults, each repeated at random moments (:data:`SOLANA_FAULTS`): kill -9 of the leading worker, of a
web process, Redis restarted, the followed node frozen (SIGSTOP, then SIGCONT) and killed (kill -9,
then started again). The sender pauses while a node is touched, so that no transfer reaches one
chain and not the other. Two dev chains are two ledgers: a frozen node does not catch up with the
cluster on SIGCONT, and a killed one starts again from slot 0 (the Solana dev chain keeps no state
on disk), so after such a fault the harness does what a real node's catch-up does: it brings the
node to the other's slot (``scopecast_advanceSlots``), and gives a restarted node the recipient's
balance back (one transfer, in a slot below any the broker reported).

Judged after each run (:func:`judge_slots`, :func:`judge_changes`) against the nodes themselves:
*slots* against their ``getBlocks`` (a slot with a block on either node between the client's last
slot before the fault and its highest after it that never arrived is lost; the same slot twice is
duplicated; a lower slot than the previous one out of order); *account changes* against the
sender's transactions as the nodes executed them (``getTransaction``: the recipient's balance after
the last of them in each slot is one change; lost, duplicated and out of order as for slots, by
balance, which only grows).
"""

from __future__ import annotations

import functools
import random
import struct
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import msgspec
import trio

from adapters.solana import dev_chain_id
from bench.loadgen import percentile
from soak.clients import Client, connect_all, until
from soak.deploy import Deployment, fd_count
from soak.settings import Settings
from tests.adapters.solana_upstream.nodes import (
    FAST,
    NETWORK,
    entry,
    fresh_address,
    node_result,
    signed_transfer,
)
from tests.redis.test_deployment import Upstream
from tests.redis.worker_process import WorkerProcess
from tests.support.processes import ScopecastProcess, start_scopecast
from tests.support.rawws import RawWebSocket
from tests.support.redis_server import RedisServer

CHAIN = dev_chain_id()
#: What a worker logs once it leads the Solana chain or stands by.
WORKER_READY = "leading; publishing|standing by"
#: The network's options: failures noticed within seconds (the tests' quick settings), but a call
#: may take 5 s and a node is benched after 3 failures in a row: on a loaded machine a burst of
#: session checks (a ``getSlot`` from every client at once) otherwise benches both nodes.
UPSTREAM: dict[str, Any] = {**FAST, "request_timeout": 5.0, "bench_after": 3}
#: The first transfer funds the recipient above the rent-exempt minimum; each is of its own amount.
BASE = 1_000_000

# -- what a client reads of a message (msgspec skips the rest) -------------------------------------


class _Context(msgspec.Struct):
    slot: int


class _Account(msgspec.Struct):
    lamports: int


class _Result(msgspec.Struct):
    slot: int | None = None  # slotNotification
    context: _Context | None = None  # accountNotification
    value: _Account | None = None


class _Inner(msgspec.Struct):
    subscription: int
    result: _Result


class _Notification(msgspec.Struct):
    method: str
    params: _Inner


class _Params(msgspec.Struct):
    notification: _Notification | None = None
    cursor: str | None = None
    replayed: int | None = None
    complete: bool | None = None


class _Message(msgspec.Struct):
    method: str | None = None
    params: _Params | None = None
    result: Any = None
    error: Any = None


_decode = msgspec.json.Decoder(_Message).decode

Slot = tuple[float, int]
"""(arrival time, slot)."""
Change = tuple[float, int, int]
"""(arrival time, slot, the recipient's lamports)."""


@dataclass
class SolanaClient(Client):
    """A session client holding ``slotSubscribe`` and ``accountSubscribe`` of ``recipient``."""

    recipient: str = ""
    accounts: bool = True
    slots: list[Slot] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    slot_sub: int | None = None
    account_sub: int | None = None

    scope: ClassVar[str] = CHAIN
    check_method: ClassVar[str] = "getSlot"

    @staticmethod
    def _check_answer(result: Any) -> None:
        if not isinstance(result, int):
            raise TypeError(f"getSlot answered {result!r}")

    async def _receive(self, conn: RawWebSocket) -> tuple[Any, tuple[int | None, str] | None]:
        while True:
            try:
                frame = await conn.frame()
            except OSError:
                return None, (None, "")
            if frame is None:
                return None, (None, "")
            opcode, payload = frame
            if opcode == 0x8:
                code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
                return None, (code, payload[2:].decode())
            if opcode == 0x1:
                return _decode(payload), None
            if opcode == 0x9:
                await conn.send_text(payload, opcode=0xA)

    async def _invoke(self, conn: RawWebSocket, method: str, params: list[Any]) -> Any:
        request = {"scope": CHAIN, "request": {"method": method, "params": params}}
        return (await self._call(conn, "wallet_invokeMethod", request))["result"]["result"]

    async def _subscribe(self, conn: RawWebSocket) -> None:
        methods = ["slotSubscribe", "accountSubscribe", "getSlot"]
        notifications = ["slotNotification", "accountNotification"]
        scopes = {CHAIN: {"methods": methods, "notifications": notifications}}
        await self._call(conn, "wallet_createSession", {"optionalScopes": scopes})
        self.slot_sub = await self._invoke(conn, "slotSubscribe", [])
        if self.accounts:
            watch = [self.recipient, {"encoding": "base64", "commitment": "confirmed"}]
            self.account_sub = await self._invoke(conn, "accountSubscribe", watch)

    def _wallet_notified(self, notification: Any) -> None:
        inner = notification.params
        now = time.monotonic()
        if notification.method == "slotNotification" and inner.result.slot is not None:
            if inner.subscription != self.slot_sub:
                self.errors.append(f"a slot of subscription {inner.subscription}")
            self.slots.append((now, inner.result.slot))
        elif notification.method == "accountNotification":
            if inner.subscription != self.account_sub:
                self.errors.append(f"an account change of subscription {inner.subscription}")
            context, value = inner.result.context, inner.result.value
            if context is None or value is None:
                self.errors.append("an account change without its slot or value")
            else:
                self.changes.append((now, context.slot, value.lamports))


# -- the nodes and the sender ----------------------------------------------------------------------


@dataclass
class Transfers:
    """Transfers to the recipient every ``every`` seconds, the same on every node; hold
    :attr:`lock` to pause them (none is under way while it is held)."""

    nodes: list[ScopecastProcess]
    recipient: str
    #: Each transfer: its lamports and its signature on each node.
    sent: list[tuple[int, list[str]]] = field(default_factory=list)
    balance: int = 0
    errors: list[str] = field(default_factory=list)
    lock: trio.Lock = field(default_factory=trio.Lock)
    #: getTransaction answers, by (node port, signature): a confirmed transaction does not change.
    _found: dict[tuple[int, str], tuple[int, int] | None] = field(default_factory=dict)

    async def send(self) -> None:
        async with self.lock:
            lamports = BASE + len(self.sent)
            signatures = []
            for node in self.nodes:
                url = node.http_url(network=NETWORK)
                signature, encoded = await signed_transfer(url, self.recipient, lamports)
                await node_result(node, "sendTransaction", encoded, {"encoding": "base64"})
                signatures.append(signature)
            self.balance += lamports
            self.sent.append((lamports, signatures))

    async def run(self, every: float) -> None:
        while True:
            try:
                await self.send()
            except Exception as exc:  # a send that failed is reported, and the chains compared
                self.errors.append(repr(exc))
            await trio.sleep(every)

    async def changes_on(self, index: int, node: ScopecastProcess) -> dict[int, int]:
        """The recipient's balance after the last transfer of each slot, as ``node`` executed
        the transfers (those it has: a node started again has none of the earlier ones)."""
        by_slot: dict[int, int] = {}
        for _lamports, signatures in self.sent:
            key = (node.port or 0, signatures[index])
            if key not in self._found:
                found = await node_result(
                    node,
                    "getTransaction",
                    signatures[index],
                    {"encoding": "json", "commitment": "confirmed"},
                )
                if found is None:
                    continue  # not confirmed yet (asked again next time), or not on this node
                keys = found["transaction"]["message"]["accountKeys"]
                after = found["meta"]["postBalances"][keys.index(self.recipient)]
                self._found[key] = (found["slot"], after)
            slot_balance = self._found[key]
            if slot_balance is not None:
                slot, after = slot_balance
                by_slot[slot] = max(after, by_slot.get(slot, 0))
        return by_slot


@dataclass
class SolanaDeployment(Deployment):
    nodes: list[ScopecastProcess] = field(default_factory=list)
    transfers: Transfers | None = None
    #: The nodes stopped with SIGSTOP now (they would not answer).
    frozen: set[int] = field(default_factory=set)
    #: Workers killed by a fault (their output is kept with the others').
    killed: list[WorkerProcess] = field(default_factory=list)

    async def slot_of(self, node: ScopecastProcess) -> int:
        return int(await node_result(node, "getSlot"))

    async def live_slot(self) -> int:
        """The lowest slot of the running nodes (what every client must reach)."""
        live = [n for n in self.nodes if n.running and n.pid not in self.frozen]
        return min([await self.slot_of(n) for n in live])

    async def level(self, node: ScopecastProcess) -> None:
        """Bring ``node`` to the other nodes' highest slot and one more (a node's catch-up)."""
        others = [await self.slot_of(n) for n in self.nodes if n is not node]
        behind = max(others) + 1 - await self.slot_of(node)
        if behind > 0:
            await node_result(node, "scopecast_advanceSlots", behind)

    async def blocks(self, low: int, high: int) -> set[int]:
        """Slots with a block on any running node, ``low`` to ``high``."""
        found: set[int] = set()
        for node in self.nodes:
            if node.running and high >= low:
                found.update(await node_result(node, "getBlocks", low, high))
        return found


async def _started(
    starts: list[Callable[[], Awaitable[ScopecastProcess]]],
) -> list[ScopecastProcess]:
    """Processes started side by side, in the order of ``starts``."""
    found: list[ScopecastProcess | None] = [None] * len(starts)

    async def one(index: int) -> None:
        found[index] = await starts[index]()

    async with trio.open_nursery() as starting:
        for index in range(len(starts)):
            starting.start_soon(one, index)
    return [process for process in found if process is not None]


def _keep_logs(d: SolanaDeployment) -> None:
    """What the workers said (every line) and the last lines of the other processes, in the
    run's folder: which node the leader followed, and the slots it filled, explain a verdict."""
    for worker in [*d.killed, *d.workers]:
        (d.folder / f"worker-{worker.pid}.log").write_text("\n".join(worker.lines) + "\n")
    for name, process in [
        *((f"node{i}", n) for i, n in enumerate(d.nodes)),
        *((f"web{i}", w) for i, w in enumerate(d.webs)),
    ]:
        (d.folder / f"{name}-{process.port}.log").write_text(process.output_tail(200) + "\n")


@asynccontextmanager
async def solana_deployment(folder: Path, s: Settings) -> AsyncIterator[SolanaDeployment]:
    folder.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 - once, before anything runs
    redis = RedisServer()
    await trio.to_thread.run_sync(redis.start)
    try:
        async with trio.open_nursery() as nursery:
            # generous: on a shared machine under load, starting seven processes takes minutes
            with trio.fail_after(600):
                nodes = await _started(
                    [
                        functools.partial(
                            start_scopecast, nursery, "--block-time", s.solana_slot_time
                        )
                        for _ in range(2)
                    ]
                )
                config = folder / "scopecast.toml"
                upstreams = ", ".join(
                    f'{{http = "{e["http"]}", ws = "{e["ws"]}"}}' for e in map(entry, nodes)
                )
                options = "".join(f"{key} = {value}\n" for key, value in UPSTREAM.items())
                config.write_text(
                    f'[networks.{NETWORK}]\nchain = "{CHAIN}"\nupstreams = [{upstreams}]\n{options}'
                )
                found = SolanaDeployment(
                    folder,
                    Upstream(nursery, config, nodes[0]),
                    redis,
                    chain=CHAIN,
                    worker_ready=WORKER_READY,
                    nodes=nodes,
                )
                for _ in range(2):  # one at a time: the first one leads
                    await found.add_worker()
                await _started([found.add_web, found.add_web])
                found.transfers = Transfers(nodes, fresh_address())
                nursery.start_soon(found.transfers.run, s.solana_transfer_every)
            try:
                yield found
            finally:
                _keep_logs(found)
                for process in [*found.webs, *nodes]:
                    if process.pid is not None and process.running:
                        found.thaw(process.pid)
                nursery.cancel_scope.cancel()
    finally:
        redis.close()


# -- faults ----------------------------------------------------------------------------------------

SolanaInject = Callable[
    [SolanaDeployment, Settings], Awaitable[Callable[[], Awaitable[None]] | None]
]


async def kill_leading_worker(d: SolanaDeployment, s: Settings) -> Callable[[], Awaitable[None]]:
    leader = await d.leader()
    await leader.kill()
    d.workers.remove(leader)
    d.killed.append(leader)

    async def repair() -> None:
        await d.add_worker()  # a new standby

    return repair


async def kill_web(d: SolanaDeployment, s: Settings) -> Callable[[], Awaitable[None]]:
    web = max(d.webs, key=lambda w: fd_count(w.pid) if w.pid else 0)  # the one with more clients
    await web.kill()
    return web.start  # on the same port


async def restart_redis(d: SolanaDeployment, s: Settings) -> None:
    await d.stop_redis()
    await d.start_redis()


async def freeze_upstream(d: SolanaDeployment, s: Settings) -> None:
    """SIGSTOP of the first node (the one followed while it is healthy), SIGCONT after
    ``freeze_seconds``; then it is brought to the other's slot (the catch-up a real node does)."""
    node = d.nodes[0]
    assert d.transfers is not None
    assert node.pid is not None
    async with d.transfers.lock:
        d.freeze(node.pid)
        d.frozen.add(node.pid)
        try:
            await trio.sleep(s.freeze_seconds)
        finally:
            d.thaw(node.pid)
            d.frozen.discard(node.pid)
        await d.level(node)


async def kill_upstream(d: SolanaDeployment, s: Settings) -> None:
    """kill -9 of the first node, started again (from slot 0: the dev chain keeps nothing on
    disk), given the recipient's balance back and brought to the other's slot."""
    node = d.nodes[0]
    assert d.transfers is not None
    async with d.transfers.lock:
        await node.kill()
        await trio.sleep(s.freeze_seconds)  # the broker follows the other node meanwhile
        await node.start()
        url = node.http_url(network=NETWORK)
        _, encoded = await signed_transfer(url, d.transfers.recipient, d.transfers.balance)
        await node_result(node, "sendTransaction", encoded, {"encoding": "base64"})
        await d.level(node)


@dataclass
class SolanaFault:
    name: str
    label: str
    inject: SolanaInject


SOLANA_FAULTS = [
    SolanaFault("solana_kill_leading_worker", "kill -9 of the leading worker", kill_leading_worker),
    SolanaFault("solana_kill_web", "kill -9 of a web process", kill_web),
    SolanaFault("solana_restart_redis", "Redis SHUTDOWN NOSAVE, started again", restart_redis),
    SolanaFault(
        "solana_freeze_upstream",
        "the followed node SIGSTOP, then SIGCONT (two upstreams: failover)",
        freeze_upstream,
    ),
    SolanaFault(
        "solana_kill_upstream",
        "the followed node kill -9, started again (two upstreams: failover)",
        kill_upstream,
    ),
]


# -- judging ---------------------------------------------------------------------------------------


@dataclass
class Verdict:
    lost: int = 0
    duplicated: int = 0
    out_of_order: int = 0

    def add(self, other: Verdict) -> None:
        self.lost += other.lost
        self.duplicated += other.duplicated
        self.out_of_order += other.out_of_order


def judge_slots(slots: Iterable[int], anchor: int | None, blocks: set[int]) -> Verdict:
    """What ``slots`` (received after ``anchor``, the last slot before the fault) lack, repeat
    or receive out of order, against ``blocks`` (slots with a block on the nodes)."""
    verdict = Verdict()
    seen: set[int] = set()
    previous = anchor
    for slot in slots:
        if slot in seen or (anchor is not None and slot == anchor):
            verdict.duplicated += 1
            continue
        if previous is not None and slot < previous:
            verdict.out_of_order += 1
        seen.add(slot)
        previous = slot if previous is None else max(previous, slot)
    if seen:
        low = anchor + 1 if anchor is not None else min(seen)
        verdict.lost = sum(1 for n in blocks if low <= n <= max(seen) and n not in seen)
    return verdict


def judge_changes(
    changes: Iterable[tuple[int, int]], anchor: int | None, expected: set[int], high: int
) -> Verdict:
    """What ``changes`` ((slot, lamports), received after ``anchor``, the last balance before the
    fault) lack, repeat or receive out of order, against ``expected`` (the balances the nodes
    agree the recipient had after a slot) up to the balance ``high``."""
    verdict = Verdict()
    seen: set[int] = set()
    previous = anchor
    for _slot, lamports in changes:
        if lamports in seen or (anchor is not None and lamports == anchor):
            verdict.duplicated += 1
            continue
        if previous is not None and lamports < previous:
            verdict.out_of_order += 1
        seen.add(lamports)
        previous = lamports if previous is None else max(previous, lamports)
    low = anchor if anchor is not None else 0
    verdict.lost = sum(1 for b in expected if low < b <= high and b not in seen)
    return verdict


async def agreed_balances(d: SolanaDeployment) -> set[int]:
    """The recipient's balances after a slot, on every node that has the transfers (two
    transfers may share a slot on one node and not on the other: only what all agree on)."""
    assert d.transfers is not None
    found: list[set[int]] = []
    for index, node in enumerate(d.nodes):
        if node.running:
            by_slot = await d.transfers.changes_on(index, node)
            if by_slot:
                found.append(set(by_slot.values()))
    return set.intersection(*found) if found else set()


# -- a fault's runs --------------------------------------------------------------------------------


def _recovered(client: SolanaClient, mark: int, since: float, slot: int) -> Slot | None:
    return next((x for x in client.slots[mark:] if x[0] >= since and x[1] >= slot), None)


def _all_recovered(
    clients: list[SolanaClient], marks: list[tuple[int, int]], since: float, slot: int
) -> bool:
    return all(_recovered(c, m, since, slot) for c, (m, _) in zip(clients, marks, strict=True))


def _all_reached(clients: list[SolanaClient], lamports: int) -> bool:
    """Every client has had a change to ``lamports`` or more."""
    return all(c.changes and c.changes[-1][2] >= lamports for c in clients)


async def run_solana_fault(
    d: SolanaDeployment,
    fault: SolanaFault,
    s: Settings,
    log: Callable[[str], None],
    accounts: bool,
) -> dict[str, Any]:
    assert d.transfers is not None
    clients = [
        SolanaClient(
            i,
            d.ports,
            origin_prefix=f"{fault.name}-",
            recipient=d.transfers.recipient,
            accounts=accounts,
        )
        for i in range(s.solana_clients)
    ]
    await connect_all(clients)
    slots, changes = Verdict(), Verdict()
    recoveries: list[float] = []
    not_recovered = changes_behind = 0
    failures: list[str] = []
    examples: list[str] = []  # what one client missed, run by run
    async with trio.open_nursery() as nursery:
        for client in clients:
            nursery.start_soon(client.follow)
        await until(lambda: all(len(c.slots) >= 2 for c in clients))
        for run in range(s.fault_runs):
            await trio.sleep(random.uniform(*s.fault_pause))
            marks = [(len(c.slots), len(c.changes)) for c in clients]
            try:
                # generous: a node started again on a loaded machine takes a minute or more
                with trio.fail_after(s.freeze_seconds + 240):
                    repair = await fault.inject(d, s)
            except Exception as exc:  # a fault the harness could not inject is reported
                failures.append(f"run {run}: {exc!r}")
                log(f"  {fault.name} run {run}: could not inject: {exc!r}")
                continue
            ended = time.monotonic()
            target = await d.live_slot()
            with trio.move_on_after(s.recover_timeout):
                await until(functools.partial(_all_recovered, clients, marks, ended, target))
            for client, (mark, _) in zip(clients, marks, strict=True):
                first = _recovered(client, mark, ended, target)
                if first is None:
                    not_recovered += 1
                else:
                    recoveries.append(first[0] - ended)
            for client in clients:
                client.check_session()
            async with d.transfers.lock:  # no transfer under way: the last balance is final
                high = d.transfers.balance
                await trio.sleep(3 * float(s.solana_slot_time))  # its slot closes
                if accounts:
                    with trio.move_on_after(s.recover_timeout):
                        await until(functools.partial(_all_reached, clients, high))
                with trio.move_on_after(s.recover_timeout):
                    await until(lambda: all(c.checks_done == c.checks_asked for c in clients))
                expected = await agreed_balances(d)
                low = min((c.slots[m - 1][1] for c, (m, _) in zip(clients, marks, strict=True)))
                top = max(c.slots[-1][1] for c in clients)
                blocks = await d.blocks(low + 1, top)
            first_client, (first_mark, _) = clients[0], marks[0]
            received = {x[1] for x in first_client.slots[first_mark:]}
            anchor_slot = first_client.slots[first_mark - 1][1]
            missing = sorted(
                n
                for n in blocks
                if anchor_slot < n <= max(received, default=0) and n not in received
            )
            example = f"client 0 missed slots {missing[:20]}" if missing else "client 0 missed none"
            if missing:
                examples.append(f"run {run + 1}: {example}")
            for client, (mark, change_mark) in zip(clients, marks, strict=True):
                slots.add(
                    judge_slots(
                        [x[1] for x in client.slots[mark:]], client.slots[mark - 1][1], blocks
                    )
                )
                anchor = client.changes[change_mark - 1][2] if change_mark else None
                got = [(x[1], x[2]) for x in client.changes[change_mark:]]
                changes.add(judge_changes(got, anchor, expected, high))
                if not got or got[-1][1] < high:
                    changes_behind += 1
            log(
                f"  {fault.name} run {run + 1}/{s.fault_runs}: {example}; so far slots {slots}, account changes "
                f"{changes} (clients short of the last balance: {changes_behind}), "
                f"not recovered {not_recovered}"
            )
            if repair is not None:
                with trio.fail_after(120):
                    await repair()
        nursery.cancel_scope.cancel()
    errors = [e for c in clients for e in c.errors]
    return {
        "name": fault.name,
        "label": fault.label,
        "runs": s.fault_runs - len(failures),
        "clients": len(clients),
        "slots": vars(slots),
        "account_changes": vars(changes) if accounts else None,
        "account_changes_received": sum(len(c.changes) for c in clients) if accounts else None,
        "clients_short_of_last_balance": changes_behind if accounts else None,
        "recover_p50_s": _round(percentile(recoveries, 0.5)),
        "recover_p99_s": _round(percentile(recoveries, 0.99)),
        "not_recovered": not_recovered,
        "client_errors": len(errors),
        "client_error_kinds": sorted({e.split(":")[0] for e in errors}),
        "client_error_examples": sorted(set(errors))[:5],
        "reconnects": sum(len(c.closes) for c in clients),
        "session_checks": sum(c.checks_done - c.checks_unanswered for c in clients),
        "sessions_lost": sum(c.sessions_lost for c in clients),
        "invokes_failed": sum(c.invokes_failed for c in clients),
        "transfer_errors": list(d.transfers.errors),
        "missed_examples": examples,
        "injection_failures": failures,
    }


def _round(value: float) -> float | None:
    return None if value != value else round(value, 3)  # NaN: nothing measured


def selected(s: Settings) -> list[SolanaFault]:
    return [f for f in SOLANA_FAULTS if not s.only_faults or f.name in s.only_faults]


async def run_solana(
    folder: Path,
    s: Settings,
    log: Callable[[str], None],
    done: Callable[[dict[str, Any]], None],
) -> None:
    """Every selected fault in one Solana deployment; ``done(figures)`` after each."""
    async with solana_deployment(folder, s) as d:
        for fault in selected(s):
            log(f"solana fault: {fault.label} ({s.fault_runs} runs, {s.solana_clients} clients)")
            done(await run_solana_fault(d, fault, s, log, s.solana_accounts))
