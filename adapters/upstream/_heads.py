"""Following the upstreams' chain head: ``newHeads`` over WebSocket, else polling over HTTP.

Two tasks. The *source* task keeps one ``eth_subscribe ["newHeads"]`` open on the first healthy
upstream that has a ``ws`` URL, moves back to a better one when it is healthy again, and, while no
WebSocket is up, polls ``eth_blockNumber`` over HTTP every ``poll_interval``. It never waits on the
broker: it drops each head into a one-slot mailbox where a newer head replaces an older one. The
*report* task takes the newest head, fetches its logs (one ``eth_getLogs {blockHash}``) and hands the
block to the broker. Heads skipped that way, or missed while a connection was down, are not lost:
the broker's head tracker asks :meth:`UpstreamAdapter.fetch_block` for every missing parent.

After a reconnect or a switch of upstream the source reports the node's current head at once, so
gaps are filled without waiting for the next block. Until the new source reaches the height already
reported, its lower heads are ignored: a node that lags behind must not look like a reorganisation.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Final

import msgspec
import trio
import trio_websocket

from adapters.backoff import Backoff
from adapters.evm.blocks import BlockHandler
from schemas.errors import RpcError

from ._blocks import BadUpstreamData, Header
from ._fetching import BlockFetcher
from ._forwarding import Forwarder
from ._options import UpstreamOptions, endpoint_label
from .websocket import (
    WS_ERRORS,
    StreamOpener,
    connect,
    leaves,
    open_stream,
    read_notifications,
    subscribe,
)

log = logging.getLogger(__name__)

_SUBSCRIBE_ID: Final = 1
_SUBSCRIBE: Final = (
    b'{"jsonrpc":"2.0","id":%d,"method":"eth_subscribe","params":["newHeads"]}' % _SUBSCRIBE_ID
)
_WS_CLOSE_TIMEOUT: Final = 2.0
_str_decoder: Final = msgspec.json.Decoder(str)


@dataclass(frozen=True, slots=True)
class _Hint:
    """A head to report: a ``newHeads`` header, or a height seen by polling (None: latest)."""

    epoch: int
    source: int | None
    header: Header | None = None
    number: int | None = None


class _Mailbox:
    """One slot: the newest hint replaces an unread older one."""

    def __init__(self) -> None:
        self._hint: _Hint | None = None
        self._filled = trio.Event()

    def put(self, hint: _Hint) -> None:
        self._hint = hint
        self._filled.set()

    async def take(self) -> _Hint:
        await self._filled.wait()
        hint, self._hint = self._hint, None
        self._filled = trio.Event()
        assert hint is not None
        return hint


class HeadFollower:
    """Reports the head blocks of one network to the broker."""

    def __init__(
        self,
        network: str,
        forwarder: Forwarder,
        fetcher: BlockFetcher,
        options: UpstreamOptions,
        *,
        open_ws_stream: StreamOpener = open_stream,
    ) -> None:
        """``open_ws_stream``: how a connection to a ``ws`` URL is opened (tests pass one end of
        a memory stream)."""
        self.network = network
        self.forwarder = forwarder
        self.fetcher = fetcher
        self.options = options
        self._ws_backoff = {
            index: Backoff(options.reconnect_base, options.reconnect_max)
            for index, endpoint in enumerate(options.upstreams)
            if endpoint.ws is not None
        }
        self._mailbox = _Mailbox()
        self._epoch = 0
        self._floor: int | None = None  # heads below it are ignored in this epoch
        self._reported = -1  # the height of the last block reported
        self._last_polled = -1
        self._tick = min(options.poll_interval, options.ws_ping_interval, 1.0)
        self._open_ws_stream = open_ws_stream

    async def serve(
        self,
        on_block: BlockHandler,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Follow the head until cancelled."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.forwarder.serve_probes)
            nursery.start_soon(self._report_heads, on_block)
            task_status.started()
            await self._follow_sources()

    # -- the source task ------------------------------------------------------------------------

    def _new_epoch(self, source: int | None) -> None:
        self._epoch += 1
        self._floor = self._reported if self._reported >= 0 else None
        self._mailbox.put(_Hint(self._epoch, source))  # the source's current head, at once

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
            label = endpoint_label(index, self.options.upstreams[index].ws or "")
            try:
                await self._follow_ws(index, label)
            except* WS_ERRORS as ended:
                delay = self._ws_backoff[index].failed(trio.current_time())
                log.warning(
                    "%s: newHeads over %s WebSocket ended (%s); polling over HTTP, "
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
                    name="eth_subscribe newHeads",
                    reply_within=self.options.request_timeout,
                )
                self._ws_backoff[index].succeeded()
                log.info("%s: following newHeads over %s WebSocket", self.network, label)
                self._new_epoch(index)
                await self._read_heads(ws, index, subscription)
                log.info("%s: leaving %s WebSocket for a better upstream", self.network, label)
                # A polite close only here: with a failed or stalled peer it would just wait.
                with trio.move_on_after(_WS_CLOSE_TIMEOUT):
                    await ws.aclose()
            finally:
                # Always close the socket: trio-websocket leaves it open after an abnormal closure.
                with trio.CancelScope(shield=True):
                    await stream.aclose()
                nursery.cancel_scope.cancel()

    async def _read_heads(
        self, ws: trio_websocket.WebSocketConnection, index: int, subscription: str | int
    ) -> None:
        """Forward notifications until the connection fails or a better upstream is ready."""

        def on_header(result: msgspec.Raw) -> None:
            try:
                header = Header.from_json(result)
            except BadUpstreamData as exc:
                log.warning("%s: ignoring a bad newHeads header: %s", self.network, exc)
                return
            self._mailbox.put(_Hint(self._epoch, index, header=header))

        await read_notifications(
            ws,
            "eth_subscription",
            subscription,
            on_header,
            tick=self._tick,
            ping_interval=self.options.ws_ping_interval,
            request_timeout=self.options.request_timeout,
            leave=lambda: self._ws_candidate(better_than=index) is not None,
        )

    async def _poll_until_ws(self) -> None:
        """Poll ``eth_blockNumber`` until a WebSocket may be tried (forever without one)."""
        self._new_epoch(None)
        while True:
            try:
                number = int(
                    _str_decoder.decode(await self.forwarder.call("eth_blockNumber", b"[]")), 16
                )
            except (RpcError, msgspec.DecodeError, ValueError) as exc:
                log.warning("%s: polling eth_blockNumber failed: %r", self.network, exc)
            else:
                if number > self._reported and number != self._last_polled:
                    self._last_polled = number
                    self._mailbox.put(_Hint(self._epoch, None, number=number))
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

    # -- the report task ------------------------------------------------------------------------

    async def _report_heads(self, on_block: BlockHandler) -> None:
        while True:
            hint = await self._mailbox.take()
            retry = Backoff(self.options.reconnect_base, self.options.reconnect_max)
            while True:
                try:
                    await self._report(hint, on_block)
                    break
                except (RpcError, BadUpstreamData) as exc:
                    delay = retry.failed(trio.current_time())
                    log.warning(
                        "%s: cannot report head (%r); retrying in %g s", self.network, exc, delay
                    )
                newer: _Hint | None = None
                with trio.move_on_after(delay):
                    newer = await self._mailbox.take()
                hint = newer or hint

    async def _report(self, hint: _Hint, on_block: BlockHandler) -> None:
        if hint.header is not None:
            block = await self.fetcher.complete(hint.header, prefer=hint.source)
        else:
            block = await self.fetcher.by_number(hint.number, prefer=hint.source)
        if block is None:
            return
        if hint.epoch == self._epoch and self._floor is not None:
            if block.number < self._floor:
                log.debug(
                    "%s: ignoring head %d below %d until the new source catches up",
                    self.network,
                    block.number,
                    self._floor,
                )
                return
            self._floor = None
        await on_block(block)
        self._reported = block.number
