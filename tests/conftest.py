"""Suite-wide guard: no log record of the whole run may contain key material.

A handler on the root logger sees every record the run produces (our loggers at every level,
libraries at their default levels);
at the end of the session, a record holding the dev mnemonic or one of its private keys fails the run.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import pytest
from eth_account import Account

DEV_MNEMONIC = "test test test test test test test test test test test junk"


def _secrets() -> list[str]:
    Account.enable_unaudited_hdwallet_features()
    keys = [
        Account.from_mnemonic(DEV_MNEMONIC, account_path=f"m/44'/60'/0'/0/{i}")
        .key.hex()
        .removeprefix("0x")
        for i in range(10)
    ]
    return [DEV_MNEMONIC, *keys]


class _SecretScanner(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.secrets = _secrets()
        self.leaks: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
            if record.exc_info:
                text += logging.Formatter().formatException(record.exc_info)
        except Exception:
            return
        lowered = text.lower()
        for secret in self.secrets:
            if secret.lower() in lowered:
                self.leaks.append(f"{record.name}: {text[:200]}")


_scanner = _SecretScanner()


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
        print("\nkey material found in log records:\n  " + "\n  ".join(_scanner.leaks))
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
