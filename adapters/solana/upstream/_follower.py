"""Following the upstreams' slots for Solana's PubSub: ``slotSubscribe`` over WebSocket, else
polling ``getSlot`` over HTTP; each slot's block read once it closed.

Two tasks, as the EVM upstream's head follower. The *source* keeps one ``slotSubscribe`` open on
the first healthy upstream with a ``ws`` URL (moving back to a better one once it is healthy
again), polls ``getSlot`` while no WebSocket is up, and drops each sighting into a one-slot mailbox
where a newer one replaces an older. The *report* task plans the way from the last reported slot to
the newest sighting (:class:`SlotSequencer`: ``getBlocks`` fills what was skipped, dropped, or
missed during a reconnect or a switch), reads each closed slot's block (``getBlock``) and the
watched accounts it wrote (``getMultipleAccounts``), and hands the events on in order.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from typing import Any, Final

import msgspec
import trio
import trio_websocket

from adapters.backoff import Backoff
from adapters.upstream import Endpoint, Forwarder, endpoint_label
from adapters.upstream.websocket import (
    WS_ERRORS,
    StreamOpener,
    WebSocketFailed,
    connect,
    leaves,
    open_stream,
    read_notifications,
    subscribe,
)
from schemas.errors import RpcError

from .._events import SolanaEvent
from ._block_events import BLOCK_CONFIG, BadBlock, account_events, block_events
from ._options import SolanaUpstreamOptions
from ._slots import NeedSlots, Sighting, SlotSequencer, Step
from ._watch import WatchedAccounts

log = logging.getLogger(__name__)

_SUBSCRIBE_ID: Final = 1
_SUBSCRIBE: Final = b'{"jsonrpc":"2.0","id":%d,"method":"slotSubscribe"}' % _SUBSCRIBE_ID
_WS_CLOSE_TIMEOUT: Final = 2.0
#: Solana's codes for a slot whose block is not there yet (-32004: not available; -32014: its
#: status not known yet), or never will be on this node (-32001: cleaned up; -32007: skipped;
#: -32009: missing in long-term storage).
_NO_BLOCK_YET: Final = frozenset({-32004, -32014})
_NO_BLOCK: Final = frozenset({-32001, -32007, -32009})
_MAX_ACCOUNTS: Final = 100  # getMultipleAccounts' limit
_BLOCK_RETRY: Final = 0.1
_encode: Final = msgspec.json.Encoder().encode
_decode: Final = msgspec.json.Decoder()


class _Slot(msgspec.Struct):
    slot: int
    parent: int
    root: int


_slot_decoder: Final = msgspec.json.Decoder(_Slot)
EventHandler = Callable[[SolanaEvent], Awaitable[None]]


class _Mailbox:
    """One slot: the newest sighting replaces an unread older one."""

    def __init__(self) -> None:
        self._seen: Sighting | None = None
        self._filled = trio.Event()

    def put(self, seen: Sighting) -> None:
        self._seen = seen
        self._filled.set()

    async def take(self) -> Sighting:
        await self._filled.wait()
        seen, self._seen = self._seen, None
        self._filled = trio.Event()
        assert seen is not None
        return seen


class SlotFollower:
    """Reports one Solana network's slots, transactions and watched accounts, in order."""

    def __init__(
        self,
        network: str,
        forwarder: Forwarder,
        options: SolanaUpstreamOptions,
        watched: WatchedAccounts,
        *,
        open_ws_stream: StreamOpener = open_stream,
    ) -> None:
        self.network = network
        self.forwarder = forwarder
        self.options = options
        self.watched = watched
        self.sequencer = SlotSequencer()
        self._ws_backoff = {
            index: Backoff(options.reconnect_base, options.reconnect_max)
            for index, endpoint in enumerate(options.upstreams)
            if endpoint.ws is not None
        }
        self._mailbox = _Mailbox()
        self._tick = min(options.poll_interval, options.ws_ping_interval, 1.0)
        self._open_ws_stream = open_ws_stream

    async def serve(
        self,
        on_event: EventHandler,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.forwarder.serve_probes)
            nursery.start_soon(self._report_slots, on_event)
            task_status.started()
            await self._follow_sources()

    # -- the source task ------------------------------------------------------------------------

    def _ws_candidate(self, *, better_than: int | None = None) -> int | None:
        now = trio.current_time()
        for index, backoff in self._ws_backoff.items():
            if better_than is not None and index >= better_than:
                break
            if self.forwarder.board.usable(index) and backoff.due(now):
                return index
        return None

    async def _follow_sources(self) -> None:
        while True:
            index = self._ws_candidate()
            if index is None:
                await self._poll_until_ws()
                continue
            endpoint: Endpoint = self.options.upstreams[index]
            label = endpoint_label(index, endpoint.ws or "")
            try:
                await self._follow_ws(index, label)
            except* WS_ERRORS as ended:
                delay = self._ws_backoff[index].failed(trio.current_time())
                log.warning(
                    "%s: slotSubscribe over %s WebSocket ended (%s); polling getSlot over HTTP, "
                    "next WebSocket attempt in %g s",
                    self.network,
                    label,
                    "; ".join(repr(exc) for exc in leaves(ended)),
                    delay,
                )

    async def _follow_ws(self, index: int, label: str) -> None:
        url = self.options.upstreams[index].ws
        assert url is not None
        async with trio.open_nursery() as nursery:  # runs trio-websocket's reader task
            ws, stream = await connect(
                nursery,
                url,
                connect_timeout=self.options.connect_timeout,
                opener=self._open_ws_stream,
            )
            try:
                subscription = await subscribe(
                    ws,
                    _SUBSCRIBE,
                    _SUBSCRIBE_ID,
                    name="slotSubscribe",
                    reply_within=self.options.request_timeout,
                )
                self._ws_backoff[index].succeeded()
                log.info("%s: following slots over %s WebSocket", self.network, label)
                # Where the new source stands, at once: a quiet node may notify nothing for a
                # while, and the slots it has beyond the last reported are filled from there.
                try:
                    await self._sight_current(only=index)
                except (RpcError, ValueError) as exc:
                    raise WebSocketFailed(f"getSlot on the new source failed: {exc!r}") from exc
                await self._read_slots(ws, index, subscription)
                log.info("%s: leaving %s WebSocket for a better upstream", self.network, label)
                with trio.move_on_after(_WS_CLOSE_TIMEOUT):
                    await ws.aclose()
            finally:
                # Always close the socket: trio-websocket leaves it open after an abnormal closure.
                with trio.CancelScope(shield=True):
                    await stream.aclose()
                nursery.cancel_scope.cancel()

    async def _read_slots(
        self, ws: trio_websocket.WebSocketConnection, index: int, subscription: str | int
    ) -> None:
        def on_slot(result: msgspec.Raw) -> None:
            try:
                slot = _slot_decoder.decode(result)
            except msgspec.DecodeError as exc:
                raise WebSocketFailed(f"a slotNotification that is not one: {exc}") from exc
            self._mailbox.put(Sighting(slot.slot, slot.parent, slot.root))

        await read_notifications(
            ws,
            "slotNotification",
            subscription,
            on_slot,
            tick=self._tick,
            ping_interval=self.options.ws_ping_interval,
            request_timeout=self.options.request_timeout,
            leave=lambda: self._ws_candidate(better_than=index) is not None,
        )

    async def _poll_until_ws(self) -> None:
        """Poll ``getSlot`` (and the root) until a WebSocket may be tried (forever without one)."""
        while True:
            try:
                await self._sight_current()
            except (RpcError, msgspec.DecodeError, ValueError) as exc:
                log.warning("%s: polling getSlot failed: %r", self.network, exc)
            if self._ws_candidate() is not None:
                return
            now = trio.current_time()
            retry_ws = min(
                (b.not_before for b in self._ws_backoff.values() if b.not_before > now),
                default=math.inf,
            )
            await trio.sleep_until(min(now + self.options.poll_interval, retry_ws))
            if self._ws_candidate() is not None:
                return

    async def _sight_current(self, *, only: int | None = None) -> None:
        """Put the node's current slot (and root) in the mailbox, if it is new."""
        slot = await self._number(b'[{"commitment":"processed"}]', only)
        root = await self._number(b'[{"commitment":"finalized"}]', only)
        last = self.sequencer.last
        if last is None or slot > last:
            self._mailbox.put(Sighting(slot, None, root))

    async def _number(self, params: bytes, only: int | None) -> int:
        found, _index = await self.forwarder.call_tracked("getSlot", params, only=only)
        value = _decode.decode(found)
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"getSlot answered {value!r}")
        return value

    # -- the report task ------------------------------------------------------------------------

    async def _report_slots(self, on_event: EventHandler) -> None:
        while True:
            seen = await self._mailbox.take()
            retry = Backoff(self.options.reconnect_base, self.options.reconnect_max)
            while True:
                try:
                    await self._report(seen, on_event)
                    break
                except (RpcError, BadBlock, ValueError, msgspec.DecodeError) as exc:
                    delay = retry.failed(trio.current_time())
                    log.warning(
                        "%s: cannot report slot %d (%r); retrying in %g s",
                        self.network,
                        seen.slot,
                        exc,
                        delay,
                    )
                newer: Sighting | None = None
                with trio.move_on_after(delay):
                    newer = await self._mailbox.take()
                seen = newer or seen

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
            between = await self._slots_with_blocks(plan)
            plan = self.sequencer.plan(seen, between)
            assert not isinstance(plan, NeedSlots)
        for step in plan:
            await self._step(step, on_event)

    async def _slots_with_blocks(self, need: NeedSlots) -> list[int]:
        params = _encode([need.first, need.last, {"commitment": "confirmed"}])
        found = _decode.decode(await self.forwarder.call("getBlocks", params))
        if not isinstance(found, list) or not all(isinstance(s, int) for s in found):
            raise BadBlock(f"getBlocks answered {str(found)[:80]}")
        if need.last > need.first + 1:
            log.info(
                "%s: slots %d to %d filled from getBlocks (%d with a block)",
                self.network,
                need.first,
                need.last,
                len(found),
            )
        return found

    async def _step(self, step: Step, on_event: EventHandler) -> None:
        """Read what ``step`` reports (the only part that can fail), then report it all."""
        events: list[SolanaEvent] = []
        if step.close is not None:
            events.extend(await self._closed_block(step.close))
        events.append(step.opened)
        for event in events:
            await on_event(event)
        self.sequencer.reported(step.opened.slot)

    async def _closed_block(self, slot: int) -> list[SolanaEvent]:
        data = await self._block(slot)
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
            result = await self.forwarder.call("getMultipleAccounts", _encode([chunk, config]))
            events.extend(account_events(found, chunk, bytes(result)))
        return events

    async def _block(self, slot: int) -> bytes | None:
        """``getBlock`` of a closed slot (None: it has none), asked again while the node has not
        confirmed it, for at most ``block_wait`` seconds."""
        params = _encode([slot, BLOCK_CONFIG])
        with trio.move_on_after(self.options.block_wait):
            while True:
                try:
                    return bytes(await self.forwarder.call("getBlock", params))
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
