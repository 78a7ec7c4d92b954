"""A TCP proxy for tests, between the broker and an upstream, that can hold or cut the traffic."""

from __future__ import annotations

from collections.abc import Callable

import trio


class TcpProxy:
    """Forwards 127.0.0.1:``port`` to ``target_port``.

    :meth:`pause` holds every byte in both directions (connections stay open, as on a stalled
    network) until :meth:`resume`; :meth:`cut` closes every connection and refuses new ones (they
    are accepted and closed at once) until :meth:`restore`. What the test waits on instead of a
    delay: :attr:`refused` counts the connections refused while cut, :attr:`held` the pieces of
    data from the target that a pause holds.
    """

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self.connections_made = 0
        self.refused = 0
        self.held = 0
        self._changed = trio.Event()
        self._flowing = trio.Event()
        self._flowing.set()
        self._cut = False
        self._live: set[trio.CancelScope] = set()

    async def serve(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        async with trio.open_nursery() as nursery:
            await nursery.start(trio.serve_listeners, self._handle, listeners)
            task_status.started(self.port)

    def pause(self) -> None:
        self._flowing = trio.Event()

    def resume(self) -> None:
        self._flowing.set()

    def cut(self) -> None:
        self._cut = True
        for scope in list(self._live):
            scope.cancel()

    def restore(self) -> None:
        self._cut = False

    async def wait_until(self, done: Callable[[TcpProxy], bool]) -> None:
        """Wait until ``done(self)`` holds (looked at whenever a count changes)."""
        while not done(self):
            await self._changed.wait()

    def _counted(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def _handle(self, client: trio.SocketStream) -> None:
        async with client:
            if self._cut:
                self.refused += 1
                self._counted()
                return
            try:
                upstream = await trio.open_tcp_stream("127.0.0.1", self.target_port)
            except OSError:
                return
            self.connections_made += 1
            async with upstream:
                with trio.CancelScope() as scope:
                    self._live.add(scope)
                    try:
                        async with trio.open_nursery() as nursery:
                            nursery.start_soon(self._pump, client, upstream, scope, False)
                            nursery.start_soon(self._pump, upstream, client, scope, True)
                    finally:
                        self._live.discard(scope)

    async def _pump(
        self,
        source: trio.SocketStream,
        sink: trio.SocketStream,
        scope: trio.CancelScope,
        from_target: bool,
    ) -> None:
        try:
            while data := await source.receive_some(65536):
                if from_target and not self._flowing.is_set():
                    self.held += 1
                    self._counted()
                await self._flowing.wait()
                await sink.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        scope.cancel()  # one side closed: close both
