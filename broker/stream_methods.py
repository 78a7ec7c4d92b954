"""The broker-level node methods: subscriptions (WebSocket only) and polled filters.

They are served by the broker itself, on top of the chain events, for every adapter alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from broker.dispatch import CallContext, Dispatcher
from broker.errors import MethodNotFound, SubscriptionsNeedWebSocket

if TYPE_CHECKING:
    from broker.filters import FilterRegistry
    from broker.subscriptions import SubscriptionHub


def _decode(params: msgspec.Raw) -> Any:
    return msgspec.json.decode(params)


def install(dispatcher: Dispatcher, hub: SubscriptionHub, filters: FilterRegistry) -> None:
    """Register ``eth_subscribe``, ``eth_unsubscribe`` and the filter methods on ``dispatcher``,
    and the subscribe methods of the chain families (on their own networks only)."""

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
            return await hub.subscribe_family(ctx.peer, chain, method, _decode(params))
        return hub.unsubscribe_family(ctx.peer, chain, method, _decode(params))

    def family_methods(chain: str) -> frozenset[str]:
        family = hub.families.get(chain)
        if family is None:
            return frozenset()
        return frozenset(family.methods) | family.unsubscribe_methods()

    dispatcher.add_fallback(family_call, family_methods)

    async def subscribe(ctx: CallContext, params: msgspec.Raw) -> Any:
        if ctx.peer is None:
            raise SubscriptionsNeedWebSocket()
        if ctx.access is not None:
            ctx.access.check_subscriptions(hub.held(ctx.peer))
        return await hub.subscribe(ctx.peer, ctx.network.chain, _decode(params))

    async def unsubscribe(ctx: CallContext, params: msgspec.Raw) -> Any:
        if ctx.peer is None:
            raise SubscriptionsNeedWebSocket()
        args = _decode(params)
        sub_id = args[0] if isinstance(args, list) and args else None
        return hub.unsubscribe(ctx.peer, sub_id)

    async def new_filter(ctx: CallContext, params: msgspec.Raw) -> Any:
        return filters.new_log_filter(ctx.api_key, ctx.network.chain, _decode(params))

    async def new_block_filter(ctx: CallContext, params: msgspec.Raw) -> Any:
        return filters.new_block_filter(ctx.api_key, ctx.network.chain)

    async def filter_changes(ctx: CallContext, params: msgspec.Raw) -> Any:
        return filters.changes(ctx.api_key, _decode(params))

    async def filter_logs(ctx: CallContext, params: msgspec.Raw) -> Any:
        return await filters.logs(ctx.api_key, _decode(params))

    async def uninstall_filter(ctx: CallContext, params: msgspec.Raw) -> Any:
        return filters.uninstall(ctx.api_key, _decode(params))

    register = dispatcher.register
    register("eth_subscribe", subscribe)
    register("eth_unsubscribe", unsubscribe)
    register("eth_newFilter", new_filter)
    register("eth_newBlockFilter", new_block_filter)
    register("eth_getFilterChanges", filter_changes)
    register("eth_getFilterLogs", filter_logs)
    register("eth_uninstallFilter", uninstall_filter)
