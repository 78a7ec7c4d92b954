"""Session clients that count every block: each opens a CAIP-25 session on a web process, subscribes
to ``newHeads`` and keeps every head it receives (arrival time, number, hash, parent hash). When its
connection drops it reconnects with ``?resume=<cursor>`` (the close reason after a 1012, else the
last cursor it saw), to the other web process first, and keeps counting; a resume that says
``complete: false`` starts a fresh subscription and is a client error.

:func:`judge` compares what a client received with the upstream's chain: blocks lost (a block of the
final chain between the first and last height the client saw that never arrived), duplicated (the
same hash twice) and out of order (a head whose parent the client never saw, and not the first one).

A client asked to :meth:`Client.check_session` asks, on its live connection, ``wallet_getSession``
(its scopes must be there) and ``wallet_invokeMethod eth_blockNumber`` (it must answer): whether
a fault lost its session.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import quote

import trio

from tests.redis.dapp_tabs import SCOPES
from tests.redis.test_resume_processes import DEV, _Message, _read
from tests.support.rawws import RawWebSocket

Head = tuple[float, int, str, str]
"""(arrival time, number, hash, parent hash)."""

_ids = itertools.count(1)


@dataclass
class Client:
    index: int
    ports: list[int]
    origin_prefix: str = "dapp"
    heads: list[Head] = field(default_factory=list)
    cursor: str | None = None
    sub_id: str | None = None
    errors: list[str] = field(default_factory=list)
    closes: list[tuple[int | None, str]] = field(default_factory=list)
    resumes: list[tuple[int | None, bool | None]] = field(default_factory=list)
    failed_attempts: int = 0
    connected: bool = False
    resubscribe: bool = False
    churning: bool = False  # this client closed its connection itself (the soak's churn)
    unexpected_closes: int = 0  # closed by the server or dropped, not by the churn
    conn: RawWebSocket | None = None
    #: Session checks asked for (:meth:`check_session`) and done; the sessions found lost (no
    #: scopes) and the invokes that failed.
    checks_asked: int = 0
    checks_done: int = 0
    checks_unanswered: int = 0
    sessions_lost: int = 0
    invokes_failed: int = 0

    @property
    def origin(self) -> str:
        return f"https://{self.origin_prefix}{self.index}.example"

    # -- connecting -----------------------------------------------------------------------------

    async def _receive(self, conn: RawWebSocket) -> tuple[Any, tuple[int | None, str] | None]:
        """The next message (decoded as this kind of client reads it), or (None, (close code,
        reason)) once the connection ended."""
        return await _read(conn)

    async def _call(self, conn: RawWebSocket, method: str, params: Any) -> Any:
        """One call; notifications before its reply are handled as usual."""
        await conn.call({"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params})
        while True:
            message, closed = await self._receive(conn)
            if closed is not None:
                raise ConnectionError(f"closed during {method}: {closed}")
            assert message is not None
            if message.method is None:
                if message.error is not None:
                    raise ConnectionError(f"{method}: {message.error}")
                return message.result
            self._notified(message)

    async def _subscribe(self, conn: RawWebSocket) -> None:
        await self._call(conn, "wallet_createSession", {"optionalScopes": SCOPES})
        subscribed = await self._call(
            conn,
            "wallet_invokeMethod",
            {"scope": DEV, "request": {"method": "eth_subscribe", "params": ["newHeads"]}},
        )
        self.sub_id = subscribed["result"]["result"]

    async def _open(self, port: int, resume: str | None) -> RawWebSocket:
        path = "/ws/v3/dev" + (f"?resume={quote(resume)}" if resume else "")
        conn = await RawWebSocket.connect(port, path, origin=self.origin)
        if resume is None:
            try:
                await self._subscribe(conn)
            except BaseException:
                conn.close()
                raise
        return conn

    async def connect(self) -> None:
        self.conn = await self._open(self.ports[self.index % len(self.ports)], None)
        self.connected = True

    async def _reconnect(self, resume: str | None) -> RawWebSocket:
        """Resume on the other web process first, then any, until one answers."""
        first = self.index % len(self.ports)
        order = self.ports[first + 1 :] + self.ports[: first + 1]
        for attempt in itertools.count():
            port = order[attempt % len(order)]
            try:
                return await self._open(port, resume)
            except (OSError, ConnectionError):
                self.failed_attempts += 1
                await trio.sleep(min(0.1 * (attempt + 1), 1.0))
        raise AssertionError("unreachable")

    # -- checking the session -------------------------------------------------------------------

    #: The session's scope, and the method a check invokes on it (its answer checked below).
    scope: ClassVar[str] = DEV
    check_method: ClassVar[str] = "eth_blockNumber"

    @staticmethod
    def _check_answer(result: Any) -> None:
        int(result, 16)  # a block number

    def check_session(self) -> None:
        """Ask for a session check, done by :meth:`follow` after the next message it reads."""
        self.checks_asked += 1

    async def _check_session(self, conn: RawWebSocket) -> None:
        try:
            session = await self._call(conn, "wallet_getSession", {})
            if self.scope not in (session or {}).get("sessionScopes", {}):
                self.sessions_lost += 1
                self.errors.append(f"session lost: {session}")
        except ConnectionError as exc:
            if str(exc).startswith("closed during"):
                raise  # no answer: not a check (the caller notes it)
            self.sessions_lost += 1
            self.errors.append(f"wallet_getSession: {exc}")
        try:
            invoked = await self._call(
                conn,
                "wallet_invokeMethod",
                {"scope": self.scope, "request": {"method": self.check_method, "params": []}},
            )
            self._check_answer(invoked["result"]["result"])
        except (ConnectionError, KeyError, TypeError, ValueError) as exc:
            if str(exc).startswith("closed during"):
                raise
            self.invokes_failed += 1
            self.errors.append(f"wallet_invokeMethod failed: {exc}")
        self.checks_done = self.checks_asked

    # -- following ------------------------------------------------------------------------------

    def _notified(self, message: _Message) -> None:
        params = message.params
        if message.method == "scopecast_resumed":
            assert params is not None
            self.resumes.append((params.replayed, params.complete))
            if params.complete is not True:
                self.errors.append(f"resume incomplete: {params.replayed}")
                self.resubscribe = True
            return
        if message.method != "wallet_notify" or params is None or params.notification is None:
            return  # wallet_sessionChanged and the like
        self._wallet_notified(params.notification)
        self.cursor = params.cursor

    def _wallet_notified(self, notification: Any) -> None:
        """One ``wallet_notify``'s notification (a head here; a subclass reads its own)."""
        inner = notification.params
        if inner.subscription != self.sub_id:
            self.errors.append(f"a head of subscription {inner.subscription}, not {self.sub_id}")
        head = inner.result
        self.heads.append((time.monotonic(), int(head.number, 16), head.hash, head.parentHash))

    async def follow(self) -> None:
        """Read (and reconnect) until cancelled; :meth:`connect` first."""
        try:
            while True:
                assert self.conn is not None
                message, closed = await self._receive(self.conn)
                if closed is None:
                    assert message is not None
                    if message.method is None and message.error is not None:
                        self.errors.append(f"error reply: {message.error}")
                    self._notified(message)
                    if self.checks_done < self.checks_asked:
                        try:
                            await self._check_session(self.conn)
                        except OSError as exc:  # dropped meanwhile: the loop below reconnects
                            self.checks_done = self.checks_asked
                            self.checks_unanswered += 1
                            self.errors.append(f"session check: {exc}")
                    if self.resubscribe:  # a fresh connection, without subscriptions
                        self.resubscribe = False
                        self.cursor = None  # the old one could not be resumed
                        try:
                            await self._subscribe(self.conn)
                        except (OSError, ConnectionError) as exc:
                            self.errors.append(f"subscribing again failed: {exc}")
                            self.conn.close()
                            self.conn = await self._reconnect(None)
                    continue
                self.connected = False
                self.closes.append(closed)
                self.conn.close()
                code, reason = closed
                if self.churning:
                    self.churning = False
                else:
                    self.unexpected_closes += 1
                    if code not in (None, 1006, 1012):
                        self.errors.append(f"closed with {code}")
                cursor = reason if code == 1012 and reason else self.cursor
                if cursor is None:
                    self.errors.append("dropped before any cursor: subscribing afresh")
                self.conn = await self._reconnect(cursor)
                self.connected = True
        finally:
            if self.conn is not None:
                self.conn.close()


