"""Following a feed of the upstreams: a WebSocket subscription, else polling over HTTP.

The loop every upstream adapter's follower shares (the EVM heads, Solana's slots), chain-neutral.
Two tasks. The *source* task keeps one subscription open on the first healthy upstream that has a
``ws`` URL, moves back to a better one when it is healthy again, and, while no WebSocket is up,
polls over HTTP every ``poll_interval``. It never waits on the broker: it drops each sighting into
a one-slot :class:`Mailbox` where a newer one replaces an older. The *report* task takes the
newest sighting and reports it; when that fails it tries again after a backoff, with a newer
sighting if one came in meanwhile.

A family's follower (a :class:`WsFollower`) says what to subscribe to (:class:`WsFeed`), what a
notification means, what to do once a subscription stands, how to poll, and how a sighting is
reported, gaps since the last one included.
"""

from __future__ import annotations

import logging
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar, Final, Generic, TypeVar

import msgspec
import trio
import trio_websocket

from adapters.backoff import Backoff
from schemas.errors import RpcError

from ._forwarding import Forwarder
from ._options import BaseUpstreamOptions, endpoint_label
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

#: The id of the subscribe request, the only request a follower sends over its WebSocket.
SUBSCRIBE_ID: Final = 1
_WS_CLOSE_TIMEOUT: Final = 2.0
#: What a failed poll raises: logged, and the next poll is made after ``poll_interval``.
_POLL_ERRORS: Final = (RpcError, msgspec.DecodeError, ValueError)

SeenT = TypeVar("SeenT")
HandlerT = TypeVar("HandlerT")


class Mailbox(Generic[SeenT]):
    """One slot: the newest sighting replaces an unread older one."""

    def __init__(self) -> None:
        self._seen: SeenT | None = None
        self._filled = trio.Event()

    def put(self, seen: SeenT) -> None:
        self._seen = seen
        self._filled.set()

    async def take(self) -> SeenT:
        await self._filled.wait()
        seen, self._seen = self._seen, None
        self._filled = trio.Event()
        assert seen is not None
        return seen


@dataclass(frozen=True, slots=True)
class WsFeed:
    """What a follower subscribes to, and how its log lines name it."""

    #: The subscribe request, with the id :data:`SUBSCRIBE_ID`.
    subscribe: bytes
    #: That request in errors (``eth_subscribe newHeads``).
    request_name: str
    #: The method of its notifications (``eth_subscription``).
    notification: str
    #: The subscription when its WebSocket ends (``newHeads``).
    name: str
    #: What the subscription follows (``newHeads``, ``slots``).
    following: str
    #: What is done over HTTP instead (``polling``, ``polling getSlot``).
    fallback: str
    #: The method a poll calls, when one fails (``eth_blockNumber``).
    polled: str


