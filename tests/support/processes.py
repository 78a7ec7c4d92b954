"""Real ``scopecast serve`` processes for tests: one OS process each, on 127.0.0.1.

The port is read from the line the command prints once it listens
(``scopecast listening on http://127.0.0.1:PORT``); the process is stopped by its pid: SIGTERM, then
SIGKILL if it has not exited after ``stop_timeout`` seconds. :meth:`ScopecastProcess.kill` is a bare
``kill -9``; :meth:`ScopecastProcess.restart` starts the same command again on the same port.

The process belongs to the nursery it was started in: when that nursery is cancelled (the test ends
or fails) the process is killed and reaped, so no test leaves one behind. Its stdout and stderr are
read all along (a full pipe would stall it); the last lines are kept for failure messages::

    async with trio.open_nursery() as nursery:
        node = await start_scopecast(nursery, "--block-time", "0")
        await node.rpc("evm_mine")
        await node.kill()
        await node.restart()
        nursery.cancel_scope.cancel()
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import httpx
import trio

from tests.support.secrets import SCANNER

_LISTENING: Final = re.compile(r"scopecast listening on http://(\S+):(\d+)")
_TAIL_LINES: Final = 200


def scopecast_executable() -> Path:
    """The ``scopecast`` command of the running interpreter's environment (the project's venv)."""
    beside = Path(sys.executable).parent / "scopecast"
    if beside.exists():
        return beside
    return Path(__file__).resolve().parents[2] / ".venv" / "bin" / "scopecast"


class ProcessFailed(RuntimeError):
    """The process exited, or did not start listening in time; the message holds its output."""


class ScopecastProcess:
    """One ``scopecast serve`` process (see the module docstring).

    Args:
        nursery: owns the process: cancelling it kills the process.
        args: extra arguments after ``serve --host H --port P``.
        env: variables added to (or, with a None value, removed from) this process's environment.
        port: the port to ask for (0: any free one; a restart keeps the one it got).
        ready_timeout: seconds to wait for the listening line.
        stop_timeout: seconds between SIGTERM and SIGKILL in :meth:`stop`.
    """

    def __init__(
        self,
        nursery: trio.Nursery,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str | None] | None = None,
        port: int = 0,
        host: str = "127.0.0.1",
        ready_timeout: float = 120.0,
        stop_timeout: float = 10.0,
        executable: Path | None = None,
    ) -> None:
        self.args = list(args)
        self.env = dict(env or {})
        self.port = port
        self.host = host
        self.ready_timeout = ready_timeout
        self.stop_timeout = stop_timeout
        self.executable = executable or scopecast_executable()
        self.output: deque[str] = deque(maxlen=_TAIL_LINES)
        self._output_grew = trio.Event()
        self._nursery = nursery
        self._process: trio.Process | None = None
        self._exited = trio.Event()
        self._exited.set()
        self._stderr_done = trio.Event()

    # -- addresses ------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def http_url(self, key: str = "dev", network: str | None = None) -> str:
        prefix = f"/{network}" if network else ""
        return f"{self.base_url}{prefix}/v3/{key}"

    def ws_url(self, key: str = "dev", network: str | None = None) -> str:
        prefix = f"/{network}" if network else ""
        return f"ws://{self.host}:{self.port}{prefix}/ws/v3/{key}"

    # -- state ----------------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        return not self._exited.is_set()

    @property
    def returncode(self) -> int | None:
        return self._process.returncode if self._process is not None else None

    def output_tail(self, lines: int = 40) -> str:
        """The last lines the process wrote (stdout and stderr interleaved)."""
        return "\n".join(list(self.output)[-lines:])

    async def wait_for_output(self, pattern: str, count: int = 1) -> None:
        """Wait until ``count`` of the kept output lines match ``pattern`` (a regular expression);
        fails with the output if the process exits first (it may not have started yet)."""
        found = re.compile(pattern)
        while sum(1 for line in self.output if found.search(line)) < count:
            if self._process is not None and not self.running:
                raise ProcessFailed(
                    f"exited (code {self.returncode}) before printing {pattern!r}; its output:\n"
                    + self.output_tail()
                )
            await self._output_grew.wait()  # set by each line, and when the process exits

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the process and wait until it listens (raises :class:`ProcessFailed`)."""
        if self.running:
            raise RuntimeError(f"scopecast (pid {self.pid}) is already running")
        command = [
            str(self.executable),
            "serve",
            "--host",
            self.host,
            "--port",
            str(self.port),
            *self.args,
        ]
        # DEBUG, so that the suite-wide secret scan reads everything the process can log.
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "SCOPECAST_LOG_LEVEL": "DEBUG"}
        for name, value in self.env.items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        self._exited = trio.Event()
        self._stderr_done = trio.Event()
        self.port = await self._nursery.start(self._run, command, env)

    async def restart(self) -> None:
        """Stop (if running) and start again on the same port."""
        await self.stop()
        await self.start()

    async def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after ``stop_timeout``; returns the exit code."""
        process = self._process
        if process is None or not self.running:
            return self.returncode
        self._signal(process, signal.SIGTERM)
        with trio.move_on_after(self.stop_timeout):
            await self._exited.wait()
            return process.returncode
        self._signal(process, signal.SIGKILL)
        await self._exited.wait()
        return process.returncode

    async def kill(self) -> int | None:
        """``kill -9`` the process (no chance to clean up); returns the exit code."""
        process = self._process
        if process is None or not self.running:
            return self.returncode
        self._signal(process, signal.SIGKILL)
        await self._exited.wait()
        return process.returncode

    @staticmethod
    def _signal(process: trio.Process, signum: int) -> None:
        if process.returncode is None:
            os.kill(process.pid, signum)

    async def _run(
        self,
        command: list[str],
        env: dict[str, str],
        *,
        task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        process = await trio.lowlevel.open_process(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        self._process = process
        try:
            assert process.stdout is not None
            assert process.stderr is not None
            self._nursery.start_soon(self._drain_stderr, process.stderr)
            lines = _Lines(process.stdout)
            port: int | None = None
            with trio.move_on_after(self.ready_timeout):
                port = await self._wait_listening(lines)
            if port is None:
                with trio.move_on_after(5):  # the reason is usually in stderr's last lines
                    await self._stderr_done.wait()
                raise ProcessFailed(
                    f"{' '.join(command)} did not start listening "
                    f"(exit code {process.returncode}); its output:\n{self.output_tail()}"
                )
            task_status.started(port)
            await self._drain(process.stdout, lines)
            await process.wait()
        finally:
            with trio.CancelScope(shield=True):
                if process.returncode is None:
                    process.kill()
                await process.wait()
                for pipe in (process.stdout, process.stderr):
                    if pipe is not None:
                        await pipe.aclose()
                self._exited.set()
                self._output_grew.set()

    def _keep(self, line: str) -> None:
        self.output.append(line)
        SCANNER.scan(f"scopecast pid {self.pid}", line)
        self._output_grew.set()
        self._output_grew = trio.Event()

    async def _wait_listening(self, lines: _Lines) -> int | None:
        async for line in lines:
            self._keep(line)
            found = _LISTENING.search(line)
            if found is not None:
                return int(found.group(2))
        return None

    async def _drain(self, stream: trio.abc.ReceiveStream, lines: _Lines | None) -> None:
        try:
            async for line in lines or _Lines(stream):
                self._keep(line)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass

    async def _drain_stderr(self, stream: trio.abc.ReceiveStream) -> None:
        try:
            await self._drain(stream, None)
        finally:
            self._stderr_done.set()

    # -- convenience ----------------------------------------------------------------------------

    async def rpc(self, method: str, params: Any = (), *, key: str = "dev") -> Any:
        """One JSON-RPC call over HTTP; returns the whole decoded reply."""
        async with httpx.AsyncClient(trust_env=False) as client:
            reply = await client.post(
                self.http_url(key),
                json={"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)},
            )
        return reply.json()

    async def result(self, method: str, params: Any = (), *, key: str = "dev") -> Any:
        """The ``result`` of one call (an error reply fails the test with its text)."""
        reply = await self.rpc(method, params, key=key)
        assert "error" not in reply, f"{method}: {reply}"
        return reply["result"]


class _Lines:
    """Text lines of a byte stream, as they arrive."""

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self._stream = stream
        self._buffer = b""

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        while b"\n" not in self._buffer:
            chunk = await self._stream.receive_some(65536)
            if not chunk:
                if self._buffer:
                    line, self._buffer = self._buffer, b""
                    return line.decode("utf-8", "replace")
                raise StopAsyncIteration
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode("utf-8", "replace").rstrip("\r")


async def start_scopecast(
    nursery: trio.Nursery,
    *args: str,
    env: Mapping[str, str | None] | None = None,
    port: int = 0,
) -> ScopecastProcess:
    """Start ``scopecast serve --host 127.0.0.1 --port PORT ARGS...`` owned by ``nursery``."""
    process = ScopecastProcess(nursery, args, env=env, port=port)
    await process.start()
    return process
