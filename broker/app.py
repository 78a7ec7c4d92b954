"""The broker: networks, the dispatcher, and the one port they are served on, with its HTTP routes.

``Broker.serve`` follows trio's ``serve_*`` convention: it never returns on its own, and
``await nursery.start(broker.serve, host, port)`` returns the bound port once it is listening.
``Broker.shutdown`` starts a graceful stop: stop accepting, let every WebSocket finish its calls and
close it with 1012 (:meth:`broker.connections.Connections.drain`), give every connection
``shutdown_grace`` seconds, then cancel what is left. The chain events' path is
:mod:`broker.events.event_path`, the WebSocket connections :mod:`broker.connections`, the port's 503
while it starts :mod:`broker.transport.start_up`.
"""

from __future__ import annotations

import errno
import logging
from collections.abc import Awaitable, Callable, Collection, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Final, Protocol

import msgspec
import trio

from broker.access import AccessControl, KeyAccess
from broker.access.origins import ANY_ORIGIN_LINES, rpc_grant
from broker.config import port_error
from broker.connections import Connections
from broker.engine import Engine
from broker.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from broker.rpc.dispatch import CallContext
from broker.rpc.networks import Network
from broker.transport.http import (
    JSON_HEADERS,
    ConnectionDeadlines,
    HttpRequest,
    HttpResponse,
    Responder,
    Upgrade,
    handle_http,
    json_error,
)
from broker.transport.http_reactor import open_reactor
from broker.transport.routing import Endpoint, Route, route
from broker.transport.start_up import answer_not_ready, bind_error, holding, is_loopback
from schemas.errors import ConfigError, InternalError, ServerError, Unauthenticated

if TYPE_CHECKING:
    from adapters.base import ChainAdapter
    from broker.sessions.service import SessionService

log = logging.getLogger(__name__)

#: accept() failures that wait for resources (file descriptors, memory) instead of ending the loop.
_ACCEPT_CAPACITY: Final = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})
_ACCEPT_RETRY: Final = 0.1

DEV_API_KEY: Final = "dev"
NOT_FOUND: Final = (
    "not found: JSON-RPC is POST /v3/<API_KEY> (or /<network>/v3/<API_KEY>), WebSocket "
    "/ws/v3/<API_KEY> (or /<network>/ws/v3/<API_KEY>); also GET /healthz, GET /metrics, "
    "POST /admin, GET /console"
)
#: What geth accepts as a JSON-RPC request body's Content-Type.
JSON_RPC_CONTENT_TYPES: Final = frozenset(
    {b"application/json", b"application/json-rpc", b"application/jsonrequest"}
)


Service = Callable[[trio.Nursery], Awaitable[None]]
"""A background part of the broker (ingestion, heartbeat, bus readers), started with the server."""

AdminResponder = Callable[[HttpRequest], Awaitable[HttpResponse]]


class ConsoleResponder(Protocol):
    """The operator console (:class:`broker.operator.console.OperatorConsole`)."""

    def page(self, request: HttpRequest, file: str | None) -> HttpResponse: ...

    def open_feed(self, request: HttpRequest) -> HttpResponse | Upgrade: ...


def _json_rpc_content(request: HttpRequest) -> bool:
    """Whether the request's ``Content-Type`` is one geth accepts for a JSON-RPC body."""
    content_type = (request.header(b"content-type") or b"").split(b";", 1)[0].strip().lower()
    return content_type in JSON_RPC_CONTENT_TYPES


_NOT_PLAIN: Final = object()
"""A head whose requests :meth:`Broker.respond` answers (not a plain JSON-RPC POST)."""


