"""The EVM profile's ``transaction`` subscription: ``eth_subscribe ["transaction", {"hash"}]``
follows one transaction's life and notifies each step, as ``{"hash", "status", "blockNumber",
"blockHash", "depth", "receiptStatus"}`` (members that do not apply are null)::

    pending ──> included ──> confirmed (depth 1, 6, 12) ──> finalized   (the end)
       │           │  ^
       │           v  │ back in a block
       │         removed (a reorganisation took its block away)
       v
    dropped: unknown to the node for ``drop_after`` seconds, never mined (the end)

``depth`` is the number of blocks built on the transaction's block (0 when included).
``finalized`` comes when the chain's ``finalized`` block reaches the transaction's block, and
not before the deepest confirmation (a dev chain calls its head finalized).

:class:`TransactionLife` is the sans-io core: observations in, statuses out. The node is asked by
:class:`TransactionFollower` (receipt, then the transaction when there is no receipt, and the
finalized block) at every new head and every ``interval`` seconds, once per hash however many
subscriptions follow it; each subscription has a life of its own, so one that begins late still
hears every step from where the transaction stands.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec
import trio

from adapters.base import ChainCall, Follower, SubscriptionIndex
from adapters.evm.blocks import HeadEvent
from schemas.errors import InvalidParams, RpcError

TRANSACTION: Final = "transaction"
DEFAULT_DEPTHS: Final = (1, 6, 12)
#: Seconds a transaction may be unknown to the node before it counts as dropped.
DEFAULT_DROP_AFTER: Final = 600.0
#: Seconds between two looks when no head comes (a pending transaction's news).
DEFAULT_INTERVAL: Final = 2.0
_HASH: Final = re.compile(r"\A0x[0-9a-fA-F]{64}\Z")
_encoder = msgspec.json.Encoder()


@dataclass(frozen=True, slots=True)
class Inclusion:
    """Where a receipt puts the transaction."""

    number: int
    hash: str
    status: int | None


@dataclass(frozen=True, slots=True)
class Observation:
    """What the node says at ``now``: its head, the receipt's block (None: no receipt), whether
    it knows the transaction unmined, and its finalized block number (None: not asked)."""

    now: float
    head: int
    inclusion: Inclusion | None
    in_pool: bool
    finalized: int | None = None


def status(
    tx_hash: str,
    name: str,
    inclusion: Inclusion | None = None,
    depth: int | None = None,
) -> dict[str, Any]:
    """One notification's ``result``."""
    return {
        "hash": tx_hash,
        "status": name,
        "blockNumber": hex(inclusion.number) if inclusion else None,
        "blockHash": inclusion.hash if inclusion else None,
        "depth": depth,
        "receiptStatus": (
            hex(inclusion.status) if inclusion and inclusion.status is not None else None
        ),
    }


@dataclass(slots=True)
class TransactionLife:
    """One subscription's view of one transaction (sans-io): :meth:`step` takes what the node
    says and answers the statuses to notify, in order; :attr:`ended` after ``finalized`` or
    ``dropped``."""

    tx_hash: str
    depths: tuple[int, ...] = DEFAULT_DEPTHS
    drop_after: float = DEFAULT_DROP_AFTER
    started: float | None = None
    ended: bool = False
    _pending: bool = False
    _included: Inclusion | None = None
    _confirmed: set[int] = field(default_factory=set)
    _unknown_since: float | None = None

    def step(self, seen: Observation) -> list[dict[str, Any]]:
        if self.ended:
            return []
        if self.started is None:
            self.started = seen.now
        out: list[dict[str, Any]] = []
        found = seen.inclusion
        was = self._included
        if was is not None and (found is None or found.hash != was.hash):
            out.append(status(self.tx_hash, "removed", was))
            self._included = None
            self._confirmed.clear()
        if found is None:
            if seen.in_pool:
                self._unknown_since = None
                if not self._pending or out:
                    out.append(status(self.tx_hash, "pending"))
                self._pending = True
                return out
            self._pending = False
            if self._unknown_since is None:
                self._unknown_since = seen.now
            if seen.now - self._unknown_since >= self.drop_after:
                out.append(status(self.tx_hash, "dropped"))
                self.ended = True
            return out
        self._unknown_since = None
        self._pending = False
        if self._included is None:
            self._included = found
            out.append(status(self.tx_hash, "included", found, 0))
        depth = max(seen.head - found.number, 0)
        for wanted in self.depths:
            if depth >= wanted and wanted not in self._confirmed:
                self._confirmed.add(wanted)
                out.append(status(self.tx_hash, "confirmed", found, wanted))
        deepest = max(self.depths, default=0)
        if seen.finalized is not None and seen.finalized >= found.number and depth >= deepest:
            out.append(status(self.tx_hash, "finalized", found, depth))
            self.ended = True
        return out


