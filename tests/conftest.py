"""Suite-wide guard: no log record of the whole run may contain key material.

A handler on the root logger sees every record the run produces (our loggers at every level,
libraries at their default levels), and the same scanner reads every line the ``scopecast``
processes started by tests print (they run at DEBUG); at the end of the session, a record or line
holding the dev mnemonic or one of its private keys fails the run.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio

from broker.compose import ServeOptions
from tests.support.inprocess import RunningBroker, running_broker
from tests.support.secrets import SCANNER

_scanner = SCANNER


#: Our own loggers log at every level during the run; third-party ones keep their defaults (pytest
#: keeps every captured record in memory, and some libraries log each message at DEBUG).
OWN_LOGGERS = ("broker", "adapters", "scopecast")


def pytest_sessionstart(session: pytest.Session) -> None:
    # Tests that need Redis start their own server and pass its URL explicitly; a REDIS_URL in the
    # machine's environment must not turn every in-process broker into a Redis one.
    os.environ.pop("REDIS_URL", None)
    logging.getLogger().addHandler(_scanner)
    for name in OWN_LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG)


def pytest_sessionfinish(session: pytest.Session, exitstatus: Any) -> None:
    logging.getLogger().removeHandler(_scanner)
    if _scanner.leaks:
        found = "\n  ".join(_scanner.leaks)
        print(f"\nkey material found in log records or process output:\n  {found}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture
async def node() -> AsyncIterator[RunningBroker]:
    """A broker as `scopecast serve --block-time 0` builds it (the dev chain mines on demand), on
    127.0.0.1 port 0, for one test; a test module may override it (to mine blocks first, say).
    Its hang guard covers the test too: it is no shorter than the longest a test gives itself."""
    with trio.fail_after(120):
        async with running_broker(ServeOptions(block_time=0)) as running:
            yield running
