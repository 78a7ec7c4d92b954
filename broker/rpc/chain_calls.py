"""Chain calls through the response cache: answered from :class:`ResponseStore` while true,
identical concurrent calls coalesced into one (the I/O shell of :mod:`broker.rpc.response_cache`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio
from msgspec import Raw

from adapters.base import CacheEpoch, ChainAdapter, Lifetime
from broker.rpc.plugin_calls import call_adapter
from broker.rpc.response_cache import HeadEpochs, Key, ResponseStore

if TYPE_CHECKING:
    from broker.rpc.networks import Network


class CachedChainCalls:
    """Calls a chain adapter, keeping the answers its :meth:`~ChainAdapter.answer_lifetime` allows.

    ``store`` None turns the cache off (every call reaches the adapter).
    """

    def __init__(self, store: ResponseStore | None) -> None:
        self.store = store
        self.epochs = HeadEpochs()
        self._inflight: dict[Key, trio.Event] = {}

    def _epoch(self, adapter: ChainAdapter, chain: str) -> CacheEpoch | None:
        return adapter.cache_epoch(chain) or self.epochs.epoch(chain)

    def epoch_now(self, adapter: ChainAdapter, chain: str) -> CacheEpoch | None:
        """The epoch answers on ``chain`` are looked up in; None when nothing is cached there."""
        return None if self.store is None else self._epoch(adapter, chain)

    def answer_now(self, key: Key, epoch: CacheEpoch, *, count: bool = True) -> bytes | None:
        """The stored answer under ``key`` if one is true in ``epoch`` (:meth:`epoch_now`), counted
        as a hit (unless ``count`` is false: :meth:`count_hits` then counts the hits served);
        None otherwise, counted as nothing: the call then goes through :meth:`call`."""
        if self.store is None:
            return None
        return self.store.get(key, epoch, count_miss=False, count_hit=count)

    def count_hits(self, hits: int) -> None:
        if self.store is not None:
            self.store.count_hits(hits)

    async def call(self, network: Network, method: str, params: Raw) -> Raw:
        """``network``'s answer to ``method`` (checked JSON, :func:`call_adapter`), from the
        store while it holds a true one."""
        adapter, chain = network.adapter, network.chain
        store = self.store
        epoch = self._epoch(adapter, chain) if store is not None else None
        if store is None or epoch is None:
            return await call_adapter(network, method, params)
        raw = bytes(params)
        key = (chain, method, raw)
        # A stored answer carries its own lifetime: the adapter is asked only on a miss.
        hit = store.get(key, epoch)
        if hit is not None:
            return Raw(hit)
        lifetime = adapter.answer_lifetime(chain, method, raw, epoch.head)
        if lifetime is Lifetime.NEVER:  # never coalesced either: sends must all reach the chain
            return await call_adapter(network, method, params)
        while (pending := self._inflight.get(key)) is not None:
            await pending.wait()  # the same call is under way: take its answer when it lands
            epoch = self._epoch(adapter, chain) or epoch
            hit = store.get(key, epoch)
            if hit is not None:
                return Raw(hit)
        done = self._inflight[key] = trio.Event()
        try:
            encoded = bytes(await call_adapter(network, method, params))
            store.put(key, encoded, adapter.answer_kept(chain, lifetime, encoded), epoch)
            return Raw(encoded)
        finally:
            del self._inflight[key]
            done.set()
