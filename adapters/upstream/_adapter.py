"""The upstream chain adapter: a network served by JSON-RPC nodes the operator runs or rents."""

from __future__ import annotations

import logging
from typing import ClassVar

import msgspec
import trio

from adapters._options import decode_options
from adapters.base import IngestionStatistics, NetworkChainAdapter, NetworkSpec
from adapters.evm.blocks import BlockHandler, ChainBlock, PendingHandler
from adapters.evm.chain_adapter import EvmChainAdapter
from schemas.errors import ConfigError, InvalidParams, LimitExceeded, MethodNotFound

from ._fetching import BlockFetcher
from ._forwarding import ChainCheck, Forwarder, evm_chain_check
from ._heads import HeadFollower
from ._health import UpstreamStatus
from ._logs_query import check_logs_params
from ._options import BaseUpstreamOptions, UpstreamOptions, expected_chain_id
from ._pending import PendingFollower
from ._transport import HttpUpstream

log = logging.getLogger(__name__)


class NoUsableUpstream(ConfigError):
    """At start, no upstream of the network answered with the network's chain id."""


class ForwardingAdapter(NetworkChainAdapter):
    """What every upstream adapter does alike, whichever family its nodes speak: node methods
    sent to the configured upstreams by one :class:`Forwarder`, each upstream's chain confirmed
    at :meth:`start` (the family's :class:`ChainCheck`), their health in :meth:`statistics`."""

    #: Raised by :meth:`start` when no upstream passes the chain check.
    unusable: ClassVar[type[ConfigError]]

    def __init__(self, spec: NetworkSpec, options: BaseUpstreamOptions, check: ChainCheck) -> None:
        super().__init__(spec)
        upstreams = [
            HttpUpstream(index, endpoint, options)
            for index, endpoint in enumerate(options.upstreams)
        ]
        self.forwarder = Forwarder(spec.name, check, upstreams, options)
        self._methods = options.methods

    async def start(self) -> None:
        """Confirm each upstream's chain (concurrently, each within ``probe_timeout``)."""
        problems = await self.forwarder.first_probes()
        if problems is not None:
            raise self.unusable(
                f"networks.{self.spec.name}: no upstream is usable for {self.spec.chain}: "
                + problems
            )

    async def aclose(self) -> None:
        await self.forwarder.aclose()

    def methods(self, chain: str) -> frozenset[str]:
        return self._methods if chain == self.spec.chain else frozenset()

    def statistics(self) -> list[UpstreamStatus]:
        """Each upstream's health, in priority order."""
        return self.forwarder.statistics()


class UpstreamAdapter(ForwardingAdapter, EvmChainAdapter):
    """Forwards node methods to the configured upstreams and follows their chain head.

    Built from a ``[networks.<name>]`` table (see :class:`UpstreamOptions`); :meth:`start` checks
    every upstream's ``eth_chainId`` against the network's chain and leaves out the ones that differ.
    """

    name: ClassVar[str] = "upstream"
    unusable: ClassVar[type[ConfigError]] = NoUsableUpstream

    def __init__(self, spec: NetworkSpec) -> None:
        self.options = decode_options(spec, UpstreamOptions, self.name)
        self.chain_id = expected_chain_id(spec)
        super().__init__(spec, self.options, evm_chain_check(self.chain_id))
        self.fetcher = BlockFetcher(spec.name, self.forwarder, self.options.max_block_logs)

    def ingestion_statistics(self, chain: str) -> IngestionStatistics | None:
        """What fetching blocks for ingestion counted (None for a chain not served here)."""
        if chain != self.spec.chain:
            return None
        return IngestionStatistics(blocks_without_logs=self.fetcher.blocks_without_logs)

    async def call(self, chain: str, method: str, params: msgspec.Raw) -> msgspec.Raw:
        """Forward one call; the upstream's ``result`` comes back as the node encoded it."""
        if chain != self.spec.chain or method not in self._methods:
            raise MethodNotFound(method)
        data = bytes(params)
        if method != "eth_getLogs":
            return await self.forwarder.call(method, data)
        check_logs_params(data)
        with trio.move_on_after(self.options.logs_timeout):
            return await self.forwarder.call(method, data, max_results=self.options.max_logs)
        raise LimitExceeded("query timeout exceeded")

    async def fetch_block(
        self, chain: str, *, number: int | None = None, block_hash: str | None = None
    ) -> ChainBlock | None:
        """The block with ``block_hash``, or the canonical one at ``number``, with its logs."""
        if block_hash is not None:
            return await self.fetcher.by_hash(block_hash)
        if number is None:
            raise InvalidParams("fetch_block needs a number or a block hash")
        return await self.fetcher.by_number(number)

    async def fetch_head(self, chain: str) -> ChainBlock | None:
        """The upstreams' latest block, with its logs."""
        return await self.fetcher.by_number(None)

    async def serve_ingestion(
        self,
        chain: str,
        on_block: BlockHandler,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Report head blocks (``newHeads`` over WebSocket, else HTTP polling) until cancelled."""
        follower = HeadFollower(self.spec.name, self.forwarder, self.fetcher, self.options)
        await follower.serve(on_block, task_status=task_status)

    def follows_pending_transactions(self, chain: str) -> bool:
        """Where an upstream has a WebSocket: its node may offer ``newPendingTransactions``."""
        return any(endpoint.ws is not None for endpoint in self.options.upstreams)

    async def serve_pending_transactions(
        self,
        chain: str,
        on_transaction: PendingHandler,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Report the transactions the upstreams announce (:mod:`._pending`) until cancelled."""
        follower = PendingFollower(self.spec.name, self.options)
        await follower.serve(on_transaction, task_status=task_status)
