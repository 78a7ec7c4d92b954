"""viem's watchBlocks across a dropped connection, with the documented resume helper
(docs/resume/resuming-websocket.mjs): every block once, in order; see ``viem_resume.mjs``."""

from __future__ import annotations

import trio

from tests.interop.nodejs import run_node_script
from tests.support.inprocess import RunningBroker


async def test_viem_watch_blocks_misses_nothing_across_a_drop(node: RunningBroker) -> None:
    with trio.fail_after(60):
        run = await run_node_script(
            "viem_resume.mjs", {"ws": node.ws_url(), "http": node.http_url()}
        )
    assert run.ok, run.explain()
    report = run.report
    assert report is not None
    observed = report["observed"]
    seen = observed["seen"]
    assert seen == list(range(seen[0], seen[0] + len(seen)))
    assert observed["resumes"][0]["complete"] is True
    # the heads viem saw are the broker's canonical blocks, and it saw every one since the first
    head = int((await node.rpc("eth_blockNumber", []))["result"], 16)
    assert seen[-1] == head
