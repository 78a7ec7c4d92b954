"""The Solana fan-out workload (bench/solana.py): its clients' scripts hold against a real broker,
the bench server's ``solana`` command makes the events they count, the load generator checks
Solana's notifications, and the report renders the figures."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
import trio

from bench import loadgen, report
from bench.server import _calls
from bench.solana import EVENTS, KINDS, SOLANA_SYSTEMS, WATCHED, publish
from bench.workloads import FanoutSystem
from tests.support.inprocess import RunningBroker, dapp


def _with_sub(script: list[list[Any]], sub: int) -> list[list[Any]]:
    """A script with ``"$sub"`` replaced, as the load generator does."""
    loaded: list[list[Any]] = json.loads(json.dumps(script).replace('"$sub"', json.dumps(sub)))
    return loaded


def _subscription_id(result: Any) -> Any:
    if isinstance(result, dict):  # wallet_invokeMethod's answer
        return result["result"]["result"]
    return result


@pytest.mark.parametrize("system", SOLANA_SYSTEMS, ids=lambda s: s.key)
async def test_the_scripts_subscribe_get_the_events_and_unsubscribe(
    node: RunningBroker, system: FanoutSystem
) -> None:
    url = f"ws://127.0.0.1:{node.port}{system.path}"
    with trio.fail_after(30):
        async with dapp(url, origin=system.origin) as conn:
            for method, params in system.idle_script:
                await conn.result(method, params)
            assert system.subscribe is not None
            for kind in KINDS:
                ((method, params),) = system.subscribe[kind]
                sub = _subscription_id(await conn.result(method, params))
                assert loadgen._is_subscription_id(sub)
                assert isinstance(sub, int)
                # what bench.server's `solana` command runs for publish(server, kind, 3)
                await _calls(node.broker, 3, *EVENTS[kind], "solana")
                received = []
                for _ in range(3):
                    message = await conn.notification()
                    message["params"]["cursor"] = "…"  # taken out by Dapp; the frame had one
                    received.append(json.dumps(message).encode())
                sample = SimpleNamespace(index=0, messages=received, sub_id=sub)
                assert loadgen.verify(sample, 3, system.notification(kind)) is None  # type: ignore[arg-type]
                ((method, params),) = _with_sub(system.unsubscribe_script(kind), sub)
                assert _subscription_id(await conn.result(method, params)) is True


def test_publish_asks_the_server_for_the_kind_of_event() -> None:
    sent: list[dict[str, Any]] = []

    class Server:
        def request(self, command: dict[str, Any], timeout: float) -> dict[str, Any]:
            sent.append(command)
            return {"published": [1.0] * command["count"]}

    assert publish(Server(), "slots", 2) == [1.0, 1.0]  # type: ignore[arg-type]
    assert publish(Server(), "accounts", 1) == [1.0]  # type: ignore[arg-type]
    assert sent == [
        {"cmd": "solana", "method": "scopecast_advanceSlots", "params": [], "count": 2},
        {"cmd": "solana", "method": "requestAirdrop", "params": [WATCHED, 1], "count": 1},
    ]


def test_the_load_generator_checks_solana_notifications() -> None:
    def slot(sub: int, n: int) -> bytes:
        result = {"parent": n - 1, "root": n - 1, "slot": n}
        return json.dumps(
            {"method": "slotNotification", "params": {"subscription": sub, "result": result}}
        ).encode()

    good = SimpleNamespace(index=0, messages=[slot(7, 4), slot(7, 5)], sub_id=7)
    assert loadgen.verify(good, 2, "slotNotification") is None  # type: ignore[arg-type]
    gap = SimpleNamespace(index=0, messages=[slot(7, 4), slot(7, 6)], sub_id=7)
    assert "not consecutive" in str(loadgen.verify(gap, 2, "slotNotification"))  # type: ignore[arg-type]
    other = SimpleNamespace(index=0, messages=[slot(8, 4)], sub_id=7)
    assert "subscription 8 != 7" in str(loadgen.verify(other, 1, "slotNotification"))  # type: ignore[arg-type]
    assert loadgen._sequence_number({"context": {"slot": 9}, "value": {}}) == 9
    assert loadgen._sequence_number({"number": "0x10"}) == 16
    assert loadgen._is_subscription_id(3)
    assert loadgen._is_subscription_id("0xab")
    assert not loadgen._is_subscription_id(True)


def test_the_report_has_a_solana_section() -> None:
    figures = {
        "subscribers": 1000,
        "notifications_per_s": 50_000,
        "notifications_per_server_cpu_s": 60_000,
        "p50_ms": 10.0,
        "p99_ms": 20.0,
        "server_cpu_share": 0.9,
        "loadgen_cpu_share": 0.5,
    }
    solana = {
        "fanout": {
            kind: {"scopecast-solana-direct": {"label": "direct", "sizes": [figures]}}
            for kind in KINDS
        },
        "memory": {
            "scopecast-solana-direct": {
                "label": "bare",
                "sizes": [{"connections": 1000, "kib_per_connection": 6.5}],
            }
        },
    }
    text = "\n".join(report._solana_section(solana))
    assert "## Fan-out: Solana slots and accounts" in text
    assert "### slotNotification" in text
    assert "### accountNotification" in text
    assert "| direct | 1,000 | 50,000 | 60,000 | 10.0 | 20.0 | 0.90 | 0.50 |" in text
    assert "bare: 6.5 KiB at 1,000" in text
    assert report._solana_section(None) == []
