"""URL routing: which endpoint a request target names (sans-io).

``/v3/<KEY>`` and ``/ws/v3/<KEY>`` reach the default network; ``/<network>/v3/<KEY>`` and
``/<network>/ws/v3/<KEY>`` a named one. ``/healthz``, ``/metrics`` and ``/admin`` stand alone;
``/admin/ws`` is the operator feed, ``/console`` the operator console and ``/console/<file>`` its files.
"""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass
from urllib.parse import unquote


class Endpoint(enum.Enum):
    RPC = "rpc"
    WEBSOCKET = "ws"
    HEALTH = "healthz"
    METRICS = "metrics"
    ADMIN = "admin"
    OPERATOR_FEED = "admin/ws"
    CONSOLE = "console"


@dataclass(frozen=True, slots=True)
class Route:
    """The endpoint of a target, with the network name (None: default) and the API key given
    (or, for the console, the file asked for)."""

    endpoint: Endpoint
    network: str | None = None
    api_key: str | None = None
    file: str | None = None


_STANDALONE = {
    "healthz": Endpoint.HEALTH,
    "metrics": Endpoint.METRICS,
    "admin": Endpoint.ADMIN,
    "console": Endpoint.CONSOLE,
}


@functools.lru_cache(maxsize=1024)
def route(target: bytes) -> Route | None:
    """The route of a request target, or None when no endpoint has that path.

    Cached: a deployment's clients send a handful of distinct targets, over and over.
    """
    path = target.split(b"?", 1)[0].decode("latin-1")
    parts = [unquote(p) for p in path.strip("/").split("/")] if path.strip("/") else []
    if len(parts) == 1 and parts[0] in _STANDALONE:
        return Route(_STANDALONE[parts[0]])
    if parts == ["admin", "ws"]:
        return Route(Endpoint.OPERATOR_FEED)
    if len(parts) == 2 and parts[0] == "console":
        return Route(Endpoint.CONSOLE, file=parts[1])
    network: str | None = None
    if parts and parts[0] not in ("v3", "ws"):
        network, parts = parts[0], parts[1:]
    if len(parts) in (1, 2) and parts[0] == "v3":
        return Route(Endpoint.RPC, network, parts[1] if len(parts) == 2 else None)
    if len(parts) in (2, 3) and parts[:2] == ["ws", "v3"]:
        return Route(Endpoint.WEBSOCKET, network, parts[2] if len(parts) == 3 else None)
    return None
