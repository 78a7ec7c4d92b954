"""A real headless Chromium (Debian's ``chromium``) driven by playwright's sync API, from trio tests.

Playwright's own browser download cannot work here, so the browser is ``/usr/bin/chromium``
(``.ci/run`` installs it with apt). When it is missing and cannot be installed, the test is skipped
and says so; it is never silently passed.

Playwright's sync API runs an asyncio loop of its own and binds its objects to the thread that made
them: every browser step runs on one dedicated thread, and the trio test awaits it
(:meth:`BrowserThread.run`) while its own tasks (dapps, the server) go on::

    async with open_browser() as browser:
        page = await browser.run(browser.new_page, 900)
        await browser.run(lambda: page.goto(url))
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final, TypeVar

import outcome
import pytest
import trio

CHROMIUM: Final = Path("/usr/bin/chromium")
FLAGS: Final = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
STEP_TIMEOUT_MS: Final = 15_000

T = TypeVar("T")


def chromium_or_skip() -> Path:
    """``/usr/bin/chromium``, installed with apt if it is missing; skips the test if it cannot be."""
    if not CHROMIUM.exists() and shutil.which("apt-get") and os.geteuid() == 0:
        for command in (
            ["apt-get", "update", "-qq"],
            ["apt-get", "install", "-y", "-qq", "chromium"],
        ):
            subprocess.run(command, check=False, capture_output=True, timeout=900)
    if not CHROMIUM.exists():
        pytest.skip(
            "no Chromium: /usr/bin/chromium is missing and `apt-get install chromium` could not "
            "install it (.ci/run installs it); the console's browser tests need it"
        )
    return CHROMIUM


class BrowserThread:
    """One Chromium, driven on a thread of its own."""

    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="chromium")
        self._playwright: Any = None
        self._browser: Any = None

    async def run(self, step: Callable[..., T], *args: Any) -> T:
        """Run ``step(*args)`` on the browser's thread; its result (or its exception)."""
        done = trio.Event()
        token = trio.lowlevel.current_trio_token()
        result: list[outcome.Outcome[T]] = []

        def job() -> None:
            try:
                result.append(outcome.capture(step, *args))
            finally:
                token.run_sync_soon(done.set)

        self._executor.submit(job)
        await done.wait()
        return result[0].unwrap()

    def _launch(self, executable: Path) -> None:
        from playwright.sync_api import sync_playwright

        self._playwright = sync_playwright().start()
        self._browser = self._playwright.chromium.launch(
            executable_path=str(executable), args=FLAGS, headless=True
        )

    def new_page(self, width: int = 1000, height: int = 900) -> Any:
        """A page in a fresh context (its own session storage), ``width`` px wide."""
        context = self._browser.new_context(viewport={"width": width, "height": height})
        context.set_default_timeout(STEP_TIMEOUT_MS)
        return context.new_page()

    def version(self) -> str:
        """The browser's version."""
        return str(self._browser.version)

    def _close(self) -> None:
        try:
            if self._browser is not None:
                self._browser.close()
        finally:
            if self._playwright is not None:
                self._playwright.stop()


@asynccontextmanager
async def open_browser() -> AsyncIterator[BrowserThread]:
    """A launched Chromium (skips the test when there is none); closed on exit."""
    executable = chromium_or_skip()
    browser = BrowserThread()
    try:
        await browser.run(browser._launch, executable)
        yield browser
    finally:
        with trio.CancelScope(shield=True), trio.move_on_after(60):
            await browser.run(browser._close)
        browser._executor.shutdown(wait=False)
