"""``scopecast worker`` as a real OS process for tests, owned by a trio nursery: its output lines
are kept (and waited for), it is stopped by its pid (SIGTERM) or killed (``kill -9``).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections.abc import Sequence

import trio

from tests.support.processes import scopecast_executable
from tests.support.secrets import SCANNER


class WorkerProcess:
    def __init__(self, nursery: trio.Nursery, args: Sequence[str]) -> None:
        self.args = [str(scopecast_executable()), "worker", *args]
        self.lines: list[str] = []
        self._nursery = nursery
        self._process: trio.Process | None = None
        self._changed = trio.Event()
        self._exited = trio.Event()

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    @property
    def running(self) -> bool:
        return self._process is not None and not self._exited.is_set()

    async def start(self) -> None:
        await self._nursery.start(self._run)

    async def _run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        process = await trio.lowlevel.open_process(
            self.args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self._process = process
        task_status.started()
        try:
            assert process.stderr is not None
            buffer = b""
            while chunk := await process.stderr.receive_some(65536):
                buffer += chunk
                *complete, buffer = buffer.split(b"\n")
                for raw in complete:
                    line = raw.decode(errors="replace")
                    SCANNER.scan(f"worker pid {process.pid}", line)
                    self.lines.append(line)
                self._changed.set()
                self._changed = trio.Event()
            await process.wait()
        finally:
            with trio.CancelScope(shield=True):
                if process.returncode is None:
                    process.kill()
                await process.wait()
                if process.stderr is not None:
                    await process.stderr.aclose()
            self._exited.set()
            self._changed.set()

    async def status_port(self) -> int:
        """The port of the status endpoint (started with ``--metrics-port``)."""
        pattern = r"worker status on http://\S+:(\d+)"
        await self.wait_for(pattern)
        found = next(m for line in self.lines if (m := re.search(pattern, line)))
        return int(found.group(1))

    def count(self, pattern: str) -> int:
        found = re.compile(pattern)
        return sum(1 for line in self.lines if found.search(line))

    async def wait_for(self, pattern: str, count: int = 1) -> None:
        """Wait until ``count`` output lines match ``pattern`` (fails if the process exits)."""
        while self.count(pattern) < count:
            if self._exited.is_set():
                raise AssertionError("worker exited; its output:\n" + "\n".join(self.lines[-30:]))
            await self._changed.wait()

    async def kill(self) -> None:
        """``kill -9``: no lease released, nothing cleaned up."""
        if self.running:
            os.kill(self.pid, signal.SIGKILL)
        await self._exited.wait()

    async def stop(self) -> None:
        if self.running:
            os.kill(self.pid, signal.SIGTERM)
        await self._exited.wait()

    def tail(self) -> str:
        return "\n".join(self.lines[-30:])
