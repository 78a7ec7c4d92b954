"""The broker-level node methods: every chain family's subscriptions (WebSocket only: the EVM
profile's ``eth_subscribe``, Solana's PubSub) and the EVM profile's polled filters.

They are served by the broker itself, on top of the chain events, for every adapter alike.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

import msgspec

from adapters.evm.subscriptions import EvmSubscriptions
from broker.rpc.dispatch import CallContext, Dispatcher
from schemas.errors import MethodNotFound, SubscriptionsNeedWebSocket

if TYPE_CHECKING:
    from adapters.evm.filters import FilterRegistry
    from broker.events.subscriptions import SubscriptionHub


def _decode(params: msgspec.Raw) -> Any:
    return msgspec.json.decode(params)


# The handlers below but _filter_logs do not checkpoint: answered from memory, each in a call
# that has one (a WebSocket call's own task, an HTTP request's read).
async def _new_filter(filters: FilterRegistry, ctx: CallContext, params: msgspec.Raw) -> Any:
    return filters.new_log_filter(ctx.api_key, ctx.network.chain, params)


async def _new_block_filter(filters: FilterRegistry, ctx: CallContext, params: msgspec.Raw) -> Any:
    return filters.new_block_filter(ctx.api_key, ctx.network.chain)


async def _filter_changes(filters: FilterRegistry, ctx: CallContext, params: msgspec.Raw) -> Any:
    return filters.changes(ctx.api_key, params)


async def _filter_logs(filters: FilterRegistry, ctx: CallContext, params: msgspec.Raw) -> Any:
    return await filters.logs(ctx.api_key, params)


async def _uninstall_filter(filters: FilterRegistry, ctx: CallContext, params: msgspec.Raw) -> Any:
    return filters.uninstall(ctx.api_key, params)


_FilterHandler = Callable[["FilterRegistry", CallContext, msgspec.Raw], Awaitable[Any]]
#: The polled filters of the EVM profile, served where its subscriptions are (on the chains whose
#: adapter reports blocks).
_FILTER_HANDLERS: Final[Mapping[str, _FilterHandler]] = {
    "eth_newFilter": _new_filter,
    "eth_newBlockFilter": _new_block_filter,
    "eth_getFilterChanges": _filter_changes,
    "eth_getFilterLogs": _filter_logs,
    "eth_uninstallFilter": _uninstall_filter,
}
FILTER_METHODS: Final = frozenset(_FILTER_HANDLERS)


def filter_methods(hub: SubscriptionHub, chain: str) -> frozenset[str]:
    """The polled filter methods served on ``chain``: on the EVM profile's chains only."""
    return FILTER_METHODS if isinstance(hub.families.get(chain), EvmSubscriptions) else frozenset()


def served_methods(hub: SubscriptionHub, chain: str) -> frozenset[str]:
    """The methods the broker itself serves on ``chain``: its family's subscribe and unsubscribe
    methods, and the polled filters beside the EVM profile's."""
    return hub.family_methods(chain) | filter_methods(hub, chain)


def install(dispatcher: Dispatcher, hub: SubscriptionHub, filters: FilterRegistry) -> None:
    """Serve each chain family's subscribe and unsubscribe methods on its chains, and the filter
    methods beside the EVM profile's."""

    async def family_call(ctx: CallContext, chain: str, method: str, params: msgspec.Raw) -> Any:
        family = hub.families.get(chain)
        if family is None or (
            method not in family.methods and method not in family.unsubscribe_methods()
        ):
            raise MethodNotFound(method)
        if ctx.peer is None:
            raise SubscriptionsNeedWebSocket()
        if method in family.methods:
            if ctx.access is not None:
                ctx.access.check_subscriptions(hub.held(ctx.peer))
            return await hub.subscribe(ctx.peer, chain, method, _decode(params))
        return hub.unsubscribe(ctx.peer, chain, method, _decode(params))

    dispatcher.add_fallback(family_call, hub.family_methods)

    def chain_filter_methods(chain: str) -> frozenset[str]:
        return filter_methods(hub, chain)

    async def filter_call(ctx: CallContext, chain: str, method: str, params: msgspec.Raw) -> Any:
        handler = _FILTER_HANDLERS.get(method)
        if handler is None or method not in filter_methods(hub, chain):
            raise MethodNotFound(method)
        return await handler(filters, ctx, params)

    dispatcher.add_fallback(filter_call, chain_filter_methods)
