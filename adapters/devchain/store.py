"""A dev chain kept on disk (``state_dir``): py-evm's key/value database as an append-only journal.

Every value py-evm writes (trie nodes, headers, bodies, receipts, its canonical indexes) goes to an
in-memory dict, as in its own ``MemoryDB``, and into a list of pending writes; :meth:`ChainStore.commit`
appends the pending writes and the chain's own state (its head hash, dev method state roots and
clock) to ``chain.journal`` as one record, after each block adopted or rewound. A start reads the
records back in order; a record cut short by a ``kill -9`` (its length or checksum does not match)
and whatever follows it are dropped, so the chain restarts at the last head it committed, with the
same hashes. Records are written with ``write(2)`` and not synced: they survive the process being
killed, not the machine losing power.
"""

from __future__ import annotations

import os
import struct
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import msgspec
from eth.db.backends.base import BaseDB

JOURNAL: Final = "chain.journal"
_HEADER: Final = struct.Struct(">II")  # payload length, crc32 of the payload


class _Record(msgspec.Struct, array_like=True):
    #: (key, value) written, value None for a delete, in the order py-evm made them.
    writes: list[tuple[bytes, bytes | None]]
    #: The chain's own state at this point (see :meth:`LocalChain.saved_state`), or None.
    meta: dict[str, Any] | None = None


_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(_Record).decode


class JournalDB(BaseDB):
    """py-evm's database: a dict, whose writes are also kept until the next commit."""

    def __init__(self, values: dict[bytes, bytes]) -> None:
        self._kv = values
        self._pending: list[tuple[bytes, bytes | None]] = []
        self._lock = threading.Lock()  # blocks are built in worker threads

    def __getitem__(self, key: bytes) -> bytes:
        return self._kv[key]

    def __setitem__(self, key: bytes, value: bytes) -> None:
        with self._lock:
            self._kv[key] = value
            self._pending.append((key, value))

    def __delitem__(self, key: bytes) -> None:
        with self._lock:
            del self._kv[key]
            self._pending.append((key, None))

    def _exists(self, key: bytes) -> bool:
        return key in self._kv

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._kv)

    def __len__(self) -> int:
        return len(self._kv)

    def take_pending(self) -> list[tuple[bytes, bytes | None]]:
        with self._lock:
            pending, self._pending = self._pending, []
        return pending


class ChainStore:
    """The journal of one dev chain in ``folder`` (created if missing), read back on opening."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / JOURNAL
        values: dict[bytes, bytes] = {}
        #: The chain's state of the last complete record (None: a new chain).
        self.meta: dict[str, Any] | None = None
        kept = 0
        if self.path.exists():
            data = self.path.read_bytes()
            for end, record in _records(data):
                for key, value in record.writes:
                    if value is None:
                        values.pop(key, None)
                    else:
                        values[key] = value
                if record.meta is not None:
                    self.meta = record.meta
                kept = end
            if kept < len(data):  # a record cut short: written again from there on
                os.truncate(self.path, kept)
        self.db = JournalDB(values)
        #: Written into every record's meta (what the chain is: checked on the next start).
        self.identity: dict[str, Any] = {}
        self._file = open(self.path, "ab", buffering=0)  # noqa: SIM115 - closed by close()

    def commit(self, meta: dict[str, Any] | None) -> None:
        """Append the writes since the last commit, and ``meta``, as one record."""
        if meta is not None:
            meta = {**meta, **self.identity}
        payload = _encode(_Record(self.db.take_pending(), meta))
        self._file.write(_HEADER.pack(len(payload), zlib.crc32(payload)) + payload)

    def close(self) -> None:
        self._file.close()


def _records(data: bytes) -> Iterator[tuple[int, _Record]]:
    """The complete records of a journal, each with the offset where it ends."""
    offset = 0
    while offset + _HEADER.size <= len(data):
        length, checksum = _HEADER.unpack_from(data, offset)
        start = offset + _HEADER.size
        payload = data[start : start + length]
        if len(payload) < length or zlib.crc32(payload) != checksum:
            return
        try:
            record = _decode(payload)
        except msgspec.DecodeError:
            return
        offset = start + length
        yield offset, record
