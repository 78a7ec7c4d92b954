"""The execution-apis conformance fixtures, POSTed over HTTP to a real ``scopecast serve`` process
started on the fixture chain (genesis.json + chain.rlp + headfcu.json), as the reference runner does."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.conformance import CONFORMANCE_DIR, FOUND, needs_conformance

from .runner import Fixture, Post, load_fixtures, run_all, run_fixture

FIXTURE_DIR = CONFORMANCE_DIR
SCOPECAST = str(Path(sys.executable).with_name("scopecast"))

pytestmark = needs_conformance
FIXTURES = load_fixtures(FIXTURE_DIR) if FOUND else []


@pytest.fixture(scope="module")
def node_url() -> Iterator[str]:
    """A scopecast process serving the fixture chain; its HTTP URL."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [
            SCOPECAST,
            "serve",
            "--port",
            "0",
            "--genesis",
            str(FIXTURE_DIR / "genesis.json"),
            "--chain-file",
            str(FIXTURE_DIR / "chain.rlp"),
            "--forkchoice",
            str(FIXTURE_DIR / "headfcu.json"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        port = None
        for line in process.stdout:
            found = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
            if found:
                port = int(found.group(1))
                break
        assert port is not None, "scopecast serve did not start"
        print(f"\nfixture chain: serving after {time.perf_counter() - started:.2f} s")
        yield f"http://127.0.0.1:{port}/v3/dev"
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


def http_post(url: str, client: httpx.AsyncClient) -> Post:
    async def post(body: bytes) -> bytes:
        reply = await client.post(url, content=body, headers={"content-type": "application/json"})
        return reply.content

    return post


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f.id for f in FIXTURES])
async def test_fixture(node_url: str, fixture: Fixture) -> None:
    async with httpx.AsyncClient() as client:
        problems = await run_fixture(fixture, http_post(node_url, client))
    assert not problems, "\n".join(problems)


async def test_every_fixture_passes(node_url: str) -> None:
    async with httpx.AsyncClient() as client:
        report = await run_all(FIXTURES, http_post(node_url, client))
    print("\n" + "\n".join(report.lines()))
    assert report.passed == report.total, report.failures
