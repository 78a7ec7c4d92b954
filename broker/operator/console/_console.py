"""The console's two endpoints: ``GET /console`` (and its files) and the feed, ``/admin/ws``.

Both answer 401 like ``POST /admin`` when the operator API has no token (off loopback without
``--admin-token``). The page itself holds no data (what it shows comes over the feed and
``POST /admin``, both behind the token), so a browser may load it before signing in. The feed
also refuses an upgrade whose ``Origin`` is another site's (403): only this origin's page (or a
client that sends no ``Origin``, like a script) may open it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import trio

from broker.access.origins import loopback_host, same_origin
from broker.operator.admin import AdminApi
from broker.operator.console._assets import file_response, secured
from broker.operator.console._feed import OperatorFeed
from broker.operator.console._feed_connection import FeedConnection
from broker.transport.http import HttpRequest, HttpResponse, Upgrade, json_error
from broker.transport.ws_protocol import RemoteProtocolError, accept_handshake
from schemas.errors import Unauthorized


class OperatorConsole:
    """Serves the console page and the operator feed beside the operator API."""

    def __init__(
        self,
        feed: OperatorFeed,
        admin: AdminApi,
        *,
        dev_token: bool,
        stopping: Callable[[], Awaitable[None]],
    ) -> None:
        """``dev_token``: the operator API opens with the public dev token (loopback only);
        ``stopping`` returns once the broker's graceful stop has begun."""
        self.feed = feed
        self._admin = admin
        self._dev_token = dev_token
        self._stopping = stopping

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
        host = request.header(b"host")
        if not same_origin(request.header(b"origin"), host) or (
            self._admin.public_token and not loopback_host(host)
        ):
            return json_error(403, Unauthorized("the operator feed is for this origin's console"))
        try:
            accept = accept_handshake(request.headers, request.target)
        except RemoteProtocolError as exc:
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
                stopping=self._stopping,
            )
            await connection.run(trailing)

        return run
