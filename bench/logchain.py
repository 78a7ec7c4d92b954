"""The log emitter of the getLogs figure: a contract that emits many logs per call.

A contract emits ``count`` ERC-20 ``Transfer`` logs per call (``from`` = the call's second word,
``to`` = the caller); :data:`SENDERS` distinct ``from`` values rotate over the calls, so a query for
one of them matches exactly one call in :data:`SENDERS` across the whole chain. With 100 calls of
1,000 logs: 100,000 logs, and a ``from`` query returning exactly 10,000.
:func:`bench.workloads.build_log_chain` sends the calls through the dev chain's public methods
(``eth_sendRawTransaction``; with ``--block-time 0`` the dev chain mines each in a block of its own).
"""

from __future__ import annotations

from typing import Final

from adapters.devchain.assembler import Item, Label, Ref, assemble, deployer

__all__ = ["TRANSFER_TOPIC", "deployer", "emitter_runtime", "sender_topic", "sender_word"]
from adapters.devchain.token import TRANSFER_TOPIC

CHAIN_ID: Final = 1337
SENDERS: Final = 10
LOGS_PER_CALL: Final = 1_000
GAS_PER_CALL: Final = 2_500_000


def emitter_runtime() -> bytes:
    """``emit(count, from)``: ``count`` times ``LOG3(Transfer, from, caller)`` with the countdown
    as the 32-byte data."""
    program: list[Item] = [
        0, "CALLDATALOAD",                       # [count]
        32, "CALLDATALOAD",                      # [count, from]
        Label("loop"),
        "DUP2", "ISZERO", Ref("end"), "JUMPI",
        "DUP2", 0, "MSTORE",                     # memory[0] = count
        "CALLER", "DUP2", TRANSFER_TOPIC, 32, 0, "LOG3",
        "SWAP1", 1, "SWAP1", "SUB", "SWAP1",     # [count - 1, from]
        Ref("loop"), "JUMP",
        Label("end"),
        "STOP",
    ]  # fmt: skip
    return assemble(program)


def sender_word(index: int) -> bytes:
    """The ``from`` of the calls with ``index`` (an address-like 32-byte word)."""
    return (0xA11CE0000 + index).to_bytes(32, "big")


def sender_topic(index: int) -> str:
    return "0x" + sender_word(index).hex()
