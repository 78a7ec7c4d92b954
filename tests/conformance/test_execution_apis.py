"""The execution-apis conformance fixtures against the devchain adapter on the fixture chain."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import trio

from adapters.base import NetworkSpec
from adapters.devchain import DevChainAdapter

from .jsonrpc import adapter_post
from .runner import Fixture, load_fixtures, run_all, run_fixture

FIXTURE_DIR = Path(
    os.environ.get(
        "SCOPECAST_CONFORMANCE_DIR",
        Path(__file__).resolve().parents[3] / "shared" / "conformance" / "execution-apis",
    )
)
CHAIN = "eip155:3503995874084926"
START_BUDGET_SECONDS = 10.0

pytestmark = pytest.mark.skipif(
    not (FIXTURE_DIR / "chain.rlp").exists(),
    reason=f"conformance fixtures (ethereum/execution-apis tests) not found at {FIXTURE_DIR}",
)
FIXTURES = load_fixtures(FIXTURE_DIR) if FIXTURE_DIR.exists() else []


@pytest.fixture(scope="module")
def fixture_chain() -> DevChainAdapter:
    """The adapter on the imported fixture chain, started once for the module."""
    adapter = DevChainAdapter(
        NetworkSpec(
            name="hive",
            chain=CHAIN,
            adapter="devchain",
            options={
                "genesis": str(FIXTURE_DIR / "genesis.json"),
                "chain_file": str(FIXTURE_DIR / "chain.rlp"),
                "forkchoice": str(FIXTURE_DIR / "headfcu.json"),
            },
        )
    )
    started = time.perf_counter()
    trio.run(adapter.start)
    elapsed = time.perf_counter() - started
    print(f"\nfixture chain start-up: {elapsed:.2f} s")
    assert elapsed < START_BUDGET_SECONDS
    return adapter


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f.id for f in FIXTURES])
async def test_fixture(fixture_chain: DevChainAdapter, fixture: Fixture) -> None:
    problems = await run_fixture(fixture, adapter_post(fixture_chain, CHAIN))
    assert not problems, "\n".join(problems)


async def test_every_fixture_passes(fixture_chain: DevChainAdapter) -> None:
    report = await run_all(FIXTURES, adapter_post(fixture_chain, CHAIN))
    print("\n" + "\n".join(report.lines()))
    assert report.passed == report.total, report.failures