async def until(predicate: Callable[[], bool], interval: float = 0.1) -> None:
    """Poll ``predicate``: what clients receive is plain data, with no event to wait on."""
    while not predicate():  # noqa: ASYNC110
        await trio.sleep(interval)


async def connect_all(clients: list[Client], window: int = 64) -> None:
    """Open every client's connection, at most ``window`` handshakes at a time."""
    limit = trio.CapacityLimiter(window)

    async def one(client: Client) -> None:
        async with limit:
            await client.connect()

    async with trio.open_nursery() as nursery:
        for client in clients:
            nursery.start_soon(one, client)


@dataclass
class Verdict:
    lost: int = 0
    duplicated: int = 0
    out_of_order: int = 0
    replaced: int = 0  # heads at a height already seen, after their parent: a reorg, as it should


def judge(heads: list[Head], anchor: Head | None, chain: dict[int, str]) -> Verdict:
    """What ``heads`` (received after ``anchor``, the last head before the fault) lack, repeat or
    receive out of order, against ``chain`` (number: hash of the upstream's final chain)."""
    verdict = Verdict()
    seen: set[str] = set()
    previous = anchor
    if anchor is not None:
        seen.add(anchor[2])
    for head in heads:
        _, number, hash_, parent = head
        if hash_ in seen:
            verdict.duplicated += 1
            continue
        if previous is not None and number <= previous[1]:
            if parent in seen:
                verdict.replaced += 1
            else:
                verdict.out_of_order += 1
        seen.add(hash_)
        previous = head
    received = {h[2] for h in heads}
    canonical = [h for h in heads if chain.get(h[1]) == h[2]]
    if canonical:
        low = anchor[1] + 1 if anchor is not None else canonical[0][1]
        high = max(h[1] for h in canonical)
        verdict.lost = sum(
            1 for n in range(low, high + 1) if n in chain and chain[n] not in received
        )
    return verdict
