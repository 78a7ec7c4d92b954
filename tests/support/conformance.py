"""Where the tests read the Ethereum execution-API conformance fixtures.

The fixtures are the ``tests/`` folder of the ethereum/execution-apis repository (``genesis.json``,
``chain.rlp``, ``headfcu.json`` and a folder of ``.io`` exchanges per method). They are data the
project does not ship: ``SCOPECAST_CONFORMANCE_DIR`` names a copy of that folder; unset, the tests
read ``../shared/conformance/execution-apis`` beside the repository when it is there (this
project's machines have it). The tests that need them are skipped, saying so, only when neither
is there; a variable naming a folder without the chain is an error, not a skip.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

import pytest

ENV: Final = "SCOPECAST_CONFORMANCE_DIR"
BESIDE: Final = Path(__file__).resolve().parents[3] / "shared" / "conformance" / "execution-apis"
_FILES: Final = ("genesis.json", "chain.rlp", "headfcu.json")


def find_fixtures() -> tuple[Path, bool]:
    """The fixtures' folder, and whether they are there (a named folder without them raises)."""
    named = os.environ.get(ENV)
    if named:
        folder = Path(named).expanduser().resolve()
        missing = [name for name in _FILES if not (folder / name).is_file()]
        if missing:
            raise RuntimeError(
                f"{ENV}={named}: no {', '.join(missing)} there; it must name a copy of the "
                "ethereum/execution-apis repository's tests/ folder"
            )
        return folder, True
    return BESIDE, all((BESIDE / name).is_file() for name in _FILES)


#: The fixtures' folder (where they would be, when ``FOUND`` is false).
CONFORMANCE_DIR, FOUND = find_fixtures()
needs_conformance: Final = pytest.mark.skipif(
    not FOUND,
    reason=f"conformance fixtures not found: set {ENV} to a copy of the ethereum/execution-apis "
    f"repository's tests/ folder (looked in {BESIDE})",
)
