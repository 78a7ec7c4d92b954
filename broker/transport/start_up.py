"""The broker's start-up on its one port: bound at once, the resources it holds (a Redis client)
entered, and, until they answer, every request answered 503 "not ready yet" (so load balancers
and clients are not left waiting on an open, silent port)."""

from __future__ import annotations

import errno
import ipaddress
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Final

import msgspec
import trio

from broker.transport.http import JSON_HEADERS, HttpRequest, HttpResponse, Responder, json_error
from schemas.errors import ServerError

_NOT_READY: Final = "not ready yet: waiting for Redis"

Handle = Callable[[trio.SocketStream, Responder], Awaitable[None]]
"""Answers one TCP connection with a responder (the broker's ``_handle``)."""


def bind_error(exc: OSError, host: str, port: int) -> str:
    """One line for a port that cannot be had (in use, not permitted, no such address)."""
    if exc.errno == errno.EADDRINUSE:
        return f"cannot listen on {host}:{port}: the address is in use; choose another --port"
    return f"cannot listen on {host}:{port}: {(exc.strerror or str(exc)).lower()}"


def is_loopback(host: str) -> bool:
    """Whether ``host`` only binds loopback addresses."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def not_ready(request: HttpRequest) -> HttpResponse:
    """Every request while the broker waits for its resources: 503, retry later."""
    # No checkpoint: answered from memory, after the request's read (which has one).
    retry = [(b"retry-after", b"1")]
    if request.target.split(b"?", 1)[0] == b"/healthz":
        body = msgspec.json.encode({"status": "starting", "reason": _NOT_READY})
        return HttpResponse(503, body, [*JSON_HEADERS, *retry])
    response = json_error(503, ServerError(_NOT_READY))
    response.headers = [*(response.headers or []), *retry]
    return response


@asynccontextmanager
async def holding(resources: Sequence[AbstractAsyncContextManager[object]]) -> AsyncIterator[None]:
    """Hold every resource open (entered in order, left in reverse) while the block runs."""
    async with AsyncExitStack() as stack:
        for resource in resources:
            await stack.enter_async_context(resource)
        yield


async def answer_not_ready(
    listeners: list[trio.SocketListener],
    handle: Handle,
    scope: trio.CancelScope,
    stopped: trio.Event,
) -> None:
    """Accept on ``listeners`` and answer every request :func:`not_ready` until ``scope`` is
    cancelled; ``stopped`` is set once no task accepts any more (one at a time may)."""
    # Its own accept loop: trio.serve_listeners would close the listeners when cancelled.
    try:
        with scope:
            async with trio.open_nursery() as nursery:
                for listener in listeners:
                    nursery.start_soon(_accept_not_ready, listener, handle, nursery)
    finally:
        stopped.set()


async def _accept_not_ready(
    listener: trio.SocketListener, handle: Handle, nursery: trio.Nursery
) -> None:
    while True:
        try:
            stream = await listener.accept()
        except OSError:  # out of file descriptors, say: the client will retry
            await trio.sleep(0.1)
            continue
        nursery.start_soon(handle, stream, not_ready)
