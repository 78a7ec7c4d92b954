"""Child processes of the bench: servers and load generators, pinned to cores, spoken to in JSON lines.

Every child reads commands on stdin and answers on stdout, one JSON object a line (anything else it
prints there is ignored); its stderr goes to a log file of the run. :func:`rss_kib` and
:func:`cpu_seconds` read ``/proc`` for the memory and CPU figures.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class ChildError(RuntimeError):
    """A child died, timed out or answered with an error."""


def _pinned(cpus: set[int] | None) -> Callable[[], None] | None:
    if not cpus:
        return None

    def pin() -> None:  # runs in the child before exec: every thread it starts inherits it
        os.sched_setaffinity(0, cpus)

    return pin


class Child:
    """One child process speaking JSON lines."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        *,
        cpus: set[int] | None,
        log_dir: Path,
        env: dict[str, str] | None = None,
        controlled: bool = True,
        cwd: Path | None = None,
    ) -> None:
        """``cwd``: where it runs (default: the checkout; another tree runs that tree's code)."""
        self.name = name
        self.controlled = controlled  # False: no JSON-line control (stopped with SIGTERM)
        self.log_path = log_dir / f"{name}.log"
        self._log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            cwd=cwd or ROOT,
            env={**os.environ, **(env or {})},
            preexec_fn=_pinned(cpus),
        )
        self._pending = b""
        self.pid = self.proc.pid  # the measured process (a child may report another: py-spy)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(message).encode() + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError as exc:
            raise ChildError(f"{self.name} is gone (see {self.log_path})") from exc

    def receive(self, timeout: float = 120.0) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" in self._pending:
                line, self._pending = self._pending.split(b"\n", 1)
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                if isinstance(message, dict):
                    if "error" in message:
                        raise ChildError(f"{self.name}: {message['error']}")
                    return message
            left = deadline - time.monotonic()
            if left <= 0:
                raise ChildError(f"{self.name}: no answer in {timeout:.0f} s (see {self.log_path})")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                data = os.read(fd, 1 << 20)
                if not data:
                    raise ChildError(
                        f"{self.name} exited ({self.proc.poll()}); see {self.log_path}:\n"
                        + tail(self.log_path)
                    )
                self._pending += data

    def request(self, message: dict[str, Any], timeout: float = 120.0) -> dict[str, Any]:
        self.send(message)
        return self.receive(timeout)

    def wait_ready(self, timeout: float = 120.0) -> int:
        """The port a server child reports once listening."""
        ready = self.receive(timeout)
        if "pid" in ready:
            self.pid = int(ready["pid"])
        return int(ready["ready"])

    def stop(self, grace: float = 10.0) -> None:
        if self.proc.poll() is None and not self.controlled:
            self.proc.send_signal(signal.SIGTERM)
        if self.proc.poll() is None:
            try:
                self.send({"cmd": "exit"})
                if self.proc.stdin is not None:
                    self.proc.stdin.close()
            except (ChildError, OSError):
                pass
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        self._log.close()


def tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def rss_kib(pid: int) -> int:
    """Resident set size of ``pid`` in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise ChildError(f"no VmRSS for {pid}")


def cpu_seconds(pid: int) -> float:
    """CPU time of ``pid`` so far, all its threads (``schedstat``: nanoseconds, not clock ticks)."""
    total = 0
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                total += int((task / "schedstat").read_text().split()[0])
            except (OSError, IndexError, ValueError):
                continue
        return total / 1e9
    except OSError:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
