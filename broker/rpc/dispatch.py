"""From a frame or body to its reply: decoding, routing each call, mapping errors.

This is the one place where :class:`schemas.errors.RpcError` becomes a JSON-RPC error object, and
where an unexpected exception becomes -32603 (logged, never shown to the client).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast

from msgspec import Raw

from broker.rpc.chain_calls import CachedChainCalls
from broker.rpc.networks import Network, Networks
from broker.rpc.plugin_calls import call_adapter, call_adapter_now, is_fatal
from broker.rpc.response_cache import Recent, RecentBodies
from schemas.errors import InternalError, MethodNotFound, RpcError
from schemas.jsonrpc import (
    NULL_ID,
    BadCall,
    Call,
    Item,
    Message,
    batch_of_results,
    decode_call,
    decode_message,
    encoded_result_bytes,
    error_bytes,
    join_batch,
    result_bytes,
)

if TYPE_CHECKING:
    from adapters.base import AccountAdapter, CacheEpoch
    from broker.metrics import Metrics

log = logging.getLogger(__name__)


T = TypeVar("T")


class Slot(Generic[T]):
    """The typed place of one feature's state on a connection (its subscriptions, its resume
    state): the feature that defines the slot is the only one that reads or writes it."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<Slot {self.name}>"


class Slots:
    """What features keep per connection, each in its own :class:`Slot` (made on first use: an
    idle connection holds none)."""

    __slots__ = ("_values",)

    def __init__(self) -> None:
        self._values: dict[Slot[Any], Any] = {}

    def get(self, slot: Slot[T]) -> T | None:
        # Only set() writes here, with a value of the slot's type.
        return cast("T | None", self._values.get(slot))

    def set(self, slot: Slot[T], value: T) -> None:
        self._values[slot] = value

    def pop(self, slot: Slot[T]) -> T | None:
        return cast("T | None", self._values.pop(slot, None))


class Peer(Protocol):
    """What a handler may use of the connection a call came on (WebSocket connections only)."""

    @property
    def slots(self) -> Slots: ...

    @property
    def open(self) -> bool: ...

    def send_message(self, payload: bytes) -> bool: ...

    def send_frame(self, frame: bytes) -> bool: ...

    def frame_sender(self, *, held: bool = False) -> Callable[[bytes], bool]: ...


class Access(Protocol):
    """A key's rules and limits for one request or connection (:mod:`broker.access`)."""

    async def admit(self, calls: int) -> tuple[int, RpcError | None]:
        """How many of ``calls`` may run now, and the error for the others."""
        ...

    def check_method(self, method: str) -> None:
        """Raise :class:`~schemas.errors.MethodNotAllowed` for a method the key may not call."""

    def check_subscriptions(self, held: int) -> None:
        """Raise :class:`~schemas.errors.OverLimit` when a connection holding ``held`` may not
        subscribe again."""


@dataclass(slots=True)
class CallContext:
    """Who is calling, on which network, over which connection (None over HTTP)."""

    network: Network
    api_key: str
    origin: str
    peer: Peer | None = None
    #: Accounts the call may sign with: a session scope's accounts inside ``wallet_invokeMethod``;
    #: None for a direct call (which may sign only on a network that allows direct signing).
    accounts: tuple[str, ...] | None = None
    #: The key's rules and limits; None for a key without a ``[keys.*]`` table.
    access: Access | None = None
    #: The client profile the answers follow (:mod:`broker.sessions.client_profiles`): SPEC's by default,
    #: MetaMask's for ``?client=metamask`` or a key configured with ``client = "metamask"``.
    client: str = "spec"


Handler = Callable[[CallContext, Raw], Awaitable[Any]]
ChainCall = Callable[[CallContext, str, str, Raw], Awaitable[Any]]


