"""A chain adapter's call, contained: whatever the plug-in returns or raises becomes a JSON result
or a JSON-RPC error of the one call that asked, never an exception in a task it does not own.

- A result is encoded (or, a ``msgspec.Raw``, checked: JSON text in UTF-8) here, at the adapter's
  edge, so that every path above (the response cache, sessions, HTTP and the WebSocket) holds
  bytes a client can parse. NaN and infinities, which msgspec would write as ``null``, are refused
  rather than turned into a lie.
- An exception other than :class:`~schemas.errors.RpcError` becomes :class:`AdapterFailed`
  (-32603 naming the adapter), logged once with the network and adapter names (never the call's
  params, which may carry what a dapp signs, nor the API key).
- A call that has not returned after its network's ``call_timeout`` is cancelled (-32603, "did not
  answer within").
- What stops the process or the task is not the plug-in's to turn into an answer: ``trio.Cancelled``
  (its connection ended, or the broker stops), ``KeyboardInterrupt`` and ``SystemExit`` (the
  operator's), ``GeneratorExit``. Every other ``BaseException`` a plug-in raises is its fault.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

import msgspec
import trio
from msgspec import Raw

from adapters.base import NOT_NOW
from schemas.errors import InternalError, RpcError

if TYPE_CHECKING:
    from adapters.base import ChainAdapter
    from broker.rpc.networks import Network

log = logging.getLogger(__name__)

#: Exceptions that pass through every boundary: they end a task or the process, not a call.
FATAL: Final = (trio.Cancelled, KeyboardInterrupt, SystemExit, GeneratorExit)
#: What passes through a plug-in's boundary: trio's cancellation and Ctrl-C, which trio may raise
#: at any checkpoint inside the plug-in's code. A ``SystemExit`` or ``GeneratorExit`` that leaves a
#: plug-in's call was raised by the plug-in (a library calling ``sys.exit()``, say): its fault,
#: answered as this call's error, never the end of the server.
PASSES_PLUGIN_BOUNDARY: Final = (trio.Cancelled, KeyboardInterrupt)

_encoder: Final = msgspec.json.Encoder()


class AdapterFailed(InternalError):
    """A plug-in failed a call (raised, returned what is not JSON, or did not answer in time)."""


def is_fatal(exc: BaseException) -> bool:
    """Whether ``exc`` (or a member of it, a group) must pass through a call's boundary."""
    if isinstance(exc, BaseExceptionGroup):
        return exc.split(FATAL)[0] is not None
    return isinstance(exc, FATAL)


def _passes_plugin_boundary(exc: BaseException) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return exc.split(PASSES_PLUGIN_BOUNDARY)[0] is not None
    return isinstance(exc, PASSES_PLUGIN_BOUNDARY)


def adapter_name(adapter: ChainAdapter) -> str:
    """The adapter's entry-point name (its class name when it declares none)."""
    return getattr(type(adapter), "name", None) or type(adapter).__name__


def failed(network: Network, method: str, what: str) -> AdapterFailed:
    """The error a client gets when ``network``'s adapter failed ``method`` (``what`` says how,
    without the details, which go to the log)."""
    return AdapterFailed(f"adapter {adapter_name(network.adapter)!r} {what} ({method})")


def checked_result(network: Network, method: str, result: Any) -> Raw:
    """``result`` as JSON bytes a client can parse; :class:`AdapterFailed` when it is not JSON."""
    if isinstance(result, Raw):
        try:
            # Decoding into Raw only scans (no objects built); it does not check the UTF-8 of
            # strings, which a WebSocket text frame must be, hence the second look (the usual
            # chain answer is ASCII: isascii() is cheaper than decoding). Every adapter's bytes
            # are checked, built-in ones too: an upstream node's reply is an upstream's, and the
            # check costs about 1 us for a small answer, 4 us for a block and 1 to 2 ms per MB (a
            # micro-benchmark); answers the response cache serves were checked once, when stored.
            msgspec.json.decode(result, type=Raw)
            data = bytes(result)
            if not data.isascii():
                data.decode()
        except (msgspec.DecodeError, UnicodeDecodeError) as exc:
            log.error(
                "adapter %s (network %s) returned bytes that are not JSON for %s: %s",
                adapter_name(network.adapter),
                network.name,
                method,
                exc,
            )
            raise failed(network, method, "returned a result that is not JSON") from None
        return result
    try:
        encoded = _encoder.encode(result)
    except Exception as exc:  # TypeError, OverflowError, RecursionError (too deep), ...
        log.error(
            "adapter %s (network %s) returned a result that cannot be encoded for %s: %s",
            adapter_name(network.adapter),
            network.name,
            method,
            exc,
        )
        raise failed(network, method, "returned a result that is not JSON") from None
    # msgspec writes NaN and infinities as null: look for them only where a null was written.
    if b"null" in encoded and _has_non_finite(result):
        log.error(
            "adapter %s (network %s) returned NaN or an infinity for %s",
            adapter_name(network.adapter),
            network.name,
            method,
        )
        raise failed(network, method, "returned a number that JSON cannot carry")
    return Raw(encoded)


def _has_non_finite(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend(item)
        elif isinstance(item, msgspec.Struct):
            stack.extend(getattr(item, field) for field in item.__struct_fields__)
    return False


@contextmanager
def _contained(network: Network, method: str) -> Iterator[None]:
    """What the adapter raises inside, as the call's error (see the module's docstring)."""
    try:
        yield
    except RpcError:
        raise
    except BaseException as exc:
        if _passes_plugin_boundary(exc):
            raise
        log.exception(
            "adapter %s (network %s) failed on %s",
            adapter_name(network.adapter),
            network.name,
            method,
        )
        raise failed(network, method, "failed") from None


async def call_adapter(network: Network, method: str, params: Raw) -> Raw:
    """``network``'s adapter's answer to ``method``, checked; an :class:`RpcError` otherwise
    (the adapter's own, or :class:`AdapterFailed`)."""
    adapter = network.adapter
    with _contained(network, method), trio.move_on_after(network.call_timeout) as timer:
        result = await adapter.call(network.chain, method, params)
    if timer.cancelled_caught:
        log.error(
            "adapter %s (network %s) did not answer %s within %g s (call_timeout)",
            adapter_name(adapter),
            network.name,
            method,
            network.call_timeout,
        )
        raise failed(network, method, f"did not answer within {network.call_timeout:g} s")
    return checked_result(network, method, result)


def call_adapter_now(network: Network, method: str, params: Raw) -> Raw | None:
    """``network``'s adapter's answer to ``method`` if it gives one without waiting
    (:meth:`~adapters.base.ChainAdapter.call_now`), checked; None when it cannot; an
    :class:`RpcError` as :func:`call_adapter` raises."""
    with _contained(network, method):
        result = network.adapter.call_now(network.chain, method, params)
    if result is NOT_NOW:
        return None
    return checked_result(network, method, result)
