"""The broker-level node methods: subscriptions (WebSocket only) and polled filters.

They are served by the broker itself, on top of the chain events, for every adapter alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import msgspec

from adapters.base import is_evm
from broker.dispatch import CallContext, Dispatcher, Handler
from broker.errors import MethodNotFound, SubscriptionsNeedWebSocket

if TYPE_CHECKING:
    from broker.filters import FilterRegistry
    from broker.subscriptions import SubscriptionHub


#: The broker's methods of the EVM profile (subscriptions and polled filters).
EVM_STREAM_METHODS: Final = frozenset(
    {
        "eth_subscribe",
        "eth_unsubscribe",
        "eth_newFilter",
        "eth_newBlockFilter",
        "eth_getFilterChanges",
        "eth_getFilterLogs",
        "eth_uninstallFilter",
    }
)


def _decode(params: msgspec.Raw) -> Any:
    return msgspec.json.decode(params)


def install(dispatcher: Dispatcher, hub: SubscriptionHub, filters: FilterRegistry) -> None:
    """Serve ``eth_subscribe``, ``eth_unsubscribe`` and the filter methods on the EVM chains, and
    the subscribe methods of the other chain families on theirs."""

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
        return filters.new_log_filter(ctx.api_key, ctx.network.chain, params)

    async def new_block_filter(ctx: CallContext, params: msgspec.Raw) -> Any:
        return filters.new_block_filter(ctx.api_key, ctx.network.chain)

    async def filter_changes(ctx: CallContext, params: msgspec.Raw) -> Any:
        return filters.changes(ctx.api_key, params)

    async def filter_logs(ctx: CallContext, params: msgspec.Raw) -> Any:
        return await filters.logs(ctx.api_key, params)

    async def uninstall_filter(ctx: CallContext, params: msgspec.Raw) -> Any:
        return filters.uninstall(ctx.api_key, params)

    # The EVM profile: served on the chains of the eip155 namespace only.
    evm: dict[str, Handler] = {
        "eth_subscribe": subscribe,
        "eth_unsubscribe": unsubscribe,
        "eth_newFilter": new_filter,
        "eth_newBlockFilter": new_block_filter,
        "eth_getFilterChanges": filter_changes,
        "eth_getFilterLogs": filter_logs,
        "eth_uninstallFilter": uninstall_filter,
    }

    async def evm_call(ctx: CallContext, chain: str, method: str, params: msgspec.Raw) -> Any:
        handler = evm.get(method)
        if handler is None or not is_evm(chain):
            raise MethodNotFound(method)
        return await handler(ctx, params)

    def evm_methods(chain: str) -> frozenset[str]:
        return EVM_STREAM_METHODS if is_evm(chain) else frozenset()

    dispatcher.add_fallback(evm_call, evm_methods)
