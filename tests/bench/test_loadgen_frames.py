"""The load generator's frame counting (bench/loadgen.py): a message is counted once, when its
last byte arrives, however the stream is cut into reads, on the notification fast path and off it."""

from __future__ import annotations

import random
import socket

from bench import loadgen


def _server_frame(payload: bytes, opcode: int = loadgen.OP_TEXT, fin: bool = True) -> bytes:
    first = (0x80 if fin else 0) | opcode
    length = len(payload)
    if length < 126:
        return bytes((first, length)) + payload
    if length < 65536:
        return bytes((first, 126)) + length.to_bytes(2, "big") + payload
    return bytes((first, 127)) + length.to_bytes(8, "big") + payload


def _conn() -> loadgen.Conn:
    a, b = socket.socketpair()
    b.close()
    conn = loadgen.Conn(a, 0, None, sample=False)
    conn.state = loadgen.READY
    return conn


def _stream() -> tuple[bytes, list[int]]:
    """Frames of every size class, and after which byte each message ends."""
    parts = [
        _server_frame(b'{"jsonrpc":"2.0","method":"eth_subscription"' + b"x" * 600 + b"}"),
        _server_frame(b"y" * 100),  # short: the general path
        _server_frame(b"p", opcode=loadgen.OP_PING),  # control: answered, not counted
        _server_frame(b"z" * 200, fin=False),  # a fragment: counted with its continuation
        _server_frame(b"w" * 300, opcode=0, fin=True),
        _server_frame(b"v" * 70_000),  # 64-bit length
        _server_frame(b"u" * 126),  # the smallest 16-bit length
    ]
    counted = [True, True, False, False, True, True, True]
    ends = []
    stream = b""
    for _ in range(30):
        for part, counts in zip(parts, counted, strict=True):
            stream += part
            if counts:
                ends.append(len(stream))
    return stream, ends


def test_each_message_is_counted_once_when_its_last_byte_arrives() -> None:
    stream, ends = _stream()
    chooser = random.Random(7)
    for _ in range(20):
        conn = _conn()
        position = counted = 0
        while position < len(stream):
            cut = min(len(stream), position + chooser.randint(1, 3000))
            chunk = bytearray(stream[position:cut])
            counted += loadgen.count_frames(conn, chunk, len(chunk))
            position = cut
            assert counted == sum(1 for end in ends if end <= position)
        assert counted == len(ends)
        conn.sock.close()


def test_a_read_larger_than_its_bytes_counts_only_those() -> None:
    stream, ends = _stream()
    buffer = bytearray(len(stream) + 100)
    buffer[: len(stream)] = stream
    conn = _conn()
    assert loadgen.count_frames(conn, buffer, len(stream)) == len(ends)
    conn.sock.close()
