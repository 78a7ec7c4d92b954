"""Ctrl-C on a real ``scopecast serve`` with a call waiting: the first SIGINT says what the stop
waits for and answers every parked approval (4001, ``data.reason`` "server shutting down"); a
second one stops at once, in one line, with status 130 and no traceback."""

from __future__ import annotations

import re
import signal
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import trio

from tests.broker.test_cli import SCOPECAST, read_until
from tests.support.waiting import eventually

ACCOUNT_0 = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"


@asynccontextmanager
async def manual_server() -> AsyncIterator[tuple[trio.Process, int]]:
    process = await trio.lowlevel.open_process(
        [SCOPECAST, "serve", "--port", "0", "--block-time", "0", "--approval", "manual"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        banner = await read_until(process.stdout, rb"dev API key: dev")
        port = int(re.search(rb"listening on http://127\.0\.0\.1:(\d+)", banner).group(1))  # type: ignore[union-attr]
        # the banner says what manual approval means, readably
        assert (
            b"approval   manual: sessions and signatures wait for the operator "
            b"(rejected after 300 s: approval_timeout)" in banner
        )
        yield process, port
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def parked_sign(port: int, answer: list[Any]) -> None:
    """A personal_sign over HTTP, parked for the operator; its reply lands in ``answer``."""
    async with httpx.AsyncClient(timeout=30) as client:
        reply = await client.post(
            f"http://127.0.0.1:{port}/v3/dev",
            json={
                "jsonrpc": "2.0",
                "id": 7,
                "method": "personal_sign",
                "params": ["0x68", ACCOUNT_0],
            },
        )
    answer.append(reply.json())


async def until_parked(port: int) -> None:
    async def parked() -> bool:
        async with httpx.AsyncClient() as client:
            reply = await client.post(
                f"http://127.0.0.1:{port}/admin",
                headers={"authorization": "Bearer dev"},
                json={"jsonrpc": "2.0", "id": 1, "method": "admin_listApprovals", "params": {}},
            )
        return len(reply.json()["result"]) == 1

    await eventually(parked, "the personal_sign parked")


async def test_first_sigint_answers_the_parked_call_and_says_so() -> None:
    answer: list[Any] = []
    with trio.fail_after(60):
        async with manual_server() as (process, port), trio.open_nursery() as nursery:
            nursery.start_soon(parked_sign, port, answer)
            await until_parked(port)
            process.send_signal(signal.SIGINT)
            assert await process.wait() == 0
            assert process.stderr is not None
            stderr = (await process.stderr.receive_some(1 << 16)).decode()
    assert answer == [
        {
            "jsonrpc": "2.0",
            "id": 7,
            "error": {
                "code": 4001,
                "message": "User rejected the request.",
                "data": {"reason": "server shutting down"},
            },
        }
    ]
    assert "received SIGINT: stopping (SIGINT again to stop at once)" in stderr
    assert re.search(
        r"answering approval 1 \(personal_sign from dev, -, parked \d+ s\) with 4001: "
        r"server shutting down",
        stderr,
    ), stderr
    assert "Traceback" not in stderr


async def test_a_second_sigint_stops_at_once_with_130_and_one_line() -> None:
    with trio.fail_after(60):
        async with manual_server() as (process, port):
            # A request whose body never completes keeps its connection busy: the drain would
            # give it shutdown_grace (10 s).
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            await stream.send_all(
                b"POST /v3/dev HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 100\r\n\r\n{"
            )
            process.send_signal(signal.SIGINT)
            assert process.stderr is not None
            stderr = await read_until(process.stderr, rb"for the calls under way to finish")
            process.send_signal(signal.SIGINT)
            assert await process.wait() == 130
            while chunk := await process.stderr.receive_some(1 << 16):
                stderr += chunk
            await stream.aclose()
    text = stderr.decode()
    assert "waiting up to 10 s ([server] shutdown_grace) for the calls under way" in text, text
    assert "scopecast: second SIGINT: stopping now, without draining\n" in text
    assert "Traceback" not in text
