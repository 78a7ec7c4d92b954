"""Following the upstreams' chain head: ``newHeads`` over WebSocket, else polling over HTTP.

Two tasks, as every upstream follower (:mod:`._ws_follow`). The *source* task keeps one
``eth_subscribe ["newHeads"]`` open on the first healthy upstream that has a ``ws`` URL, moves back
to a better one when it is healthy again, and, while no WebSocket is up, polls ``eth_blockNumber``
over HTTP every ``poll_interval``. It never waits on the broker: it drops each head into a one-slot
mailbox where a newer head replaces an older one. The *report* task takes the newest head, fetches
its logs (one ``eth_getLogs {blockHash}``) and hands the block to the broker. Heads skipped that
way, or missed while a connection was down, are not lost: the broker's head tracker asks
:meth:`UpstreamAdapter.fetch_block` for every missing parent.

After a reconnect or a switch of upstream the source reports the node's current head at once, so
gaps are filled without waiting for the next block. Until the new source reaches the height already
reported, its lower heads are ignored: a node that lags behind must not look like a reorganisation.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Final

import msgspec

from adapters.evm.blocks import BlockHandler
from schemas.errors import RpcError

from ._blocks import BadUpstreamData, Header
from ._fetching import BlockFetcher
from ._forwarding import Forwarder
from ._options import UpstreamOptions
from ._ws_follow import SUBSCRIBE_ID, WsFeed, WsFollower
from .websocket import StreamOpener, open_stream

log = logging.getLogger(__name__)

_str_decoder: Final = msgspec.json.Decoder(str)


@dataclass(frozen=True, slots=True)
class _Hint:
    """A head to report: a ``newHeads`` header, or a height seen by polling (None: latest)."""

    epoch: int
    source: int | None
    header: Header | None = None
    number: int | None = None


class HeadFollower(WsFollower[_Hint, BlockHandler]):
    """Reports the head blocks of one network to the broker."""

    feed = WsFeed(
        subscribe=(
            b'{"jsonrpc":"2.0","id":%d,"method":"eth_subscribe","params":["newHeads"]}'
            % SUBSCRIBE_ID
        ),
        request_name="eth_subscribe newHeads",
        notification="eth_subscription",
        name="newHeads",
        following="newHeads",
        fallback="polling",
        polled="eth_blockNumber",
    )
    report_errors = (RpcError, BadUpstreamData)
    options: UpstreamOptions

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
        super().__init__(network, forwarder, options, open_ws_stream=open_ws_stream)
        self.fetcher = fetcher
        self._epoch = 0
        self._floor: int | None = None  # heads below it are ignored in this epoch
        self._reported = -1  # the height of the last block reported
        self._last_polled = -1

    # -- the source task ------------------------------------------------------------------------

    def _new_epoch(self, source: int | None) -> None:
        self._epoch += 1
        self._floor = self._reported if self._reported >= 0 else None
        self._mailbox.put(_Hint(self._epoch, source))  # the source's current head, at once

    async def _on_subscribed(self, index: int) -> None:
        self._new_epoch(index)

    def _on_notification(self, index: int, result: msgspec.Raw) -> None:
        try:
            header = Header.from_json(result)
        except BadUpstreamData as exc:
            log.warning("%s: ignoring a bad newHeads header: %s", self.network, exc)
            return
        self._mailbox.put(_Hint(self._epoch, index, header=header))

    def _on_polling(self) -> None:
        self._new_epoch(None)

    async def _poll(self) -> None:
        number = int(_str_decoder.decode(await self.forwarder.call("eth_blockNumber", b"[]")), 16)
        if number > self._reported and number != self._last_polled:
            self._last_polled = number
            self._mailbox.put(_Hint(self._epoch, None, number=number))

    # -- the report task ------------------------------------------------------------------------

    def _describe(self, seen: _Hint) -> str:
        return "head"

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
