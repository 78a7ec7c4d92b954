"""The soak's Solana section (soak/solana.py): its clients read Solana notifications out of
``wallet_notify``, the judges count what was lost, repeated or out of order, and the report and its
targets say so."""

from __future__ import annotations

import json
from typing import Any

from soak import report
from soak.solana import CHAIN, SolanaClient, _decode, judge_changes, judge_slots


def _notify(method: str, subscription: int, result: dict[str, Any], cursor: str) -> bytes:
    inner = {"method": method, "params": {"subscription": subscription, "result": result}}
    params = {"scope": CHAIN, "notification": inner, "cursor": cursor}
    return json.dumps({"jsonrpc": "2.0", "method": "wallet_notify", "params": params}).encode()


def test_a_client_keeps_slots_and_account_changes_with_their_cursor() -> None:
    client = SolanaClient(0, [1], recipient="R", slot_sub=3, account_sub=4)
    client._notified(_decode(_notify("slotNotification", 3, {"slot": 9, "parent": 8}, "c1")))
    change = {"context": {"slot": 9}, "value": {"lamports": 1_000_000, "owner": "11111111"}}
    client._notified(_decode(_notify("accountNotification", 4, change, "c2")))
    assert [s for _, s in client.slots] == [9]
    assert [(slot, lamports) for _, slot, lamports in client.changes] == [(9, 1_000_000)]
    assert client.cursor == "c2"
    assert client.errors == []
    # a notification of another subscription is an error; so is a resume that was not complete
    client._notified(_decode(_notify("slotNotification", 7, {"slot": 10}, "c3")))
    resumed = {"method": "scopecast_resumed", "params": {"replayed": 2, "complete": False}}
    client._notified(_decode(json.dumps(resumed).encode()))
    assert len(client.errors) == 2
    assert client.resubscribe
    SolanaClient._check_answer(12)


def test_slots_are_judged_against_the_blocks() -> None:
    blocks = set(range(10, 30))
    assert vars(judge_slots([11, 12, 13, 14], 10, blocks)) == {
        "lost": 0,
        "duplicated": 0,
        "out_of_order": 0,
    }
    # 12 and 13 never came; 14 came twice, 11 after 14; 10 (the anchor) again
    verdict = judge_slots([14, 14, 11, 10, 15], 10, blocks)
    assert (verdict.lost, verdict.duplicated, verdict.out_of_order) == (2, 2, 1)
    # a slot without a block is not lost
    assert judge_slots([11, 13], 10, blocks - {12}).lost == 0


def test_account_changes_are_judged_against_the_balances() -> None:
    expected = {100, 201, 303, 406}
    assert vars(judge_changes([(5, 201), (6, 303), (8, 406)], 100, expected, 406)) == {
        "lost": 0,
        "duplicated": 0,
        "out_of_order": 0,
    }
    verdict = judge_changes([(6, 303), (6, 303), (5, 201)], 100, expected, 406)
    assert (verdict.lost, verdict.duplicated, verdict.out_of_order) == (1, 1, 1)
    # nothing received: every balance up to the last one sent is lost
    assert judge_changes([], None, expected, 406).lost == 4


def _row(**changes: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "name": "solana_kill_web",
        "label": "kill -9 of a web process",
        "runs": 2,
        "clients": 60,
        "slots": {"lost": 0, "duplicated": 0, "out_of_order": 0},
        "account_changes": {"lost": 0, "duplicated": 0, "out_of_order": 0},
        "account_changes_received": 1200,
        "clients_short_of_last_balance": 0,
        "recover_p50_s": 1.5,
        "recover_p99_s": 2.5,
        "not_recovered": 0,
        "client_errors": 0,
        "client_error_kinds": [],
        "reconnects": 60,
        "session_checks": 120,
        "sessions_lost": 0,
        "invokes_failed": 0,
        "mode": "quick",
        "date": "2026-11-28T05:00:00+00:00",
        "machine": {"load_average_at_start": [1.0, 1.0, 1.0]},
    }
    row.update(changes)
    return row


def test_the_report_has_a_solana_section_and_targets() -> None:
    good = _row()
    slots_only = _row(name="solana_restart_redis", account_changes=None)
    lossy = _row(
        name="solana_kill_leading_worker",
        label="kill -9 of the leading worker",
        slots={"lost": 7, "duplicated": 0, "out_of_order": 0},
    )
    results = {
        "solana": {"faults": [good, slots_only, lossy], "settings": {"solana_slot_time": "0.4"}}
    }
    text = "\n".join(report._solana_section(results["solana"]))
    assert "## Solana" in text
    assert "| kill -9 of a web process | 2 x 60 | 0 / 0 / 0 | 0 / 0 / 0 (1200) | 0 |" in text
    assert "| not judged |" in text
    verdicts = [t for t in report.targets(results) if t["target"].startswith("Solana")]
    assert [t["met"] for t in verdicts] == [True, False, False]
    assert "account changes not judged" in verdicts[1]["measured"]
    assert "slots 7 / 0 / 0" in verdicts[2]["measured"]
    assert "Slots lost on: kill -9 of the leading worker" in text
    assert "No account change reached any client" not in text
    nothing = _row(account_changes_received=0)
    quiet = "\n".join(report._solana_section({"faults": [nothing], "settings": {}}))
    assert "No account change reached any client" in quiet
    assert "Slots lost on" not in quiet
    frozen = _row(
        name="solana_freeze_upstream",
        label="the followed node SIGSTOP",
        slots={"lost": 4, "duplicated": 0, "out_of_order": 0},
    )
    failover = "\n".join(report._solana_section({"faults": [frozen], "settings": {}}))
    assert "Slots lost on: the followed node SIGSTOP.** A new leader resumes" in failover
    redis = _row(name="solana_restart_redis", sessions_lost=3, session_checks=400)
    emptied = "\n".join(report._solana_section({"faults": [redis], "settings": {}}))
    assert "3 of 400 session checks after the Redis restart" in emptied
    assert report._solana_section(None) == []
