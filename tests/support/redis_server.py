"""A throwaway ``redis-server`` for tests: a real process on a free loopback port, no persistence,
stopped by its pid. CI installs redis-server with apt; without it the tests fail saying so."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

import trio

REDIS_SERVER = "redis-server"
START_TIMEOUT = 10.0


def free_port() -> int:
    """A loopback TCP port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _reply(port: int, command: bytes, until: bytes) -> bytes:
    """The reply to an inline ``command``, read until it holds ``until`` and ends a line (b"" when
    nothing answers)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(command + b"\r\n")
            reply = b""
            while until not in reply or not reply.endswith(b"\r\n"):
                chunk = sock.recv(4096)
                if not chunk:
                    break
                reply += chunk
            return reply
    except OSError:
        return b""


def _answers_ping(port: int) -> bool:
    return _reply(port, b"PING", b"+PONG").startswith(b"+PONG")


def _replica_in_sync(port: int) -> bool:
    """Whether the replica on ``port`` has its primary's data (its link is up)."""
    return b"master_link_status:up" in _reply(port, b"INFO replication", b"master_link_status")


def _binary() -> str:
    binary = shutil.which(REDIS_SERVER)
    if binary is None:
        raise RuntimeError(
            "redis-server is not installed: the Redis tests start their own "
            "(apt-get install redis-server)"
        )
    return binary


class RedisServer:
    """One ``redis-server`` process; ``start()`` again after ``stop()`` reuses the port.

    ``replica_of``: the port of the primary it replicates (a replica)."""

    def __init__(
        self,
        port: int | None = None,
        *,
        replica_of: int | None = None,
        options: tuple[str, ...] = (),
    ) -> None:
        self.port = port or free_port()
        self.replica_of = replica_of
        self._options = options  # more redis-server arguments
        self.process: subprocess.Popen[bytes] | None = None
        self._dir = tempfile.mkdtemp(prefix="scopecast-redis-")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        replication = (
            [] if self.replica_of is None else ["--replicaof", "127.0.0.1", str(self.replica_of)]
        )
        self.process = subprocess.Popen(
            [
                _binary(),
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self._dir,
                *replication,
                *self._options,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self._wait_until_up()

    def _wait_until_up(self) -> None:
        assert self.process is not None
        deadline = time.monotonic() + START_TIMEOUT
        while not _answers_ping(self.port):
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.process.returncode}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"redis-server did not answer on port {self.port}")
            time.sleep(0.02)

    def stop(self) -> None:
        """Stop the server by its pid (SIGTERM, then SIGKILL if it lingers)."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=5)

    def kill(self) -> None:
        """SIGKILL by its pid (a crash: nothing flushed, no goodbye to replicas or clients)."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=5)

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self._dir, ignore_errors=True)


class SentinelServer(RedisServer):
    """One ``redis-server --sentinel`` watching the primary ``master`` on ``primary_port``, taking
    it for down after ``down_after_ms`` without an answer (quorum 2)."""

    def __init__(self, primary_port: int, *, master: str, down_after_ms: int = 1000) -> None:
        super().__init__()
        self.primary_port = primary_port
        self.master = master
        self.down_after_ms = down_after_ms

    def start(self) -> None:
        config = os.path.join(self._dir, "sentinel.conf")
        if not os.path.exists(config):  # a restart keeps what the sentinel learnt
            with open(config, "w") as file:
                file.write(
                    f"port {self.port}\nbind 127.0.0.1\ndir {self._dir}\n"
                    f"sentinel monitor {self.master} 127.0.0.1 {self.primary_port} 2\n"
                    f"sentinel down-after-milliseconds {self.master} {self.down_after_ms}\n"
                    f"sentinel failover-timeout {self.master} 10000\n"
                    f"sentinel parallel-syncs {self.master} 1\n"
                )
        self.process = subprocess.Popen(
            [_binary(), config, "--sentinel"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self._wait_until_up()


class SentinelFleet:
    """A primary, a replica of it and three sentinels, every one a real process on loopback."""

    def __init__(self, master: str = "scopecast") -> None:
        self.master = master
        # The replica's first full sync at once, not after Redis's default 5 s wait for more
        # replicas: a fault injected sooner would find the replica empty.
        self.primary = RedisServer(options=("--repl-diskless-sync-delay", "0"))
        self.replica = RedisServer(replica_of=self.primary.port)
        self.sentinels = [SentinelServer(self.primary.port, master=master) for _ in range(3)]

    @property
    def url(self) -> str:
        hosts = ",".join(f"127.0.0.1:{s.port}" for s in self.sentinels)
        return f"redis+sentinel://{hosts}/{self.master}/0"

    def start(self) -> None:
        self.primary.start()
        self.replica.start()
        deadline = time.monotonic() + START_TIMEOUT
        while not _replica_in_sync(self.replica.port):
            if time.monotonic() > deadline:
                raise RuntimeError("the replica did not sync with its primary")
            time.sleep(0.02)
        for sentinel in self.sentinels:
            sentinel.start()

    def close(self) -> None:
        for server in [*self.sentinels, self.replica, self.primary]:
            server.close()


async def primary_port(fleet: SentinelFleet) -> int:
    """The port of the primary the first sentinel names now."""
    stream = await trio.open_tcp_stream("127.0.0.1", fleet.sentinels[0].port)
    async with stream:
        await stream.send_all(f"SENTINEL GET-MASTER-ADDR-BY-NAME {fleet.master}\r\n".encode())
        reply = b""
        while reply.count(b"\r\n") < 5:  # *2, $len, host, $len, port
            chunk = await stream.receive_some(4096)
            if not chunk:
                raise RuntimeError(f"the sentinel closed the connection after {reply!r}")
            reply += chunk
    return int(reply.split(b"\r\n")[4])


@contextmanager
def sentinel_fleet() -> Iterator[SentinelFleet]:
    """A running :class:`SentinelFleet`, stopped on exit."""
    fleet = SentinelFleet()
    try:
        fleet.start()
        yield fleet
    finally:
        fleet.close()


@contextmanager
def redis_server(port: int | None = None) -> Iterator[RedisServer]:
    """A running throwaway redis-server, stopped on exit."""
    server = RedisServer(port)
    try:
        server.start()
        yield server
    finally:
        server.close()


async def redis_command(port: int, *args: str) -> bytes:
    """Send one command on a fresh connection (e.g. ``CLIENT KILL TYPE normal``); the raw reply."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        parts = [f"*{len(args)}\r\n".encode()]
        for arg in args:
            data = arg.encode()
            parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
        await stream.send_all(b"".join(parts))
        reply = b""
        while not reply.endswith(b"\r\n"):
            chunk = await stream.receive_some(4096)
            if not chunk:
                break
            reply += chunk
        return reply
