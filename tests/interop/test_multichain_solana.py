"""MetaMask's @metamask/multichain-api-client holds one session over both the dev chain and the
Solana dev chain, and has a Solana message signed (checks in ``multichain_solana.mjs``)."""

from __future__ import annotations

import trio

from adapters.solana import dev_chain_id
from tests.interop.nodejs import run_node_script
from tests.support.inprocess import RunningBroker


async def test_one_session_with_both_chains_signs_a_solana_message(node: RunningBroker) -> None:
    with trio.fail_after(30):
        run = await run_node_script(
            "multichain_solana.mjs",
            {"ws": node.ws_url(), "origin": "https://interop.example", "solana": dev_chain_id()},
        )
    assert run.ok, run.explain()
    assert run.report is not None
    signed = run.report["observed"]["signMessage"]
    assert signed["scope"] == dev_chain_id()