class TransactionMatcher:
    """A ``transaction`` subscription: its hash and its own :class:`TransactionLife` (every
    subscription is a key of its own: two that began at different times are at different
    steps)."""

    __slots__ = ("life", "tx_hash")

    def __init__(self, tx_hash: str, life: TransactionLife) -> None:
        self.tx_hash = tx_hash
        self.life = life

    kind = TRANSACTION

    @property
    def key(self) -> Hashable:
        return (TRANSACTION, id(self))

    @property
    def notification(self) -> str:
        return "eth_subscription"

    @property
    def one_shot(self) -> bool:
        return False

    def render(self, event: object) -> bytes | None:
        if isinstance(event, TransactionStatus) and event.matcher is self:
            return event.result
        return None


@dataclass(frozen=True, slots=True, eq=False)
class TransactionStatus:
    """A step of one subscription's transaction (an event of the EVM profile's own, made by
    :class:`TransactionFollower`, not by the chain's blocks); ``final``: the subscription ends
    with it."""

    matcher: TransactionMatcher
    result: bytes
    final: bool


def parse_transaction(
    params: list[Any],
    *,
    depths: tuple[int, ...] = DEFAULT_DEPTHS,
    drop_after: float = DEFAULT_DROP_AFTER,
) -> TransactionMatcher:
    """``["transaction", {"hash": "0x…"}]``, parsed."""
    options = params[1] if len(params) == 2 else None
    tx_hash = options.get("hash") if isinstance(options, dict) else None
    if not isinstance(tx_hash, str) or not _HASH.match(tx_hash):
        raise InvalidParams('invalid argument 1: transaction takes {"hash": "0x" + 64 hex digits}')
    tx_hash = tx_hash.lower()
    return TransactionMatcher(tx_hash, TransactionLife(tx_hash, depths, drop_after))


class TransactionFollower(Follower):
    """Asks the node about the transactions the ``transaction`` subscriptions of one chain
    follow, at every head and every ``interval`` seconds, and publishes their steps."""

    def __init__(
        self,
        call: ChainCall,
        *,
        interval: float = DEFAULT_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._call = call
        self._interval = interval
        self._clock = clock
        self._head = -1
        self._news = trio.Event()

    def on_event(self, event: object) -> None:
        if isinstance(event, HeadEvent):
            self._head = event.block.number  # lower after a reorganisation, as it should be
            self._news.set()

    async def serve(
        self,
        index: Callable[[], SubscriptionIndex[Any] | None],
        publish: Callable[[object], None],
    ) -> None:
        while True:
            with trio.move_on_after(self._interval):
                await self._news.wait()
            self._news = trio.Event()
            found = index()
            following = getattr(found, "transactions", None)
            if not following:
                continue
            try:
                await self._look(following, publish)
            except RpcError:
                continue  # the node failed this time: the next head or interval asks again

    async def _look(
        self, following: dict[str, dict[Any, TransactionMatcher]], publish: Callable[[object], None]
    ) -> None:
        head = self._head
        if head < 0:
            head = int(await self._call("eth_blockNumber", []), 16)
        finalized: int | None = None
        for tx_hash, subs in list(following.items()):
            matchers = list(subs.values())
            if not matchers:
                continue
            seen = await self._observe(tx_hash, head, finalized)
            if seen.inclusion is not None and finalized is None:
                finalized = await self._finalized()  # once per look
                seen = Observation(seen.now, head, seen.inclusion, seen.in_pool, finalized)
            for matcher in matchers:
                for result in matcher.life.step(seen):
                    final = result["status"] in ("finalized", "dropped")
                    publish(TransactionStatus(matcher, _encoder.encode(result), final))

    async def _observe(self, tx_hash: str, head: int, finalized: int | None) -> Observation:
        receipt = await self._call("eth_getTransactionReceipt", [tx_hash])
        if isinstance(receipt, dict) and receipt.get("blockHash"):
            raw_status = receipt.get("status")
            inclusion = Inclusion(
                int(receipt["blockNumber"], 16),
                str(receipt["blockHash"]),
                int(raw_status, 16) if isinstance(raw_status, str) else None,
            )
            head = max(head, inclusion.number)
            return Observation(self._clock(), head, inclusion, False, finalized)
        pooled = await self._call("eth_getTransactionByHash", [tx_hash])
        return Observation(self._clock(), head, None, isinstance(pooled, dict), finalized)

    async def _finalized(self) -> int | None:
        try:
            block = await self._call("eth_getBlockByNumber", ["finalized", False])
        except RpcError:
            return None  # a chain without the tag: never finalized, only confirmed
        return int(block["number"], 16) if isinstance(block, dict) else None
