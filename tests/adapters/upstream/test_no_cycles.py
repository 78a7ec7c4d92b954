"""Forwarded calls leave no reference cycle behind, whatever their outcome.

The GC keeper (``broker.operator.gc_keeper``) freezes what is alive every quarter second; a call
under way then is frozen with it, and if its objects end in a cycle the collector never looks at
them again: a soak's web process kept thousands of httpx requests and responses that way (they form
a cycle of their own: a response and the stream bound to it), and every JSON-RPC error kept its
call's frames (the error held in a local of the frame its traceback holds). Reference counting must
free a call once it ends."""

from __future__ import annotations

import collections
import contextlib
import gc

import pytest
import trio

from adapters.upstream import UpstreamAdapter
from schemas.errors import WireError
from tests.support.cycles import collector_off, cyclic_garbage

from .fake_node import Error, Hang, Status
from .test_forwarding import BALANCE_PARAMS, call, start_nodes, upstream_adapter

WATCHED = ("broker", "adapters", "schemas", "httpx", "httpcore", "h11")


@pytest.mark.parametrize(
    "answer",
    ["0x2a", Error(-32000, "execution reverted"), Status(503, b"busy"), Hang()],
    ids=["result", "json-rpc-error", "http-503", "timeout"],
)
async def test_a_forwarded_call_leaves_no_cycle(nursery: trio.Nursery, answer: object) -> None:
    first, second = await start_nodes(nursery, 2)
    first.script["eth_getBalance"] = answer
    second.script["eth_getBalance"] = "0x2b"  # where a failed call is tried next
    with trio.fail_after(30):
        async with upstream_adapter(first, second, bench_after=100) as adapter:
            for _ in range(2):  # the pools' connections, opened before the count starts
                await _one_call(adapter)
            gc.collect()
            with collector_off():
                for _ in range(10):
                    await _one_call(adapter)
                found = cyclic_garbage(WATCHED)
    assert found == collections.Counter(), found


async def _one_call(adapter: UpstreamAdapter) -> None:
    with contextlib.suppress(WireError):
        await call(adapter, "eth_getBalance", BALANCE_PARAMS)