class WsFollower(ABC, Generic[SeenT, HandlerT]):
    """Follows one network's :attr:`feed` and reports what it sees to a ``HandlerT``."""

    feed: ClassVar[WsFeed]
    #: What a failed report raises: logged, and the report is tried again after a backoff.
    report_errors: ClassVar[tuple[type[Exception], ...]]

    def __init__(
        self,
        network: str,
        forwarder: Forwarder,
        options: BaseUpstreamOptions,
        *,
        open_ws_stream: StreamOpener = open_stream,
    ) -> None:
        """``open_ws_stream``: how a connection to a ``ws`` URL is opened (tests pass one end of
        a memory stream)."""
        self.network = network
        self.forwarder = forwarder
        self._ws_backoff = {
            index: Backoff(options.reconnect_base, options.reconnect_max)
            for index, endpoint in enumerate(options.upstreams)
            if endpoint.ws is not None
        }
        self._mailbox: Mailbox[SeenT] = Mailbox()
        self._tick = min(options.poll_interval, options.ws_ping_interval, 1.0)
        self._open_ws_stream = open_ws_stream
        self.options = options

    async def serve(
        self,
        handler: HandlerT,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Follow the feed, reporting to ``handler``, until cancelled."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.forwarder.serve_probes)
            nursery.start_soon(self._report_newest, handler)
            task_status.started()
            await self._follow_sources()

    # -- what each family's follower says -------------------------------------------------------

    @abstractmethod
    async def _on_subscribed(self, index: int) -> None:
        """The subscription on upstream ``index`` stands; raising one of ``WS_ERRORS`` leaves it."""

    @abstractmethod
    def _on_notification(self, index: int, result: msgspec.Raw) -> None:
        """A notification's ``result`` from upstream ``index``: put what it says in the mailbox."""

    def _on_polling(self) -> None:
        """No WebSocket is up or due: polling begins (nothing to do by default)."""

    @abstractmethod
    async def _poll(self) -> None:
        """Ask the upstreams where the chain stands; put what is new in the mailbox."""

    @abstractmethod
    async def _report(self, seen: SeenT, handler: HandlerT) -> None:
        """Report ``seen`` (and whatever came between the last report and it) to ``handler``."""

    @abstractmethod
    def _describe(self, seen: SeenT) -> str:
        """``seen`` in the log line of a failed report (``head``, ``slot 12``)."""

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
            label = endpoint_label(index, self.options.upstreams[index].ws or "")
            try:
                await self._follow_ws(index, label)
            except* WS_ERRORS as ended:
                delay = self._ws_backoff[index].failed(trio.current_time())
                log.warning(
                    "%s: %s over %s WebSocket ended (%s); %s over HTTP, "
                    "next WebSocket attempt in %g s",
                    self.network,
                    self.feed.name,
                    label,
                    "; ".join(repr(exc) for exc in leaves(ended)),
                    self.feed.fallback,
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
                    self.feed.subscribe,
                    SUBSCRIBE_ID,
                    name=self.feed.request_name,
                    reply_within=self.options.request_timeout,
                )
                self._ws_backoff[index].succeeded()
                log.info(
                    "%s: following %s over %s WebSocket", self.network, self.feed.following, label
                )
                await self._on_subscribed(index)
                await self._read_notifications(ws, index, subscription)
                log.info("%s: leaving %s WebSocket for a better upstream", self.network, label)
                # A polite close only here: with a failed or stalled peer it would just wait.
                with trio.move_on_after(_WS_CLOSE_TIMEOUT):
                    await ws.aclose()
            finally:
                # Always close the socket: trio-websocket leaves it open after an abnormal closure.
                with trio.CancelScope(shield=True):
                    await stream.aclose()
                nursery.cancel_scope.cancel()

    async def _read_notifications(
        self, ws: trio_websocket.WebSocketConnection, index: int, subscription: str | int
    ) -> None:
        """Take notifications until the connection fails or a better upstream is ready."""
        await read_notifications(
            ws,
            self.feed.notification,
            subscription,
            lambda result: self._on_notification(index, result),
            tick=self._tick,
            ping_interval=self.options.ws_ping_interval,
            request_timeout=self.options.request_timeout,
            leave=lambda: self._ws_candidate(better_than=index) is not None,
        )

    async def _poll_until_ws(self) -> None:
        """Poll until a WebSocket may be tried (forever without one)."""
        self._on_polling()
        while True:
            try:
                await self._poll()
            except _POLL_ERRORS as exc:
                log.warning("%s: polling %s failed: %r", self.network, self.feed.polled, exc)
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

    async def _report_newest(self, handler: HandlerT) -> None:
        while True:
            seen = await self._mailbox.take()
            retry = Backoff(self.options.reconnect_base, self.options.reconnect_max)
            while True:
                try:
                    await self._report(seen, handler)
                    break
                except self.report_errors as exc:
                    delay = retry.failed(trio.current_time())
                    log.warning(
                        "%s: cannot report %s (%r); retrying in %g s",
                        self.network,
                        self._describe(seen),
                        exc,
                        delay,
                    )
                newer: SeenT | None = None
                with trio.move_on_after(delay):
                    newer = await self._mailbox.take()
                seen = newer or seen
