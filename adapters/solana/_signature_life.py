"""``signatureStatusSubscribe``: one Solana transaction's life, as the EVM profile's
``eth_subscribe ["transaction", {"hash"}]`` follows an Ethereum one (:mod:`adapters.evm.transactions`),
in the same ``result`` shape so that one ``switch`` on ``status`` serves both families::

    included (commitment processed) ──> confirmed (confirmed) ──> finalized (finalized)  (the end)
       │  ^
       v  │ landed again
    removed (its slot left the chain before it was confirmed)

    dropped: not landed once the finalized block height passed its blockhash's
             ``lastValidBlockHeight`` (the end; only when that height is known: the
             subscription names it, or the transaction was sent through this process)

Params: ``[signature, {"lastValidBlockHeight"?: n}]`` (``getLatestBlockhash`` answers the height
with the blockhash the transaction was built on). Without the option, the height this process
remembered when the transaction went through its ``sendTransaction`` is used
(:class:`SentTransactions`; per process: a signature sent through another process needs the
option). The ``result``: ``{"hash"`` (the signature),
``"status"``, ``"commitment"`` (Solana's name of the step), ``"blockNumber"`` (the slot, a ``0x``
quantity as the EVM's), ``"slot"`` (the same, a number), ``"blockHash"`` (null: a signature's
status does not name its block), ``"depth"`` (Solana's ``confirmations``, null once rooted),
``"receiptStatus"`` (``"0x1"`` it succeeded, ``"0x0"`` it failed, as the EVM's) and ``"err"``
(Solana's transaction error)``}``; members that do not apply are null. A node that answers a
later commitment at once (the dev chain: every slot is final when produced) still gives every
step, in order.

:class:`SignatureLife` is the sans-io core; :class:`SignatureFollower` asks the node
(``getSignatureStatuses`` for every followed signature in one call, and ``getBlockHeight`` at
``finalized`` while one that may be dropped has not landed) at every new slot, every
``interval`` seconds and as soon as a subscription begins, so a signature that landed before it
is notified at once.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Final

import msgspec
import trio

from adapters.base import ChainCall, Follower, SubscriptionIndex
from schemas.errors import RpcError

from . import _wire as wire
from ._errors import invalid_params
from ._events import SlotEvent

SUBSCRIBE: Final = "signatureStatusSubscribe"
UNSUBSCRIBE: Final = "signatureStatusUnsubscribe"
NOTIFICATION: Final = "signatureStatusNotification"
#: Solana's commitments, in order, and the status each one is.
COMMITMENTS: Final = ("processed", "confirmed", "finalized")
STATUS_OF: Final = {"processed": "included", "confirmed": "confirmed", "finalized": "finalized"}
#: Seconds between two looks when no slot comes.
DEFAULT_INTERVAL: Final = 2.0
#: Signatures per ``getSignatureStatuses`` (Solana's limit).
MAX_STATUSES: Final = 256
#: Blocks past its last valid height a sent transaction stays remembered (a subscription that
#: comes a little late still learns it was dropped).
SENT_MARGIN: Final = 32
#: Sent transactions remembered at most per chain (the oldest are forgotten first).
MAX_SENT: Final = 100_000
_encoder = msgspec.json.Encoder()


class SentTransactions:
    """``signature -> last valid block height`` of the transactions sent through this process's
    ``sendTransaction`` (one per chain), so that ``signatureStatusSubscribe`` without
    ``lastValidBlockHeight`` can still report them dropped. Bounded: at most ``limit``, and an
    entry is forgotten once the chain's height passed its last valid one by
    :data:`SENT_MARGIN` (looked at on each :meth:`remember`)."""

    def __init__(self, limit: int = MAX_SENT) -> None:
        self._limit = limit
        self._last_valid: OrderedDict[str, int] = OrderedDict()

    def remember(self, signature: str, last_valid: int, height: int) -> None:
        """``signature`` expires after block height ``last_valid``; ``height``: the chain's now."""
        self._last_valid.pop(signature, None)
        self._last_valid[signature] = last_valid
        while self._last_valid:
            oldest, expires = next(iter(self._last_valid.items()))
            if len(self._last_valid) <= self._limit and expires + SENT_MARGIN >= height:
                break
            del self._last_valid[oldest]

    def last_valid(self, signature: str) -> int | None:
        return self._last_valid.get(signature)

    def __len__(self) -> int:
        return len(self._last_valid)


