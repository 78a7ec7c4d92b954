"""Whole blocks for the ingestion side: a header and its logs, from the upstreams.

One ``eth_getLogs {blockHash}`` per block gives every log of it (shared by all log subscribers). A
block the answering upstream does not know is asked of the other healthy upstreams before it is
declared unknown: after a failover they may lag or lead each other by a block or two.
"""

from __future__ import annotations

import logging
from typing import Final

import msgspec

from adapters.evm.blocks import ChainBlock, LogRecord
from schemas.errors import LimitExceeded, RpcError, WireError

from ._blocks import Header, log_records
from ._forwarding import Forwarder

log = logging.getLogger(__name__)

_NULL: Final = b"null"
_encode: Final = msgspec.json.Encoder().encode


class BlockFetcher:
    """Reads blocks (header + logs) of one network through its :class:`Forwarder`."""

    def __init__(self, network: str, forwarder: Forwarder, max_block_logs: int) -> None:
        self.network = network
        self.forwarder = forwarder
        self.max_block_logs = max_block_logs
        #: Blocks returned without their logs (more than ``max_block_logs``), for statistics.
        self.blocks_without_logs = 0

    async def by_hash(self, block_hash: str, *, prefer: int | None = None) -> ChainBlock | None:
        """The block with ``block_hash`` (canonical or not), None if no upstream knows it."""
        params = _encode([block_hash, False])
        found, index = await self.forwarder.call_tracked(
            "eth_getBlockByHash", params, prefer=prefer
        )
        if bytes(found) == _NULL:
            for other in self.forwarder.board.order():
                if other == index or not self.forwarder.board.usable(other):
                    continue
                try:
                    found, index = await self.forwarder.call_tracked(
                        "eth_getBlockByHash", params, only=other
                    )
                except RpcError:
                    continue
                if bytes(found) != _NULL:
                    break
            else:
                return None
        return await self.complete(Header.from_json(found), prefer=index)

    async def by_number(
        self, number: int | None, *, prefer: int | None = None
    ) -> ChainBlock | None:
        """The canonical block at ``number`` (None: the latest) on the preferred upstream."""
        tag = "latest" if number is None else hex(number)
        found, index = await self.forwarder.call_tracked(
            "eth_getBlockByNumber", _encode([tag, False]), prefer=prefer
        )
        if bytes(found) == _NULL:
            return None
        return await self.complete(Header.from_json(found), prefer=index)

    async def complete(self, header: Header, *, prefer: int | None = None) -> ChainBlock | None:
        """``header`` with its logs; None when the upstreams no longer know the block."""
        params = _encode([{"blockHash": header.hash}])
        try:
            found = await self.forwarder.call(
                "eth_getLogs", params, prefer=prefer, max_results=self.max_block_logs
            )
        except LimitExceeded:
            self.blocks_without_logs += 1
            log.error(
                "%s: block %d (%s) has more than %d logs (max_block_logs); "
                "its logs are not delivered to subscribers",
                self.network,
                header.number,
                header.hash,
                self.max_block_logs,
            )
            return header.chain_block(())
        except WireError as exc:
            # geth answers "unknown block" for a block it dropped meanwhile (a reorganisation).
            log.info(
                "%s: logs of block %d (%s) unavailable: %s",
                self.network,
                header.number,
                header.hash,
                exc.message,
            )
            return None
        logs: tuple[LogRecord, ...] = log_records(bytes(found), header.hash)
        return header.chain_block(logs)
