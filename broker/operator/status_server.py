"""A status endpoint for a process that serves no dapps: ``GET /metrics`` and ``GET /healthz``.

``scopecast worker`` holds no dapp connections and so has no server of its own, yet its ingestion
metrics (reorganisations, skipped heights, blocks delivered without logs) exist only there. With
``--metrics-port`` it serves them on a port of its own, through the same HTTP/1.1 handling as the
broker (:func:`broker.transport.http.handle_http`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import msgspec
import trio

from broker.metrics import CONTENT_TYPE, Metrics
from broker.transport.http import (
    JSON_HEADERS,
    ConnectionDeadlines,
    HttpRequest,
    HttpResponse,
    Responder,
    Upgrade,
    handle_http,
)

_BODY_LIMIT: Final = 64 * 1024
_BODY_TIMEOUT: Final = 10.0


def status_responder(metrics: Metrics, health: Callable[[], dict[str, Any]]) -> Responder:
    """The request handler: metrics and health for GET, 405 for other methods, else 404."""

    async def respond(request: HttpRequest) -> HttpResponse | Upgrade:
        # No checkpoint: answered from memory, after the request's read (which has one).
        path = request.target.split(b"?", 1)[0]
        if path not in (b"/metrics", b"/healthz"):
            return HttpResponse(404, b"not found")
        if request.method != b"GET":
            return HttpResponse(405, b"method not allowed", [(b"allow", b"GET")])
        if path == b"/metrics":
            return HttpResponse(200, metrics.render(), [(b"content-type", CONTENT_TYPE.encode())])
        return HttpResponse(200, msgspec.json.encode(health()), JSON_HEADERS)

    return respond


async def serve_status(
    metrics: Metrics,
    health: Callable[[], dict[str, Any]],
    host: str,
    port: int,
    *,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``/metrics`` and ``/healthz`` on ``host:port`` until cancelled; starts with the port."""
    respond = status_responder(metrics, health)
    deadlines = ConnectionDeadlines()

    async def handle(stream: trio.SocketStream) -> None:
        async with stream:
            await handle_http(
                stream, respond, deadlines, body_limit=_BODY_LIMIT, body_timeout=_BODY_TIMEOUT
            )

    listeners = await trio.open_tcp_listeners(port, host=host)
    bound: int = listeners[0].socket.getsockname()[1]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(deadlines.serve)
        nursery.start_soon(trio.serve_listeners, handle, listeners)
        task_status.started(bound)
