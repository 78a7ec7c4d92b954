"""The ``solana-upstream`` chain adapter: a Solana network served by RPC nodes the operator runs
or rents, behind the broker as the ``upstream`` adapter puts Ethereum nodes."""

from __future__ import annotations

import contextlib
import logging
from typing import Any, ClassVar, Final

import msgspec
import outcome
import trio

from adapters._options import decode_options
from adapters.base import (
    CacheEpoch,
    EventHandler,
    InterestSource,
    Lifetime,
    MethodDocs,
    NetworkSpec,
    StreamTail,
    SubscriptionFamily,
)
from adapters.upstream import ChainCheck, ForwardingAdapter
from schemas.errors import ConfigError, MethodNotFound, RpcError

from .. import _wire as wire
from .._docs import solana_docs
from ._follower import SlotFollower
from ._limits import check_params
from ._options import SolanaUpstreamOptions, expected_genesis
from ._resume import AlreadyAppended, ResumePoint, find_resume_point
from ._watch import UpstreamSubscriptions, WatchedAccounts

log = logging.getLogger(__name__)

_NO_PARAMS: Final = msgspec.Raw(b"[]")
_NULL: Final = b"null"
#: Answers that never change once their commitment is ``finalized`` (Solana's default for both).
_FINALIZED_READS: Final = frozenset({"getBlock", "getTransaction"})
_str_decoder: Final = msgspec.json.Decoder(str)
_decode: Final = msgspec.json.Decoder()
_LATEST: Final = b'[{"commitment":"processed"}]'
#: Blocks a blockhash stays valid for after the one it was produced at (Solana's).
MAX_PROCESSING_AGE: Final = 150


def sent_signature(params: bytes) -> str | None:
    """The signature of ``sendTransaction``'s transaction; None when the params are not one."""
    try:
        value, raw_options = wire.positional(_decode.decode(params), 1, 2)
        tx = wire.transaction(value, wire.config(raw_options))
    except (msgspec.DecodeError, RpcError, ValueError, TypeError):
        return None
    return str(tx.signatures[0]) if tx.signatures else None


def last_valid_bound(latest: Any) -> tuple[int, int] | None:
    """``(last valid block height, block height now)`` of a transaction sent now, from
    ``getLatestBlockhash`` at ``processed`` asked while it was sent (None: that failed).

    Solana's rule (the bank's ``get_blockhash_last_valid_block_height``): a transaction may land
    while the block height is at most the height its blockhash was produced at +
    MAX_PROCESSING_AGE (150), and ``getLatestBlockhash`` answers that height for the newest
    blockhash. Asked of the upstream that took the transaction (which, with preflight, has
    simulated it, so knows its blockhash), the transaction's own blockhash is that one (the
    height is then exact) or an older one, produced at a lower height: the newest's height is
    then an upper bound. So a transaction is never called dropped while it may still land; an
    old blockhash's is reported at most 150 blocks late. (With preflight skipped, a node that
    has not seen the blockhash yet, the client having read it from a node ahead, could give too
    low a bound: docs/solana.md.)"""
    if not isinstance(latest, dict) or not isinstance(latest.get("value"), dict):
        return None
    height = latest["value"].get("lastValidBlockHeight")
    if not isinstance(height, int) or isinstance(height, bool):
        return None
    return height, height - MAX_PROCESSING_AGE


class NoUsableSolanaUpstream(ConfigError):
    """At start, no upstream of the network answered with the network's genesis hash."""


def genesis_check(chain: str, reference: str) -> ChainCheck:
    """``getGenesisHash`` must begin with the chain's reference; ``getSlot`` probes a confirmed
    node."""

    def matches(result: msgspec.Raw) -> bool:
        try:
            return _str_decoder.decode(result)[: len(reference)] == reference
        except msgspec.DecodeError:
            return False

    return ChainCheck(chain, "getGenesisHash", "getSlot", matches, f"{reference}...")


def _finalized(params: bytes) -> int | None:
    """The slot of a ``getBlock``-like call at ``finalized`` commitment (None otherwise)."""
    try:
        decoded = _decode.decode(params)
    except msgspec.DecodeError:
        return None
    if not isinstance(decoded, list) or not decoded or len(decoded) > 2:
        return None
    config = decoded[1] if len(decoded) == 2 else None
    if config is not None and (
        not isinstance(config, dict) or config.get("commitment", "finalized") != "finalized"
    ):
        return None
    first = decoded[0]
    return first if isinstance(first, int) and not isinstance(first, bool) else -1


