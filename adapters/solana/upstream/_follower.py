"""Following the upstreams' slots for Solana's PubSub: ``slotSubscribe`` over WebSocket, else
polling ``getSlot`` over HTTP; each slot's block read once it closed.

Two tasks, as every upstream follower (:mod:`adapters.upstream._ws_follow`). The *source* keeps
one ``slotSubscribe`` open on the first healthy upstream with a ``ws`` URL (moving back to a better
one once it is healthy again), polls ``getSlot`` while no WebSocket is up, and drops each sighting
into a one-slot mailbox where a newer one replaces an older. The *report* task plans the way from
the last reported slot to the newest sighting (:class:`SlotSequencer`: ``getBlocks`` fills what
was skipped, dropped, or missed during a reconnect or a switch), reads each closed slot's block
(``getBlock``) and the watched accounts it wrote (``getMultipleAccounts``), and hands the events on
in order.

The reads go first to the upstream that sighted the slot, not the first by priority: another node
may still be behind. A gap is filled only from a node whose confirmed slot has reached the gap's
end, since ``getBlocks`` stops at the node's own confirmed slot and whatever it leaves out is taken
as skipped; while no node has, the gap waits (up to ``block_wait``, then the report is retried).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final

import msgspec
import trio

from adapters.upstream import SUBSCRIBE_ID, Forwarder, WsFeed, WsFollower
from adapters.upstream.websocket import StreamOpener, WebSocketFailed, open_stream
from schemas.errors import RpcError, ServerError

from .._events import SolanaEvent
from ._block_events import BLOCK_CONFIG, BadBlock, account_events, block_events
from ._options import SolanaUpstreamOptions
from ._slots import NeedSlots, Sighting, SlotSequencer, Step
from ._watch import WatchedAccounts

log = logging.getLogger(__name__)

#: Solana's codes for a slot whose block is not there yet (-32004: not available; -32014: its
#: status not known yet), or never will be on this node (-32001: cleaned up; -32007: skipped;
#: -32009: missing in long-term storage).
_NO_BLOCK_YET: Final = frozenset({-32004, -32014})
_NO_BLOCK: Final = frozenset({-32001, -32007, -32009})
_MAX_ACCOUNTS: Final = 100  # getMultipleAccounts' limit
_BLOCK_RETRY: Final = 0.1
_CONFIRMED: Final = b'[{"commitment":"confirmed"}]'
_encode: Final = msgspec.json.Encoder().encode
_decode: Final = msgspec.json.Decoder()


class GapNotReached(Exception):
    """No upstream has confirmed the slots of a gap yet: it cannot be filled now."""


class _Slot(msgspec.Struct):
    slot: int
    parent: int
    root: int


_slot_decoder: Final = msgspec.json.Decoder(_Slot)
EventHandler = Callable[[SolanaEvent], Awaitable[None]]


class SlotFollower(WsFollower[Sighting, EventHandler]):
    """Reports one Solana network's slots, transactions and watched accounts, in order."""

    feed = WsFeed(
        subscribe=b'{"jsonrpc":"2.0","id":%d,"method":"slotSubscribe"}' % SUBSCRIBE_ID,
        request_name="slotSubscribe",
        notification="slotNotification",
        name="slotSubscribe",
        following="slots",
        fallback="polling getSlot",
        polled="getSlot",
    )
    report_errors = (RpcError, BadBlock, GapNotReached, ValueError, msgspec.DecodeError)
    options: SolanaUpstreamOptions

    def __init__(
        self,
        network: str,
        forwarder: Forwarder,
        options: SolanaUpstreamOptions,
        watched: WatchedAccounts,
        *,
        open_ws_stream: StreamOpener = open_stream,
    ) -> None:
        super().__init__(network, forwarder, options, open_ws_stream=open_ws_stream)
        self.watched = watched
        self.sequencer = SlotSequencer()

    # -- the source task ------------------------------------------------------------------------

    async def _on_subscribed(self, index: int) -> None:
        # Where the new source stands, at once: a quiet node may notify nothing for a while, and
        # the slots it has beyond the last reported are filled from there.
        try:
            await self._sight_current(only=index)
        except (RpcError, ValueError) as exc:
            raise WebSocketFailed(f"getSlot on the new source failed: {exc!r}") from exc

    def _on_notification(self, index: int, result: msgspec.Raw) -> None:
        try:
            slot = _slot_decoder.decode(result)
        except msgspec.DecodeError as exc:
            raise WebSocketFailed(f"a slotNotification that is not one: {exc}") from exc
        self._mailbox.put(Sighting(slot.slot, slot.parent, slot.root, index))

    async def _poll(self) -> None:
        """Poll ``getSlot`` (and the root)."""
        await self._sight_current()

    async def _sight_current(self, *, only: int | None = None) -> None:
        """Put the node's current slot (and root) in the mailbox, if it is new."""
        slot, source = await self._number(b'[{"commitment":"processed"}]', only)
        root, _index = await self._number(b'[{"commitment":"finalized"}]', source)
        last = self.sequencer.last
        if last is None or slot > last:
            self._mailbox.put(Sighting(slot, None, root, source))

    async def _number(self, params: bytes, only: int | None) -> tuple[int, int]:
        """``getSlot`` at a commitment, and the upstream that answered."""
        found, index = await self.forwarder.call_tracked("getSlot", params, only=only)
        value = _decode.decode(found)
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"getSlot answered {value!r}")
        return value, index

    # -- the report task ------------------------------------------------------------------------

    def _describe(self, seen: Sighting) -> str:
        return f"slot {seen.slot}"

    async def _report(self, seen: Sighting, on_event: EventHandler) -> None:
        plan = self.sequencer.plan(seen)
        if self.sequencer.given_up is not None:
            first, last = self.sequencer.given_up
            log.error(
                "%s: slots %d to %d missed, more than %d filled one by one; reporting again "
                "from slot %d",
                self.network,
                first,
                last,
                self.sequencer.max_fill,
                seen.slot,
            )
        if isinstance(plan, NeedSlots):
            between = await self._slots_with_blocks(plan, seen)
            plan = self.sequencer.plan(seen, between)
            assert not isinstance(plan, NeedSlots)
        for step in plan:
            await self._step(step, on_event, seen.source)

    async def _slots_with_blocks(self, need: NeedSlots, seen: Sighting) -> list[int]:
        """The slots with a block in ``need``, from an upstream that has confirmed them all."""
        # A notified parent has a block and the slots after it none: the gap ends before it.
        end = need.last
        if seen.parent is not None and need.first <= seen.parent <= need.last:
            end = seen.parent - 1
        if end < need.first:
            return []
        params = _encode([need.first, end, {"commitment": "confirmed"}])
        with trio.move_on_after(self.options.block_wait):
            while True:
                for index in self.forwarder.board.order(prefer=seen.source):
                    found = await self._blocks_from(index, end, params)
                    if found is None:
                        continue
                    if end > need.first + 1:
                        log.info(
                            "%s: slots %d to %d filled from getBlocks of %s (%d with a block)",
                            self.network,
                            need.first,
                            end,
                            self.forwarder.upstreams[index].label,
                            len(found),
                        )
                    return found
                await trio.sleep(_BLOCK_RETRY)
        raise GapNotReached(
            f"no upstream has confirmed slots {need.first} to {end} "
            f"within {self.options.block_wait:g} s"
        )

    async def _blocks_from(self, index: int, end: int, params: bytes) -> list[int] | None:
        """``getBlocks`` of upstream ``index`` once its confirmed slot reached ``end`` (None: it
        has not, or it failed)."""
        try:
            confirmed, _index = await self._number(_CONFIRMED, index)
            if confirmed < end:
                return None
            found = _decode.decode(
                (await self.forwarder.call_tracked("getBlocks", params, only=index))[0]
            )
        except ServerError:  # that upstream gave no answer; another may
            return None
        if not isinstance(found, list) or not all(isinstance(s, int) for s in found):
            raise BadBlock(f"getBlocks answered {str(found)[:80]}")
        return found

    async def _step(self, step: Step, on_event: EventHandler, source: int | None) -> None:
        """Read what ``step`` reports (the only part that can fail; asking ``source`` first), then
        report it all."""
        events: list[SolanaEvent] = []
        if step.close is not None:
            events.extend(await self._closed_block(step.close, source))
        events.append(step.opened)
        for event in events:
            await on_event(event)
        self.sequencer.reported(step.opened.slot)

    async def _closed_block(self, slot: int, source: int | None) -> list[SolanaEvent]:
        data = await self._block(slot, source)
        if data is None:
            return []
        found = block_events(slot, data)
        events: list[SolanaEvent] = list(found.transactions)
        await self.watched.refresh()  # after the block: a subscription answered before it counts
        wanted = self.watched.wanted(found.written, trio.current_time())
        for start in range(0, len(wanted), _MAX_ACCOUNTS):
            chunk = wanted[start : start + _MAX_ACCOUNTS]
            config: dict[str, Any] = {
                "encoding": "base64",
                "commitment": "confirmed",
                "minContextSlot": slot,
            }
            result = await self.forwarder.call(
                "getMultipleAccounts", _encode([chunk, config]), prefer=source
            )
            events.extend(account_events(found, chunk, bytes(result)))
        return events

    async def _block(self, slot: int, source: int | None) -> bytes | None:
        """``getBlock`` of a closed slot (None: it has none), asked again while the node has not
        confirmed it, for at most ``block_wait`` seconds."""
        params = _encode([slot, BLOCK_CONFIG])
        with trio.move_on_after(self.options.block_wait):
            while True:
                try:
                    return bytes(await self.forwarder.call("getBlock", params, prefer=source))
                except RpcError as exc:
                    if exc.code in _NO_BLOCK:
                        if exc.code != -32007:  # a skipped slot is normal; the others are not
                            log.warning(
                                "%s: slot %d's block is not on the node (%s); its transactions "
                                "are not reported",
                                self.network,
                                slot,
                                exc.message,
                            )
                        return None
                    if exc.code not in _NO_BLOCK_YET:
                        raise
                await trio.sleep(_BLOCK_RETRY)
        log.warning(
            "%s: slot %d's block not available within %g s; its transactions are not reported",
            self.network,
            slot,
            self.options.block_wait,
        )
        return None
