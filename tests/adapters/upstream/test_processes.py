"""The test helper that runs ``scopecast serve`` as a real process (tests/support/processes.py)."""

import signal

import pytest
import trio

from tests.support.processes import ProcessFailed, ScopecastProcess, start_scopecast


async def test_start_rpc_kill_restart_on_the_same_port_stop() -> None:
    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            node = await start_scopecast(nursery, "--block-time", "0")
            port, first_pid = node.port, node.pid
            assert port > 0
            assert await node.result("eth_chainId") == "0x539"
            assert await node.kill() == -signal.SIGKILL
            assert not node.running
            with pytest.raises(OSError, match="connect"):
                await trio.open_tcp_stream("127.0.0.1", port)
            await node.restart()
            assert (node.port, node.running) == (port, True)
            assert node.pid != first_pid
            assert (await node.result("eth_blockNumber")).startswith("0x")
            assert await node.stop() == 0  # SIGTERM: a graceful exit
            nursery.cancel_scope.cancel()


async def test_a_process_that_cannot_start_fails_with_its_output() -> None:
    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            node = ScopecastProcess(nursery, ["--no-such-flag"])
            with pytest.raises(ProcessFailed, match="no-such-flag"):
                await node.start()
            assert not node.running


async def test_cancelling_the_nursery_kills_the_process() -> None:
    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            node = await start_scopecast(nursery, "--block-time", "0", env={"SCOPECAST_X": "1"})
            nursery.cancel_scope.cancel()
        assert not node.running
        assert node.returncode == -signal.SIGKILL
