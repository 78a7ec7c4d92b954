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
from bench.workloads import (
    FanoutSystem,
    Settings,
    invoke,
    run_fanout_systems,
    start_scopecast,
)

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


#: How an event of each kind is made: a Solana method and its params.
EVENTS: dict[str, tuple[str, list[Any]]] = {
    "slots": ("scopecast_advanceSlots", []),
    "accounts": ("requestAirdrop", [WATCHED, 1]),
}


def publish(server: Child, kind: str, count: int) -> list[float]:
    """``count`` events of ``kind`` made through the server's dispatcher; their publish times."""
    method, params = EVENTS[kind]
    command = {"cmd": "solana", "method": method, "params": params, "count": count}
    published: list[float] = server.request(command, 300)["published"]
    return published


def _direct(method: str, params: list[Any]) -> list[Any]:
    return [method, params]


def _in_session(method: str, params: list[Any]) -> list[Any]:
    return invoke(method, params, SCOPE)


def _system(
    form: str,
    label: str,
    memory_label: str,
    path: str,
    step: Callable[[str, list[Any]], list[Any]],
    **rest: Any,
) -> FanoutSystem:
    """One form of the Solana fan-out: its script steps are ``step(method, params)``."""
    return FanoutSystem(
        key=f"scopecast-solana-{form}",
        label=label,
        memory_label=memory_label,
        start=start_scopecast("devchain"),
        path=path,
        subscribe={kind: [step(*SUBSCRIBE[kind])] for kind in KINDS},
        unsubscribe={kind: [step(UNSUBSCRIBE[kind], ["$sub"])] for kind in KINDS},
        kinds=KINDS,
        trigger=publish,
        **rest,
    )


SOLANA_SYSTEMS = [
    _system(
        "direct",
        "scopecast, Solana direct (slot/accountNotification)",
        "scopecast, bare connection on /solana/ws/v3",
        "/solana/ws/v3/dev",
        _direct,
        method=NOTIFICATION,
        idle_script=[],
    ),
    _system(
        "session",
        "scopecast, Solana in a session (wallet_notify)",
        "scopecast, connection holding a Solana session",
        "/ws/v3/dev",
        _in_session,
        method="wallet_notify",
        idle_script=[["wallet_createSession", SESSION_REQUEST]],
        origin="https://dapp",
    ),
]


def run_solana(settings: Settings, log: Callable[[str], None]) -> dict[str, Any]:
    """Idle memory and the fan-out of slots and accounts, for each form."""
    return run_fanout_systems(SOLANA_SYSTEMS, settings, log, KINDS, "Solana fan-out and memory")
