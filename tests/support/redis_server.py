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


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """One ``redis-server`` process; ``start()`` again after ``stop()`` reuses the port."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self._dir = tempfile.mkdtemp(prefix="scopecast-redis-")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        binary = shutil.which(REDIS_SERVER)
        if binary is None:
            raise RuntimeError(
                "redis-server is not installed: the Redis tests start their own "
                "(apt-get install redis-server)"
            )
        self.process = subprocess.Popen(
            [
                binary,
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
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
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

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self._dir, ignore_errors=True)


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