class SolanaUpstreamAdapter(ForwardingAdapter):
    """Forwards Solana's RPC methods to the configured upstreams and serves its PubSub over
    their slots and blocks (options: :class:`SolanaUpstreamOptions`)."""

    name: ClassVar[str] = "solana-upstream"
    unusable: ClassVar[type[ConfigError]] = NoUsableSolanaUpstream

    def __init__(self, spec: NetworkSpec) -> None:
        self.options = decode_options(spec, SolanaUpstreamOptions, self.name)
        reference = expected_genesis(spec)
        super().__init__(spec, self.options, genesis_check(spec.chain, reference))
        self.watched = WatchedAccounts(self.options.watch_linger)
        self.family = UpstreamSubscriptions(self.watched, trio.current_time)
        self._followers: list[SlotFollower] = []

    def method_docs(self, chain: str) -> MethodDocs:
        return solana_docs(self.methods(chain))

    def subscription_family(self, chain: str) -> SubscriptionFamily | None:
        return self.family if chain == self.spec.chain else None

    async def call(self, chain: str, method: str, params: msgspec.Raw) -> Any:
        """Forward one call; the upstream's ``result`` comes back as the node encoded it."""
        if chain != self.spec.chain or method not in self._methods:
            raise MethodNotFound(method)
        data = bytes(params)
        check_params(method, data)
        if method == "sendTransaction":
            return await self._send(data)
        return await self.forwarder.call(method, data)

    async def _send(self, data: bytes) -> Any:
        """Forward ``sendTransaction`` and, alongside, ask the latest blockhash at ``processed``
        of the upstream that took it, to remember the transaction's last valid block height (see
        :func:`last_valid_bound`)."""
        signature = sent_signature(data)
        if signature is None:  # the node answers what is wrong with it
            return await self.forwarder.call("sendTransaction", data)
        latest: list[tuple[Any, int]] = []

        async def ask_latest(only: int | None = None) -> None:
            with contextlib.suppress(RpcError, msgspec.DecodeError):
                answer, index = await self.forwarder.call_tracked(
                    "getLatestBlockhash", _LATEST, only=only
                )
                latest.append((_decode.decode(answer), index))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask_latest)
            # The send's own outcome is kept out of the nursery's exception group.
            sent = await outcome.acapture(self.forwarder.call_tracked, "sendTransaction", data)
            if isinstance(sent, outcome.Error):
                nursery.cancel_scope.cancel()
        result, taker = sent.unwrap()
        if latest and latest[0][1] != taker:
            # Another upstream answered (a failover): a node behind the one that took the
            # transaction could answer an older blockhash's height, too low a bound.
            latest.clear()
            await ask_latest(taker)
        bound = last_valid_bound(latest[0][0] if latest else None)
        if bound is not None:
            self.family.sent.remember(signature, *bound)
        return result

    async def serve_events(
        self,
        chain: str,
        on_event: EventHandler,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Report slots, transactions and watched accounts from the upstreams until cancelled."""
        self._check_chain(chain)
        await self._follow(on_event, None, task_status)

    async def serve_events_after(
        self,
        chain: str,
        tail: StreamTail,
        on_event: EventHandler,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """As :meth:`serve_events`, from right after the last slot ``tail`` holds: the slots
        since are filled from ``getBlocks`` (see :mod:`._resume`)."""
        self._check_chain(chain)
        point = await find_resume_point(tail)
        if point is None:
            log.info("%s: no slot on the stream; reporting from the node's present", chain)
            await self._follow(on_event, None, task_status)
            return
        log.info(
            "%s: resuming after slot %d, the last on the stream (%d events of the slot's step "
            "after it)",
            chain,
            point.slot,
            len(point.appended),
        )
        await self._follow(AlreadyAppended(point, on_event), point, task_status)

    async def _follow(
        self,
        on_event: EventHandler,
        point: ResumePoint | None,
        task_status: trio.TaskStatus[None],
    ) -> None:
        # One follower per consumer: each gets every event from where it started.
        follower = SlotFollower(self.spec.name, self.forwarder, self.options, self.watched)
        if point is not None:
            follower.sequencer.reported(point.slot)
        self._followers.append(follower)
        try:
            await follower.serve(on_event, task_status=task_status)
        finally:
            self._followers.remove(follower)

    def interests(self, chain: str) -> frozenset[str] | None:
        if chain != self.spec.chain:
            return None
        return frozenset(self.watched.current(trio.current_time()))

    def set_interest_source(self, chain: str, source: InterestSource) -> None:
        if chain == self.spec.chain:
            self.watched.source = source

    @property
    def reported_slot(self) -> int | None:
        """The last slot reported to subscribers (None: none yet)."""
        slots = [f.sequencer.last for f in self._followers if f.sequencer.last is not None]
        return max(slots, default=None)

    # -- the response cache: finalized answers only ------------------------------------------------

    def cache_epoch(self, chain: str) -> CacheEpoch | None:
        # Only answers that never change are kept, so the epoch matters only as the last slot
        # opened (a block below it is closed: see answer_lifetime).
        slot = self.reported_slot
        head = -1 if slot is None else slot
        return CacheEpoch(head, str(head), 0)

    def answer_lifetime(self, chain: str, method: str, params: bytes, head: int) -> Lifetime:
        if method == "getGenesisHash":
            return Lifetime.FOREVER
        if method not in _FINALIZED_READS:
            return Lifetime.NEVER
        slot = _finalized(params)
        if slot is None or (method == "getBlock" and not 0 <= slot < head):
            # A node may serve a slot still open (the dev chain does): only a closed one is kept.
            return Lifetime.NEVER
        return Lifetime.FOREVER

    def answer_kept(self, chain: str, lifetime: Lifetime, answer: bytes) -> Lifetime:
        # "Not found" may change any moment (a transaction not finalized yet).
        return Lifetime.NEVER if answer == _NULL else lifetime
