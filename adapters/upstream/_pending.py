"""Following the upstreams' pools: ``eth_subscribe ["newPendingTransactions", true]``.

One WebSocket, on the first upstream (in config order) with a ``ws`` URL whose node takes the
subscription, reporting each transaction as it is announced; when it fails or the node refuses,
the next one, with backoff between rounds. A node that offers only hashes (it ignores ``true``)
feeds the hash subscribers alone: a whole-transaction subscriber is never sent a bare hash.

Each serving process keeps its own subscription (pending transactions do not travel through
Redis), so it is opened only where dapps are served, never in a worker.
"""

from __future__ import annotations

import logging
from typing import Final

import msgspec
import trio
import trio_websocket

from adapters.backoff import Backoff
from adapters.evm.blocks import PendingHandler, PendingTransaction

from ._options import UpstreamOptions, endpoint_label
from .websocket import WS_ERRORS, connect, message_decoder, open_stream, subscribe

log = logging.getLogger(__name__)

_SUBSCRIBE: Final = (
    b'{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newPendingTransactions",true]}'
)


class _Transaction(msgspec.Struct):
    hash: str


#: A reply or a notification, read as the heads' WebSocket reads them.
_message: Final = message_decoder
_hash_or_transaction: Final = msgspec.json.Decoder(str | _Transaction)


_FAILURES: Final = (*WS_ERRORS, trio.TooSlowError, msgspec.ValidationError)


class PendingFollower:
    """Reports the transactions the upstreams announce (see the module docstring)."""

    def __init__(self, network: str, options: UpstreamOptions) -> None:
        self.network = network
        self.options = options

    async def serve(
        self,
        on_transaction: PendingHandler,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        task_status.started()
        backoff = Backoff(self.options.reconnect_base, self.options.reconnect_max)
        while True:
            for index, endpoint in enumerate(self.options.upstreams):
                if endpoint.ws is None:
                    continue
                label = endpoint_label(index, endpoint.ws)
                try:
                    await self._follow(endpoint.ws, label, on_transaction, backoff)
                except* _FAILURES as group:
                    log.warning(
                        "%s: newPendingTransactions over %s: %s",
                        self.network,
                        label,
                        "; ".join(str(e) or type(e).__name__ for e in group.exceptions),
                    )
            await trio.sleep(backoff.failed())

    async def _follow(
        self, url: str, label: str, on_transaction: PendingHandler, backoff: Backoff
    ) -> None:
        async with trio.open_nursery() as nursery:  # runs trio-websocket's reader task
            ws, stream = await connect(
                nursery, url, connect_timeout=self.options.connect_timeout, opener=open_stream
            )
            try:
                await subscribe(
                    ws,
                    _SUBSCRIBE,
                    1,
                    name="newPendingTransactions",
                    reply_within=self.options.request_timeout,
                )
                backoff.succeeded()
                log.info("%s: following newPendingTransactions over %s", self.network, label)
                await self._read(ws, label, on_transaction)
            finally:
                with trio.CancelScope(shield=True):
                    await stream.aclose()
                nursery.cancel_scope.cancel()

    async def _read(
        self, ws: trio_websocket.WebSocketConnection, label: str, on_transaction: PendingHandler
    ) -> None:
        hashes_only = False
        while True:
            message = _message.decode(await ws.get_message())
            if message.params is None:
                continue
            raw = message.params.result
            found = _hash_or_transaction.decode(raw)
            if isinstance(found, str):
                if not hashes_only:
                    hashes_only = True
                    log.warning(
                        "%s: %s announces hashes only: whole-transaction subscribers get none",
                        self.network,
                        label,
                    )
                on_transaction(PendingTransaction(bytes(raw), None))
            else:
                on_transaction(PendingTransaction(msgspec.json.encode(found.hash), bytes(raw)))
