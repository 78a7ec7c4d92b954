"""The console's two endpoints: ``GET /console`` (and its files) and the feed, ``/admin/ws``.

Both answer 401 like ``POST /admin`` when the operator API has no token (off loopback without
``--admin-token``). The page itself holds no data (what it shows comes over the feed and
``POST /admin``, both behind the token), so a browser may load it before signing in. The feed
also refuses an upgrade whose ``Origin`` is another site's (403): only this origin's page (or a
client that sends no ``Origin``, like a script) may open it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import trio
from wsproto.utilities import ProtocolError as WsHandshakeError

from broker.admin import AdminApi
from broker.console._assets import file_response, secured
from broker.console._feed import OperatorFeed
from broker.console._feed_connection import FeedConnection
from broker.errors import Unauthorized
from broker.http import HttpRequest, HttpResponse, Upgrade, json_error
from broker.ws_protocol import accept_handshake

if TYPE_CHECKING:
    from broker.session_service import SessionService
    from broker.websocket import WebSocketConnection


class ConsoleHost(Protocol):
    """What the console uses of the broker (the broker is one)."""

    def on_connect(self, hook: Callable[[WebSocketConnection], None]) -> None: ...

    def on_disconnect(self, hook: Callable[[WebSocketConnection], None]) -> None: ...

    async def wait_stopping(self) -> None: ...


def same_origin(request: HttpRequest) -> bool:
    """Whether the request's ``Origin`` (if any) names the host it was sent to."""
    origin = request.header(b"origin")
    if origin is None:
        return True
    host = request.header(b"host") or b""
    return origin.partition(b"://")[2] == host


class OperatorConsole:
    """Serves the console page and the operator feed beside the operator API."""

    def __init__(
        self, host: ConsoleHost, sessions: SessionService, admin: AdminApi, *, dev_token: bool
    ) -> None:
        """``dev_token``: the operator API opens with the public dev token (loopback only)."""
        self._host = host
        self._admin = admin
        self._dev_token = dev_token
        self.feed = OperatorFeed(sessions)
        host.on_connect(self.feed.on_connection)
        host.on_disconnect(self.feed.on_connection)

    def page(self, request: HttpRequest, file: str | None) -> HttpResponse:
        """``GET /console`` or one of its files."""
        refused = self._admin.refusal(request, token_optional=True)
        if refused is not None:
            return secured(refused)
        if request.method not in (b"GET", b"HEAD"):
            return secured(HttpResponse(405, b"method not allowed", [(b"allow", b"GET")]))
        return file_response(file)

    def open_feed(self, request: HttpRequest) -> HttpResponse | Upgrade:
        """The WebSocket upgrade of ``/admin/ws``."""
        refused = self._admin.refusal(request, token_optional=True)
        if refused is not None:
            return refused
        if not same_origin(request):
            return json_error(403, Unauthorized("the operator feed is for this origin's console"))
        try:
            accept = accept_handshake(request.headers, request.target)
        except WsHandshakeError as exc:
            return HttpResponse(400, str(exc).encode())
        # Past the refusal, a header is the right token: that client is signed in already.
        signed_in = request.header(b"authorization") is not None

        async def run(stream: trio.SocketStream, trailing: bytes) -> None:
            await stream.send_all(accept)
            connection = FeedConnection(
                stream,
                self.feed,
                self._admin.accepts,
                signed_in=signed_in,
                dev_token=self._dev_token,
                stopping=self._host.wait_stopping,
            )
            await connection.serve(trailing)

        return run