@dataclass(frozen=True, slots=True)
class Landed:
    """Where a node's status puts the signature."""

    slot: int
    commitment: str
    confirmations: int | None
    err: Any


@dataclass(frozen=True, slots=True)
class Observation:
    """What the node says: the signature's status (None: not landed) and, when asked, its
    block height at ``finalized``."""

    landed: Landed | None
    finalized_height: int | None = None


def status(
    signature: str, name: str, landed: Landed | None = None, commitment: str | None = None
) -> dict[str, Any]:
    """One notification's ``result``."""
    err = landed.err if landed else None
    return {
        "hash": signature,
        "status": name,
        "commitment": commitment,
        "blockNumber": hex(landed.slot) if landed else None,
        "slot": landed.slot if landed else None,
        "blockHash": None,
        "depth": landed.confirmations if landed else None,
        "receiptStatus": ("0x0" if err is not None else "0x1") if landed else None,
        "err": err,
    }


@dataclass(slots=True)
class SignatureLife:
    """One subscription's view of one signature (sans-io): :meth:`step` takes what the node
    says and answers the statuses to notify, in order; :attr:`ended` after ``finalized`` or
    ``dropped``."""

    signature: str
    last_valid: int | None = None
    ended: bool = False
    _reached: int = -1  # the index in COMMITMENTS of the last step notified
    _slot: int | None = None

    def step(self, seen: Observation) -> list[dict[str, Any]]:
        if self.ended:
            return []
        out: list[dict[str, Any]] = []
        found = seen.landed
        if self._slot is not None and (found is None or found.slot != self._slot):
            gone = Landed(self._slot, COMMITMENTS[self._reached], None, None)
            out.append({**status(self.signature, "removed", gone), "receiptStatus": None})
            self._slot = None
            self._reached = -1
        if found is None:
            height = seen.finalized_height
            if self.last_valid is not None and height is not None and height > self.last_valid:
                out.append(status(self.signature, "dropped"))
                self.ended = True
            return out
        level = COMMITMENTS.index(found.commitment) if found.commitment in COMMITMENTS else 0
        self._slot = found.slot
        for at in range(self._reached + 1, level + 1):
            commitment = COMMITMENTS[at]
            out.append(status(self.signature, STATUS_OF[commitment], found, commitment))
        self._reached = max(self._reached, level)
        if self._reached == len(COMMITMENTS) - 1:
            self.ended = True
        return out


class SignatureStatusMatcher:
    """A ``signatureStatusSubscribe`` subscription: its signature and its own
    :class:`SignatureLife` (every subscription is a key of its own: two that began at different
    times are at different steps). ``wake``: tells the followers a subscription began."""

    __slots__ = ("life", "signature", "wake")

    method = SUBSCRIBE

    def __init__(self, signature: str, life: SignatureLife, wake: Callable[[], None]) -> None:
        self.signature = signature
        self.life = life
        self.wake = wake

    @property
    def key(self) -> Hashable:
        return ("signatureStatus", id(self))

    @property
    def notification(self) -> str:
        return NOTIFICATION

    @property
    def one_shot(self) -> bool:
        return False

    def render(self, event: object) -> bytes | None:
        if isinstance(event, SignatureStep) and event.matcher is self:
            return event.result
        return None


@dataclass(frozen=True, slots=True, eq=False)
class SignatureStep:
    """A step of one subscription's signature (made by :class:`SignatureFollower`, not by the
    ledger's events); ``final``: the subscription ends with it."""

    matcher: SignatureStatusMatcher
    result: bytes
    final: bool


