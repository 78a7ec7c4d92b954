"""The payloads every system under test sends: the same bytes for scopecast and for the peers.

A head is a ``newHeads``-like header of exactly :data:`HEAD_SIZE` bytes (the size the issue's peer
table was measured with; a real header with its 256-byte bloom is about 1.6 KB, as in the dev chain
reference run). A log is an ERC-20 ``Transfer`` log as geth renders it. Both carry the block number
at a fixed width, so a frame's size does not change from one event to the next.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import msgspec

HEAD_SIZE: Final = 639
CHAIN: Final = "eip155:1337"
FIRST_BLOCK: Final = 0x1000000
TOKEN: Final = "0x5fbdb2315678afecb367f032d93f642f64180aa3"
TRANSFER_TOPIC: Final = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"
#: The subscription id the peers hand out (scopecast draws its own, of the same length).
PEER_SUBSCRIPTION: Final = "0x" + "5c" * 16

_encoder: Final = msgspec.json.Encoder()


def block_hash(number: int) -> str:
    return f"0x{number:064x}"


def head_json(number: int) -> bytes:
    """A ``newHeads``-like header of exactly :data:`HEAD_SIZE` bytes for block ``number``."""
    fields = {
        "parentHash": block_hash(number - 1),
        "miner": "0x0000000000000000000000000000000000000000",
        "stateRoot": f"0x{number * 7919:064x}",
        "transactionsRoot": "0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421",
        "receiptsRoot": "0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421",
        "difficulty": "0x0",
        "number": f"0x{number:07x}",
        "gasLimit": "0x1c9c380",
        "gasUsed": "0x0",
        "timestamp": f"0x{1_700_000_000 + number:08x}",
        "extraData": "0x",
        "baseFeePerGas": "0x3b9aca00",
        "hash": block_hash(number),
    }
    unpadded = len(_encoder.encode(fields))
    fields["extraData"] = "0x" + "ab" * ((HEAD_SIZE - unpadded) // 2)
    if (HEAD_SIZE - unpadded) % 2:
        fields["gasUsed"] = "0x5208"  # an odd remainder: three more bytes, one less pair of digits
        fields["extraData"] = "0x" + "ab" * ((HEAD_SIZE - unpadded - 3) // 2)
    encoded = _encoder.encode(fields)
    assert len(encoded) == HEAD_SIZE, len(encoded)
    return encoded


def log_json(number: int, index: int = 0) -> bytes:
    """An ERC-20 ``Transfer`` log of block ``number`` as geth renders it (``removed: false``)."""
    return _encoder.encode(
        {
            "address": TOKEN,
            "topics": [
                TRANSFER_TOPIC,
                "0x000000000000000000000000f39fd6e51aad88f6f4ce6ab8827279cfffb92266",
                "0x00000000000000000000000070997970c51812dc3a010c7d01b50e0d17dc79c8",
            ],
            "data": "0x0000000000000000000000000000000000000000000000056bc75e2d63100000",
            "blockNumber": f"0x{number:07x}",
            "transactionHash": f"0x{number * 31 + index:064x}",
            "transactionIndex": "0x0",
            "blockHash": block_hash(number),
            "blockTimestamp": f"0x{1_700_000_000 + number:08x}",
            "logIndex": f"0x{index:x}",
            "removed": False,
        }
    )


def log_topics() -> tuple[str, ...]:
    return (
        TRANSFER_TOPIC,
        "0x000000000000000000000000f39fd6e51aad88f6f4ce6ab8827279cfffb92266",
        "0x00000000000000000000000070997970c51812dc3a010c7d01b50e0d17dc79c8",
    )


def peer_notification(result: bytes) -> bytes:
    """The ``eth_subscription`` message the peers broadcast (one subscription id for everyone)."""
    return (
        b'{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"'
        + PEER_SUBSCRIPTION.encode()
        + b'","result":'
        + result
        + b"}}"
    )


def payload(kind: str, number: int) -> bytes:
    """The ``result`` of the notification of event ``number`` of a ``heads`` or ``logs`` burst."""
    return head_json(number) if kind == "heads" else log_json(number)


KINDS: Final = ("heads", "logs")


def write_peer_files(directory: Path, count: int) -> None:
    """``heads.jsonl`` and ``logs.jsonl``: the peers' notifications of ``count`` consecutive blocks,
    one per line (the peers read them at start, so they send exactly scopecast's payload bytes)."""
    directory.mkdir(parents=True, exist_ok=True)
    for kind in KINDS:
        lines = (peer_notification(payload(kind, FIRST_BLOCK + i)) for i in range(count))
        (directory / f"{kind}.jsonl").write_bytes(b"\n".join(lines) + b"\n")


def read_peer_files(directory: Path) -> dict[str, list[bytes]]:
    return {kind: (directory / f"{kind}.jsonl").read_bytes().splitlines() for kind in KINDS}
