"""The ``scopecast`` command as a real process: endpoints printed, refusals, graceful SIGTERM."""

import re
import signal
import subprocess
import sys
from pathlib import Path

import trio

from broker import frames
from tests.support.rawws import RawWebSocket

SCOPECAST = str(Path(sys.executable).with_name("scopecast"))


async def read_until(stream: trio.abc.ReceiveStream, pattern: bytes) -> bytes:
    seen = b""
    while not re.search(pattern, seen):
        chunk = await stream.receive_some(4096)
        assert chunk, f"process ended before printing {pattern!r}: {seen.decode(errors='replace')}"
        seen += chunk
    return seen


async def test_serve_prints_endpoints_and_drains_on_sigterm() -> None:
    with trio.fail_after(60):
        process = await trio.lowlevel.open_process(
            [SCOPECAST, "serve", "--port", "0", "--block-time", "0"], stdout=subprocess.PIPE
        )
        try:
            assert process.stdout is not None
            banner = await read_until(process.stdout, rb"dev API key: dev")
            port = int(re.search(rb"listening on http://127\.0\.0\.1:(\d+)", banner).group(1))  # type: ignore[union-attr]
            assert f"POST http://127.0.0.1:{port}/v3/dev".encode() in banner
            assert f"ws://127.0.0.1:{port}/ws/v3/dev".encode() in banner
            conn = await RawWebSocket.connect(port, "/ws/v3/dev")
            process.send_signal(signal.SIGTERM)
            while (frame := await conn.frame()) is not None and frame[0] != 0x8:
                pass
            assert conn.close_code == frames.CLOSE_GOING_AWAY
            conn.close()
            assert await process.wait() == 0
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()


async def test_refuses_to_bind_beyond_loopback_with_the_dev_key() -> None:
    with trio.fail_after(30):
        result = await trio.run_process(
            [SCOPECAST, "serve", "--host", "0.0.0.0", "--port", "0"],
            capture_stderr=True,
            check=False,
        )
    assert result.returncode != 0
    assert b"refusing to bind 0.0.0.0" in result.stderr


async def test_help_names_the_deployment_settings() -> None:
    result = await trio.run_process([SCOPECAST, "serve", "--help"], capture_stdout=True)
    for setting in (b"--api-key", b"--admin-token", b"--redis-url", b"--config", b"--approval"):
        assert setting in result.stdout