def parse_signature_status(
    params: Any, wake: Callable[[], None], sent: SentTransactions | None = None
) -> SignatureStatusMatcher:
    """``[signature, {"lastValidBlockHeight"?}]``, parsed (Solana's -32602 for bad params);
    without the height, the one ``sent`` remembers for the signature."""
    signature, raw = wire.positional(params, 1, 2)
    text = str(wire.signature(signature))
    last_valid = None
    if raw is not None:
        if not isinstance(raw, dict) or set(raw) - {"lastValidBlockHeight", "commitment"}:
            raise invalid_params(
                'signatureStatusSubscribe takes [<signature>, {"lastValidBlockHeight"?: <u64>}]'
            )
        last_valid = raw.get("lastValidBlockHeight")
        if last_valid is not None and (
            not isinstance(last_valid, int) or isinstance(last_valid, bool) or last_valid < 0
        ):
            raise invalid_params("lastValidBlockHeight must be a block height (an integer >= 0)")
    if last_valid is None and sent is not None:
        last_valid = sent.last_valid(text)
    return SignatureStatusMatcher(text, SignatureLife(text, last_valid), wake)


def _landed(value: Any) -> Landed | None:
    if not isinstance(value, dict):
        return None
    slot = value.get("slot")
    if not isinstance(slot, int):
        return None
    confirmations = value.get("confirmations")
    return Landed(
        slot,
        str(value.get("confirmationStatus") or "processed"),
        confirmations if isinstance(confirmations, int) else None,
        value.get("err"),
    )


class SignatureFollower(Follower):
    """Asks the node about the signatures the ``signatureStatusSubscribe`` subscriptions of one
    chain follow, and publishes their steps (see the module's docstring)."""

    def __init__(self, call: ChainCall, *, interval: float = DEFAULT_INTERVAL) -> None:
        self._call = call
        self._interval = interval
        self._news = trio.Event()

    def on_event(self, event: object) -> None:
        if isinstance(event, SlotEvent):
            self._news.set()

    def wake(self) -> None:
        """Look at once (a subscription began)."""
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
            following = getattr(index(), "signatures", None)
            if not following:
                continue
            try:
                await self._look(following, publish)
            except (RpcError, KeyError, TypeError, ValueError):
                continue  # the node failed this time: the next slot or interval asks again

    async def _look(
        self,
        following: dict[str, dict[Any, SignatureStatusMatcher]],
        publish: Callable[[object], None],
    ) -> None:
        signatures = [s for s, subs in following.items() if subs]
        seen: dict[str, Landed | None] = {}
        for start in range(0, len(signatures), MAX_STATUSES):
            chunk = signatures[start : start + MAX_STATUSES]
            answer = await self._call(
                "getSignatureStatuses", [chunk, {"searchTransactionHistory": True}]
            )
            values = answer["value"]
            if not isinstance(values, list) or len(values) != len(chunk):
                raise ValueError("getSignatureStatuses answered another number of statuses")
            seen.update(zip(chunk, map(_landed, values), strict=True))
        height: int | None = None
        if any(
            seen[s] is None and m.life.last_valid is not None
            for s in signatures
            for m in following.get(s, {}).values()
        ):
            found = await self._call("getBlockHeight", [{"commitment": "finalized"}])
            height = found if isinstance(found, int) else None
        for signature in signatures:
            for matcher in list(following.get(signature, {}).values()):
                for result in matcher.life.step(Observation(seen[signature], height)):
                    final = result["status"] in ("finalized", "dropped")
                    publish(SignatureStep(matcher, _encoder.encode(result), final))


class Followers:
    """A family's followers (one per place that holds the chain's subscriptions: the hub, the
    webhooks), woken together when a subscription begins."""

    def __init__(self) -> None:
        self._all: weakref.WeakSet[SignatureFollower] = weakref.WeakSet()

    def new(self, call: ChainCall) -> SignatureFollower:
        follower = SignatureFollower(call)
        self._all.add(follower)
        return follower

    def wake(self) -> None:
        for follower in list(self._all):
            follower.wake()