class Broker:
    """Everything one scopecast process serves, on one port.

    It builds nothing of its own but the HTTP connections' deadlines and reactor: the
    composition root (:mod:`broker.compose`) builds the engine (:class:`~broker.engine.Engine`), the
    WebSocket connections over it, the services that run beside them (sessions, access control)
    and the resources they hold open (Redis), and hands them in.
    """

    def __init__(
        self,
        engine: Engine,
        connections: Connections,
        *,
        api_keys: Collection[str] = (),
        services: Sequence[Service] = (),
        resources: Sequence[AbstractAsyncContextManager[object]] = (),
        shutdown: trio.Event | None = None,
        access: AccessControl | None = None,
        admin: AdminResponder | None = None,
        console: ConsoleResponder | None = None,
        sessions: SessionService | None = None,
    ) -> None:
        """``resources`` are held open while serving, entered before the services start and
        left after (a Redis client, which coredis wants entered by a task that outlives every
        task using it); the engine's event path then starts, then ``services`` in order
        (``service(nursery)`` returns once started); ``shutdown`` is set when the graceful stop
        begins (:meth:`shutdown`)."""
        self.networks = engine.networks
        self.dispatcher = engine.dispatcher
        self.metrics = engine.metrics
        self.limits = engine.limits
        self.hub = engine.hub
        self.bus = engine.bus
        self.connections = connections
        self.api_keys = frozenset(api_keys) or frozenset({DEV_API_KEY})
        self.dev_mode = not api_keys
        #: The ``[keys.*]`` rules and limits (None: no key has any).
        self.access = access
        self.admin = admin
        self.console = console
        self.sessions = sessions
        #: Where it listens, once serving.
        self.host: str | None = None
        self.port: int | None = None
        self._services = (engine.events.start, *services)
        self._resources = list(resources)
        self._shutdown = shutdown if shutdown is not None else trio.Event()
        self._started = False
        self._opened: list[ChainAdapter] = []
        self.http_deadlines = ConnectionDeadlines()
        #: None where ``select.epoll`` is missing (the portable path: see :meth:`serve`).
        self.http_reactor = open_reactor()

    # -- lifecycle ------------------------------------------------------------------------------

    async def start_adapters(self) -> None:
        """Start every adapter once (import a chain, verify upstreams, load keys); if one fails,
        close the chain adapters already started before raising."""
        if self._started:
            return
        self._started = True
        try:
            for adapter in self.networks.chain_adapters():
                await adapter.start()
                self._opened.append(adapter)
            for accounts in self.networks.account_adapters():
                await accounts.start()
        except BaseException:
            await self.close_adapters()
            raise

    async def close_adapters(self) -> None:
        """Close every chain adapter started, once each (shielded: it runs while stopping)."""
        with trio.CancelScope(shield=True):
            while self._opened:
                await self._opened.pop().aclose()

    async def listen(self, host: str, port: int) -> list[trio.SocketListener]:
        """The listening sockets on ``host:port``; a port that cannot be had (or the dev key off
        loopback) raises :class:`~schemas.errors.ConfigError` (one line)."""
        if self.dev_mode and not is_loopback(host):
            raise ConfigError(
                f"refusing to bind {host} with the dev API key: pass --api-key "
                "(or SCOPECAST_API_KEYS) to serve beyond loopback"
            )
        mistake = port_error(port, "port")
        if mistake is not None:
            raise ConfigError(mistake)
        try:
            return await trio.open_tcp_listeners(port, host=host)
        except OSError as exc:
            raise ConfigError(bind_error(exc, host, port)) from None

    async def serve(
        self,
        host: str,
        port: int,
        listeners: list[trio.SocketListener] | None = None,
        *,
        task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve HTTP and WebSocket on ``host:port`` (or on ``listeners``, from :meth:`listen`)
        until :meth:`shutdown`, starting the adapters first and closing them at the end. A port
        that cannot be had raises :class:`~schemas.errors.ConfigError` (one line), the adapters
        closed."""
        await self.start_adapters()
        try:
            if listeners is None:
                listeners = await self.listen(host, port)
            bound: int = listeners[0].socket.getsockname()[1]
            self.host, self.port = host, bound
            async with trio.open_nursery() as outer:
                outer.start_soon(self.http_deadlines.serve)
                if self.http_reactor is not None:
                    outer.start_soon(self.http_reactor.serve)
                else:
                    log.info(
                        "select.epoll is not available on this platform: idle keep-alive HTTP "
                        "connections wait in their own tasks (the portable path, slower for "
                        "small cached answers)"
                    )
                # Bound but not ready until the resources (Redis) answer: say so with 503.
                starting, stopped = trio.CancelScope(), trio.Event()
                if self._resources:
                    outer.start_soon(answer_not_ready, listeners, self._handle, starting, stopped)
                else:
                    stopped.set()
                async with holding(self._resources):
                    starting.cancel()
                    await stopped.wait()  # one task at a time may accept on a socket
                    await self._serve_ready(listeners, bound, task_status)
                outer.cancel_scope.cancel()  # the deadlines task: no connection is left
        finally:
            await self.close_adapters()

    async def _serve_ready(
        self, listeners: list[trio.SocketListener], port: int, task_status: trio.TaskStatus[int]
    ) -> None:
        async with trio.open_nursery() as services:
            for service in self._services:
                await service(services)
            services.start_soon(self.connections.serve_heartbeat)
            async with trio.open_nursery() as handlers:
                self.connections.run_in(handlers)
                accepting = trio.CancelScope()
                handlers.start_soon(self._accept, listeners, handlers, accepting)
                task_status.started(port)
                await self._shutdown.wait()
                accepting.cancel()
                # Idle keep-alive HTTP connections: closed, not waited for.
                if self.http_reactor is not None:
                    self.http_reactor.close_idle()
                self.http_deadlines.close_idle()  # those without the reactor (portable path)
                for conn in self.connections:
                    handlers.start_soon(self.connections.drain, conn)
                handlers.cancel_scope.deadline = trio.current_time() + self.limits.shutdown_grace
            services.cancel_scope.cancel()

    def shutdown(self) -> None:
        """Begin the graceful stop."""
        self._shutdown.set()

    async def wait_stopping(self) -> None:
        """Return once the graceful stop has begun."""
        await self._shutdown.wait()

    async def _accept(
        self,
        listeners: list[trio.SocketListener],
        handlers: trio.Nursery,
        accepting: trio.CancelScope,
    ) -> None:
        with accepting:
            async with trio.open_nursery() as loops:
                for listener in listeners:
                    loops.start_soon(self._accept_on, listener, handlers)

    async def _accept_on(self, listener: trio.SocketListener, handlers: trio.Nursery) -> None:
        """Accept on ``listener`` (closed when this ends) until cancelled. Each connection's task
        runs :meth:`_handle` itself, which closes its stream: trio.serve_listeners would wrap it
        in a coroutine of its own, kept as long as the connection lives (224 bytes per idle
        WebSocket)."""
        async with listener:
            while True:
                try:
                    stream = await listener.accept()
                except OSError as exc:
                    if exc.errno not in _ACCEPT_CAPACITY:
                        raise
                    # Out of file descriptors or memory: the pending clients wait in the backlog.
                    log.error("accept failed (%s): waiting %g s", exc, _ACCEPT_RETRY)
                    await trio.sleep(_ACCEPT_RETRY)
                    continue
                handlers.start_soon(self._handle, stream)

    async def _handle(self, stream: trio.SocketStream, respond: Responder | None = None) -> None:
        """One TCP connection, answered by ``respond`` (default: :meth:`respond`, the broker)."""
        # One connection's failure must never reach the listener (it would stop the server).
        try:
            takeover = await handle_http(
                stream,
                respond or self.respond,
                self.http_deadlines,
                body_limit=self.limits.http_body,
                body_timeout=self.limits.http_body_timeout,
                respond_now=None if respond is not None else self.respond_now,
                reactor=self.http_reactor,
                write_timeout=self.limits.http_write_timeout,
                fault=self._http_fault,
                # What respond_now answers with bytes: JSON-RPC for a key without access rules.
                json_lines=ANY_ORIGIN_LINES,
            )
            if takeover is not None:
                running = takeover.upgrade(stream, takeover.trailing)
                # The coroutine holds what it needs: the takeover (and the upgrade's callable)
                # would otherwise live as long as the connection.
                takeover = None
                await running
        except Exception:
            log.exception("connection handler failed")
        finally:
            with trio.CancelScope(shield=True):
                await stream.aclose()

    # -- HTTP -----------------------------------------------------------------------------------

    def authenticate(self, key: str | None) -> bool:
        return key is not None and key in self.api_keys

    def respond_now(
        self, request: HttpRequest
    ) -> bytes | Awaitable[HttpResponse | Upgrade | bytes | None]:
        """Answer a plain HTTP request (not an upgrade): a JSON-RPC POST with a key that has no
        access rules gets the body of its 200 answer, at once when the response cache holds it
        (bytes), else from the dispatcher (awaited; None for notifications only: an empty body);
        every other request gets :meth:`respond`.

        Whether a request is such a POST, and its call context, follow from its head alone: they
        are worked out once for the requests that repeat a head (``request.notes``).
        """
        notes = request.notes
        context = None if notes is None else notes.value
        if context is None:
            context = self._plain_rpc(request) or _NOT_PLAIN
            if notes is not None:
                notes.value = context
        if context is _NOT_PLAIN:
            return self.respond(request)
        assert isinstance(context, CallContext)
        return self.dispatcher.answer(request.body, context)

    def _http_fault(self, request: HttpRequest, error: Exception) -> HttpResponse:
        """The answer to an HTTP request whose answering raised (a plug-in's result that cannot
        be encoded, a bug): -32603 naming the network and its adapter when the path names one,
        logged once with them (never the path: it holds the API key)."""
        target = route(request.target)
        network = None if target is None else self.networks.by_name(target.network)
        if network is None or target is None or target.endpoint is not Endpoint.RPC:
            log.error("HTTP request failed", exc_info=error)
            return json_error(500, InternalError())
        adapter = getattr(type(network.adapter), "name", type(network.adapter).__name__)
        log.error(
            "HTTP request on network %s (adapter %s) failed", network.name, adapter, exc_info=error
        )
        message = f"internal error in the {adapter} adapter (network {network.name})"
        return json_error(500, InternalError(message))

    def _plain_rpc(self, request: HttpRequest) -> CallContext | None:
        """The call context of a well-formed JSON-RPC POST whose key has no access rules (shared
        by the requests of one head: never changed once made)."""
        if request.method != b"POST":
            return None
        target = route(request.target)
        if target is None or target.endpoint is not Endpoint.RPC:
            return None
        api_key = target.api_key
        if (
            api_key is None
            or api_key not in self.api_keys
            or (self.access is not None and self.access.governs(api_key))
        ):
            return None
        network = self.networks.by_name(target.network)
        if network is None or not _json_rpc_content(request):
            return None
        origin = (request.header(b"origin") or b"-").decode("latin-1")
        return CallContext(network, api_key, origin)

    async def respond(self, request: HttpRequest) -> HttpResponse | Upgrade:
        """Answer one HTTP request (or accept its WebSocket upgrade)."""
        target = route(request.target)
        if target is None:
            return json_error(404, ServerError(NOT_FOUND))
        if target.endpoint is Endpoint.HEALTH:
            return self._health()
        if target.endpoint is Endpoint.METRICS:
            return HttpResponse(
                200, self.metrics.render(), [(b"content-type", METRICS_CONTENT_TYPE.encode())]
            )
        if target.endpoint is Endpoint.ADMIN:  # no CORS grant (broker.access.origins), no preflight
            if self.admin is None:
                return json_error(404, ServerError("admin API not enabled"))
            return await self.admin(request)
        if target.endpoint is Endpoint.CONSOLE or target.endpoint is Endpoint.OPERATOR_FEED:
            if self.console is None:
                return json_error(404, ServerError("operator console not enabled"))
            if target.endpoint is Endpoint.CONSOLE:
                return self.console.page(request, target.file)
            return self.console.open_feed(request)
        grant = self._rpc_grant(request, target.api_key)
        if request.method == b"OPTIONS":  # a browser's preflight: it carries no credentials
            return HttpResponse(204, headers=grant)
        answer = await self._respond_rpc(request, target)
        if isinstance(answer, HttpResponse) and target.endpoint is Endpoint.RPC:
            return HttpResponse(answer.status, answer.body, [*(answer.headers or ()), *grant])
        return answer

    def _rpc_grant(self, request: HttpRequest, api_key: str | None) -> list[tuple[bytes, bytes]]:
        """The CORS headers of an answer on a JSON-RPC path (:mod:`broker.access.origins`)."""
        policy = (
            None if self.access is None or api_key is None else self.access.policies.get(api_key)
        )
        return rpc_grant(None if policy is None else policy.origins, request.header(b"origin"))

    async def _respond_rpc(self, request: HttpRequest, target: Route) -> HttpResponse | Upgrade:
        """Answer a request on a JSON-RPC path (HTTP or the WebSocket upgrade)."""
        # The key first: an unauthenticated caller must not learn which network names exist.
        if not self.authenticate(target.api_key):
            return json_error(401, Unauthenticated())
        network = self.networks.by_name(target.network)
        if network is None:
            return json_error(404, ServerError(f"unknown network {target.network!r}"))
        origin = (request.header(b"origin") or b"-").decode("latin-1")
        context = CallContext(network, target.api_key or "", origin)
        if self.access is not None:  # the key's Origin, secret and token rules
            refused = self.access.check(request, context)
            if refused is not None:
                return refused
        if target.endpoint is Endpoint.WEBSOCKET:
            upgrade = self.connections.upgrade(request, context)
            if self.access is None or isinstance(upgrade, HttpResponse):
                return upgrade
            return await self.access.open_connection(context, upgrade)
        if request.method != b"POST":
            prefix = f"/{target.network}" if target.network else ""
            hint = f"POST JSON-RPC here; a WebSocket connects to {prefix}/ws/v3/<API_KEY>"
            return HttpResponse(
                405,
                f"method not allowed: {hint}".encode(),
                [(b"allow", b"POST, OPTIONS")],
            )
        if not _json_rpc_content(request):
            return HttpResponse(415, b"invalid content type, only application/json is supported")
        reply = await self.dispatcher.handle(request.body, context)
        if isinstance(context.access, KeyAccess):  # 429 when the key's rate refused every call
            return context.access.http_response(reply or b"")
        return HttpResponse(200, reply or b"", JSON_HEADERS)

    def _health(self) -> HttpResponse:
        body = msgspec.json.encode(
            {
                "status": "ok",
                "networks": [_health_entry(n) for n in self.networks],
                "connections": len(self.connections),
            }
        )
        return HttpResponse(200, body, JSON_HEADERS)


def _health_entry(network: Network) -> dict[str, object]:
    entry: dict[str, object] = {"name": network.name, "chain": network.chain}
    note = network.adapter.chain_note(network.chain)
    if note is not None:  # a local chain using another network's id says so
        entry.update(local=True, note=note)
    return entry
