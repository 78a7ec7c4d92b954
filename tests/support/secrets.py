"""The suite-wide guard against key material in output: the dev mnemonic and its ten private keys.

:data:`SCANNER` is a logging handler on the root logger for the whole run (see ``tests/conftest.py``)
and also reads every line that a ``scopecast serve`` or ``scopecast worker`` process started by a test
prints (see :mod:`tests.support.processes`); a line or record holding a secret fails the run.
"""

from __future__ import annotations

import logging
from typing import Final

from eth_account import Account

DEV_MNEMONIC: Final = "test test test test test test test test test test test junk"


def _secrets() -> list[str]:
    Account.enable_unaudited_hdwallet_features()
    keys = [
        Account.from_mnemonic(DEV_MNEMONIC, account_path=f"m/44'/60'/0'/0/{i}")
        .key.hex()
        .removeprefix("0x")
        for i in range(10)
    ]
    return [DEV_MNEMONIC, *keys]


class SecretScanner(logging.Handler):
    """Remembers every log record or output line that contains a secret."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.secrets = [secret.lower() for secret in _secrets()]
        self.leaks: list[str] = []

    def scan(self, source: str, text: str) -> None:
        lowered = text.lower()
        if any(secret in lowered for secret in self.secrets):
            self.leaks.append(f"{source}: {text[:200]}")

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
            if record.exc_info:
                text += logging.Formatter().formatException(record.exc_info)
        except Exception:
            return
        self.scan(record.name, text)


SCANNER: Final = SecretScanner()
