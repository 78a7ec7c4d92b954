"""Solana PubSub fan-out: slot and account notifications to 1k/5k/10k subscribers, beside the EVM
figures.

The server is the broker as ``make run`` builds it (``bench.server devchain``: the EVM dev chain
and the ``solana`` network beside it, ``--block-time 0``), on the server core. Events are made
through the broker's dispatcher on the ``solana`` network, so the runtime's work is in every
latency, as ``evm_mine`` is in the EVM reference figure:

- **slots**: ``scopecast_advanceSlots`` (one empty slot per call), each a ``slotNotification`` to
  every ``slotSubscribe``;
- **accounts**: ``requestAirdrop`` of 1 lamport to one funded dev account (each airdrop lands in
  a slot of its own), each an ``accountNotification`` to every ``accountSubscribe`` of it.

Two forms, as for EVM: direct subscriptions on ``/solana/ws/v3/dev`` (Solana's integer ids), and
subscriptions made inside a session through ``wallet_invokeMethod`` with the ``solana:<ref>``
scope, delivered as ``wallet_notify``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from adapters._ed25519 import DEV_MNEMONIC, derive_keypairs
from adapters.solana import dev_chain_id
from bench.procs import Child
from bench.workloads import FanoutSystem, Settings, run_fanout_systems, start_scopecast

SCOPE = dev_chain_id()
#: The account every ``accountSubscribe`` watches: a funded dev account, so that an airdrop of
#: 1 lamport keeps it rent-exempt.
WATCHED = str(derive_keypairs(DEV_MNEMONIC, 6)[5].pubkey())
KINDS = ("slots", "accounts")
KIND_TITLES = {"slots": "Solana slotNotification", "accounts": "Solana accountNotification"}
SUBSCRIBE: dict[str, list[Any]] = {
    "slots": ["slotSubscribe", []],
    "accounts": ["accountSubscribe", [WATCHED, {"encoding": "base64", "commitment": "confirmed"}]],
}
UNSUBSCRIBE = {"slots": "slotUnsubscribe", "accounts": "accountUnsubscribe"}
NOTIFICATION = {"slots": "slotNotification", "accounts": "accountNotification"}
SESSION_REQUEST = {
    "optionalScopes": {
        SCOPE: {
            "methods": [*(m for m, _ in SUBSCRIBE.values()), *UNSUBSCRIBE.values()],
            "notifications": list(NOTIFICATION.values()),
        }
    }
}


def _invoke(method: str, params: list[Any]) -> list[Any]:
    return [
        "wallet_invokeMethod",
        {"scope": SCOPE, "request": {"method": method, "params": params}},
    ]


def publish(server: Child, kind: str, count: int) -> list[float]:
    """``count`` events of ``kind`` made through the server's dispatcher; their publish times."""
    if kind == "slots":
        method, params = "scopecast_advanceSlots", []
    else:
        method, params = "requestAirdrop", [WATCHED, 1]
    command = {"cmd": "solana", "method": method, "params": params, "count": count}
    published: list[float] = server.request(command, 300)["published"]
    return published


SOLANA_SYSTEMS = [
    FanoutSystem(
        key="scopecast-solana-direct",
        label="scopecast, Solana direct (slot/accountNotification)",
        memory_label="scopecast, bare connection on /solana/ws/v3",
        start=start_scopecast("devchain"),
        path="/solana/ws/v3/dev",
        method=NOTIFICATION,
        idle_script=[],
        subscribe={kind: [SUBSCRIBE[kind]] for kind in KINDS},
        unsubscribe={kind: [[UNSUBSCRIBE[kind], ["$sub"]]] for kind in KINDS},
        kinds=KINDS,
        trigger=publish,
    ),
    FanoutSystem(
        key="scopecast-solana-session",
        label="scopecast, Solana in a session (wallet_notify)",
        memory_label="scopecast, connection holding a Solana session",
        start=start_scopecast("devchain"),
        path="/ws/v3/dev",
        method="wallet_notify",
        idle_script=[["wallet_createSession", SESSION_REQUEST]],
        subscribe={kind: [_invoke(*SUBSCRIBE[kind])] for kind in KINDS},
        unsubscribe={kind: [_invoke(UNSUBSCRIBE[kind], ["$sub"])] for kind in KINDS},
        origin="https://dapp",
        kinds=KINDS,
        trigger=publish,
    ),
]


def run_solana(settings: Settings, log: Callable[[str], None]) -> dict[str, Any]:
    """Idle memory and the fan-out of slots and accounts, for each form."""
    return run_fanout_systems(SOLANA_SYSTEMS, settings, log, KINDS, "Solana fan-out and memory")
