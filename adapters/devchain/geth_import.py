"""Starting from a geth genesis file and an RLP chain file (``geth import`` format).

The genesis state comes from ``alloc``; the fork schedule from the genesis config and the chain's
headers (see :mod:`.forks`); every block is executed by py-evm with all checks on except the
proof-of-work seal. An optional ``engine_forkchoiceUpdated`` request file names the head, safe and
finalized blocks.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import rlp

from .bootstrap import evm_from_genesis
from .chain import LocalChain
from .forks import HeaderSummary, schedule_from_geth_config
from .genesis import read_geth_genesis

# Positions in an RLP block header list.
_DIFFICULTY, _NUMBER, _TIMESTAMP = 7, 8, 11


class ChainFileError(ValueError):
    """The chain file does not fit the genesis or is not RLP."""


def split_rlp_items(payload: bytes) -> list[bytes]:
    """Cut concatenated RLP items apart (each block of a chain file is one list item)."""
    items = []
    position = 0
    while position < len(payload):
        size = _item_size(payload, position)
        if position + size > len(payload):
            raise ChainFileError(f"truncated RLP item at byte {position}")
        items.append(payload[position : position + size])
        position += size
    return items


def _item_size(payload: bytes, position: int) -> int:
    prefix = payload[position]
    if prefix < 0x80:
        return 1
    if prefix <= 0xB7:
        return 1 + prefix - 0x80
    if prefix <= 0xBF:
        width = prefix - 0xB7
        return 1 + width + int.from_bytes(payload[position + 1 : position + 1 + width], "big")
    if prefix <= 0xF7:
        return 1 + prefix - 0xC0
    width = prefix - 0xF7
    return 1 + width + int.from_bytes(payload[position + 1 : position + 1 + width], "big")


def summarize(raw_block: bytes) -> HeaderSummary:
    """Number, timestamp and difficulty of an RLP block, without knowing its fork."""
    header = rlp.decode(raw_block)[0]
    return HeaderSummary(
        number=int.from_bytes(header[_NUMBER], "big"),
        timestamp=int.from_bytes(header[_TIMESTAMP], "big"),
        difficulty=int.from_bytes(header[_DIFFICULTY], "big"),
    )


def read_forkchoice(path: Path) -> dict[str, str]:
    """``headBlockHash``, ``safeBlockHash`` and ``finalizedBlockHash`` of a forkchoice request."""
    request = json.loads(path.read_text())
    state: dict[str, Any] = request["params"][0] if "params" in request else request
    return {key: str(value).lower() for key, value in state.items() if key.endswith("BlockHash")}


def import_geth_chain(
    genesis_path: Path,
    chain_path: Path | None = None,
    forkchoice_path: Path | None = None,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> LocalChain:
    """A chain holding the genesis and every block of the chain file (if any), executed.

    ``progress(done, total)`` is called after each block.
    """
    genesis = read_geth_genesis(genesis_path)
    raw_blocks = split_rlp_items(chain_path.read_bytes()) if chain_path else []
    summaries = [summarize(raw) for raw in raw_blocks]
    schedule = schedule_from_geth_config(
        genesis.config,
        genesis_difficulty=int(genesis.params["difficulty"]),
        genesis_time=int(genesis.params["timestamp"]),
        headers=summaries,
    )
    chain_id = int(genesis.config.get("chainId", 1))
    chain = LocalChain(evm_from_genesis(chain_id, schedule, genesis), schedule)
    for raw, summary in zip(raw_blocks, summaries, strict=True):
        vm_class = chain.vm_class(summary.number)
        block = rlp.decode(raw, sedes=vm_class.get_block_class())
        parent = "0x" + block.header.parent_hash.hex()
        if chain.by_hash(parent) is None:
            raise ChainFileError(
                f"block {summary.number} has parent {parent}, which is neither the genesis "
                f"({chain.canonical[0].hash}) nor an earlier block of the file"
            )
        chain.adopt(chain.import_evm_block(block))
        if progress is not None:
            progress(summary.number - summaries[0].number + 1, len(summaries))
    if forkchoice_path is not None:
        apply_forkchoice(chain, read_forkchoice(forkchoice_path))
    return chain


def apply_forkchoice(chain: LocalChain, forkchoice: dict[str, str]) -> None:
    """Make the forkchoice head the canonical head and remember the safe and finalized blocks."""
    head = chain.by_hash(forkchoice.get("headBlockHash", ""))
    if head is None:
        raise ChainFileError(
            f"forkchoice head {forkchoice.get('headBlockHash')} is not in the chain"
        )
    if not chain.is_canonical(head):
        raise ChainFileError("forkchoice head is not on the imported chain")
    chain.rewind(head.number)
    chain.safe_hash = forkchoice.get("safeBlockHash")
    chain.finalized_hash = forkchoice.get("finalizedBlockHash")
    chain.state_changed()