class Dispatcher:
    """Routes calls: broker-level handlers first, then the network's adapters."""

    def __init__(
        self,
        networks: Networks,
        metrics: Metrics,
        *,
        chain_calls: bool = True,
        cache: CachedChainCalls | None = None,
    ) -> None:
        self._networks = networks
        self.cache = cache or CachedChainCalls(None)
        self._recent = RecentBodies()
        self._metrics = metrics
        self._chain_calls = chain_calls
        self._handlers: dict[str, Handler] = {}
        self._fallbacks: list[ChainCall] = []
        self._fallback_methods: list[Callable[[str], frozenset[str]]] = []

    def register(self, method: str, handler: Handler) -> None:
        """Serve ``method`` with ``handler`` instead of passing it to the chain adapter."""
        self._handlers[method] = handler

    def add_fallback(self, fallback: ChainCall, methods: Callable[[str], frozenset[str]]) -> None:
        """Try ``fallback`` for a method the chain adapter does not serve (e.g. account methods).

        A fallback raises :class:`MethodNotFound` for methods it does not serve either;
        ``methods(chain)`` names those it serves (for :meth:`methods`).
        """
        self._fallbacks.append(fallback)
        self._fallback_methods.append(methods)

    def methods(self, network: Network) -> frozenset[str]:
        """Every method a call on ``network`` is answered for (others get -32601)."""
        names = set(self._handlers)
        if self._chain_calls:
            names |= network.adapter.methods(network.chain)
            for served in self._fallback_methods:
                names |= served(network.chain)
        return frozenset(names)

    def account_adapters(self, chain: str) -> list[AccountAdapter]:
        accounts = self._networks.accounts_for(chain)
        return [] if accounts is None else [accounts]

    def answer(self, data: bytes, ctx: CallContext) -> bytes | Awaitable[bytes | None]:
        """:meth:`handle` for a caller without a key's access rules (they may refuse or delay a
        call), answering at once (bytes) when ``data`` is one request (not a batch, not a
        notification) whose answer the response cache holds, or whose chain adapter gives it
        without waiting (:meth:`~adapters.base.ChainAdapter.call_now`), counted as :meth:`handle`
        counts it."""
        chain = ctx.network.chain
        served = self._networks.by_chain(chain) if self._chain_calls else None
        epoch = None if served is None else self.cache.epoch_now(served.adapter, chain)
        call = None
        if epoch is not None:
            if data[:1] == b"[":
                return self._answer_batch(data, ctx, chain, epoch)
            started = time.perf_counter()
            recent = self._recent.get(data)
            if recent is None or recent.key[0] != chain:
                call = decode_call(data)
                if call is None:
                    return self._handle_message(data, ctx)
                if call.id is None or call.method in self._handlers:
                    return self._reply(call, ctx)
                recent = Recent((chain, call.method, bytes(call.params)), call.id, b"", b"")
            answer = self.cache.answer_now(recent.key, epoch)
            if answer is not None:
                if answer is not recent.answer:
                    reply = encoded_result_bytes(recent.raw_id, answer)
                    recent = Recent(recent.key, recent.raw_id, answer, reply)
                    self._recent.keep(data, recent)
                self._metrics.observe_request(recent.key[1], time.perf_counter() - started, None)
                return recent.reply
            if call is not None:
                return self._reply(call, ctx)
            return self.handle(data, ctx)
        call = decode_call(data)
        if call is None:
            return self._handle_message(data, ctx)
        if (
            served is not None
            and call.id is not None
            and call.method not in self._handlers
            and call.method in served.adapter.methods(chain)
        ):
            answered = self._reply_now(call, call.id, served)
            if answered is not None:
                return answered
        return self._reply(call, ctx)

    def _answer_batch(
        self, data: bytes, ctx: CallContext, chain: str, epoch: CacheEpoch
    ) -> bytes | Awaitable[bytes | None]:
        """A batch answered at once when the response cache holds the answer to each of its calls
        (each a request with an id for the chain); else answered as :meth:`handle` answers it."""
        started = time.perf_counter()
        try:
            message = decode_message(data)
        except RpcError:
            return self._handle_message(data, ctx)  # it answers the error
        results: list[tuple[bytes, bytes | Raw]] = []
        methods = []
        for item in message.items:
            if not isinstance(item, Call) or item.id is None or item.method in self._handlers:
                return self._reply_message(message, ctx)
            key = (chain, item.method, bytes(item.params))
            answer = self.cache.answer_now(key, epoch, count=False)
            if answer is None:
                return self._reply_message(message, ctx)
            results.append((item.id, answer))
            methods.append(item.method)
        self.cache.count_hits(len(results))
        reply = batch_of_results(results)
        each = (time.perf_counter() - started) / len(results)
        for method in methods:
            self._metrics.observe_request(method, each, None)
        return reply

    def _reply_now(self, call: Call, raw_id: bytes, network: Network) -> bytes | None:
        """The reply to ``call`` if ``network``'s adapter answers it without waiting; None
        otherwise."""
        started = time.perf_counter()
        method = call.method
        try:
            result = call_adapter_now(network, method, call.params)
        except RpcError as exc:
            self._metrics.observe_request(method, time.perf_counter() - started, exc)
            return error_bytes(raw_id, exc)
        if result is None:
            return None
        self._metrics.observe_request(method, time.perf_counter() - started, None)
        return encoded_result_bytes(raw_id, result)

    def handle(self, data: bytes, ctx: CallContext) -> Awaitable[bytes | None]:
        """The reply to one frame or body (awaited); None when nothing is to be sent
        (notifications only)."""
        call = decode_call(data) if ctx.access is None else None
        if call is not None:  # the usual single call, with no key's limit to count it against
            return self._reply(call, ctx)
        return self._handle_message(data, ctx)

    async def _handle_message(self, data: bytes, ctx: CallContext) -> bytes | None:
        try:
            message = decode_message(data)
        except RpcError as exc:
            return error_bytes(NULL_ID, exc)
        return await self._reply_message(message, ctx)

    async def _reply_message(self, message: Message, ctx: CallContext) -> bytes | None:
        admitted, refusal = len(message.items), None
        if ctx.access is not None:  # a batch counts as its number of calls
            admitted, refusal = await ctx.access.admit(admitted)
        if not message.batch:
            if refusal is not None and admitted == 0:
                return _refused(message.items[0], refusal)
            return await self._reply(message.items[0], ctx)
        replies = []
        for index, item in enumerate(message.items):
            if index < admitted or refusal is None:
                reply = await self._reply(item, ctx)
            else:
                reply = _refused(item, refusal)
            if reply is not None:
                replies.append(reply)
        return join_batch(replies) if replies else None

    async def _reply(self, item: Item, ctx: CallContext) -> bytes | None:
        if isinstance(item, BadCall):
            return error_bytes(item.id, item.error)
        started = time.perf_counter()
        method = item.method
        error: RpcError | None = None
        # What call() and call_chain() do, written out: the usual chain call is then one coroutine
        # (this one) around the adapter's, not four (a frame each, on every request).
        try:
            if ctx.access is not None:
                ctx.access.check_method(method)
            handler = self._handlers.get(method)
            if handler is not None:
                result = await handler(ctx, item.params)
            elif not self._chain_calls:
                raise MethodNotFound(method)
            else:
                chain = ctx.network.chain
                network = self._networks.by_chain(chain)
                if network is not None and method in network.adapter.methods(chain):
                    cache = self.cache
                    if cache.epoch_now(network.adapter, chain) is None:  # nothing cached here
                        result = await call_adapter(network, method, item.params)
                    else:
                        result = await cache.call(network, method, item.params)
                else:
                    result = await self._call_fallbacks(ctx, chain, method, item.params)
            reply = None if item.id is None else result_bytes(item.id, result)
        except RpcError as exc:
            error = exc
        except BaseException as exc:
            # A broker handler's fault (or an account adapter's, through a fallback), or a
            # result it returned that does not encode: this call's error, nobody else's.
            if is_fatal(exc):
                raise
            log.exception("%s failed (network %s)", method, ctx.network.name)
            error = InternalError(f"internal error ({method})")
        self._metrics.observe_request(method, time.perf_counter() - started, error)
        if item.id is None:
            return None
        if error is not None:
            return error_bytes(item.id, error)
        return reply

    async def call(self, ctx: CallContext, method: str, params: Raw) -> Any:
        """Run one call and return its result (raises ``RpcError``)."""
        if ctx.access is not None:
            ctx.access.check_method(method)
        handler = self._handlers.get(method)
        if handler is not None:
            return await handler(ctx, params)
        if not self._chain_calls:
            raise MethodNotFound(method)
        return await self.call_chain(ctx, ctx.network.chain, method, params)

    async def call_chain(self, ctx: CallContext, chain: str, method: str, params: Raw) -> Any:
        """Run a chain method on ``chain``: its chain adapter, then the fallbacks."""
        network = self._networks.by_chain(chain)
        if network is not None and method in network.adapter.methods(chain):
            return await self.cache.call(network, method, params)
        return await self._call_fallbacks(ctx, chain, method, params)

    async def _call_fallbacks(self, ctx: CallContext, chain: str, method: str, params: Raw) -> Any:
        for fallback in self._fallbacks:
            try:
                return await fallback(ctx, chain, method, params)
            except MethodNotFound:
                continue
        raise MethodNotFound(method)


def _refused(item: Item, refusal: RpcError) -> bytes | None:
    """The reply to a call its key's limit refused (none for a notification)."""
    if isinstance(item, BadCall):
        return error_bytes(item.id, item.error)
    return None if item.id is None else error_bytes(item.id, refusal)
