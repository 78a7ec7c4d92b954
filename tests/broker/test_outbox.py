"""The outbox over a real socket pair: direct writes, an ordered backlog, overflow that keeps the
stream well-formed and ends with the close frame. Each test runs with the shared flusher (epoll)
and with the portable one (``select.epoll`` hidden, as on macOS and the BSDs)."""

import select
import socket
import struct

import pytest
import trio
import trio.testing

from broker.transport import frames
from broker.transport.outbox import Outbox


@pytest.fixture(autouse=True, params=["epoll", "portable"])
async def flusher(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Which flusher this trio run's outboxes get (each test is a new run: chosen afresh).
    Hidden from inside the run: trio's own epoll was made as the run began."""
    if request.param == "portable":
        monkeypatch.delattr(select, "epoll")
    return str(request.param)


def small_pair() -> tuple[trio.socket.SocketType, trio.socket.SocketType]:
    a, b = trio.socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    for sock in (a, b):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    return a, b


async def read_exactly(sock: trio.socket.SocketType, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = await sock.recv(size - len(data))
        assert chunk, "stream ended early"
        data += chunk
    return data


async def read_frames(
    sock: trio.socket.SocketType, count: int | None = None
) -> list[tuple[int, bytes]]:
    """Parse server frames until a close frame, the end of the stream, or ``count`` frames."""
    found: list[tuple[int, bytes]] = []
    while count is None or len(found) < count:
        head = await sock.recv(2)
        if not head:
            return found
        if len(head) == 1:
            head += await read_exactly(sock, 1)
        opcode, length = head[0] & 0x0F, head[1] & 0x7F
        if length == 126:
            (length,) = struct.unpack("!H", await read_exactly(sock, 2))
        elif length == 127:
            (length,) = struct.unpack("!Q", await read_exactly(sock, 8))
        found.append((opcode, await read_exactly(sock, length)))
        if opcode == frames.OP_CLOSE:
            return found
    return found


async def test_frames_arrive_whole_and_in_order_through_backpressure() -> None:
    server, client = small_pair()
    with server, client:
        async with trio.open_nursery() as nursery:
            outbox = Outbox(server, nursery, limit=10_000_000)
            payloads = [f"message {i} ".encode() * 50 for i in range(300)]
            for payload in payloads:
                assert outbox.send(frames.text_frame(payload))
            assert outbox.backlog_size > 0, "a 4 KiB buffer cannot take ~150 KB at once"
            outbox.send_last(frames.close_frame(frames.CLOSE_NORMAL))
            assert not outbox.send(frames.text_frame(b"after the close"))
            received = await read_frames(client)
            await outbox.drain()
        assert [p for op, p in received if op == frames.OP_TEXT] == payloads
        assert received[-1][0] == frames.OP_CLOSE
        assert outbox.backlog_size == 0


async def test_overflow_finishes_the_partial_frame_then_closes() -> None:
    server, client = small_pair()
    overflowed = []
    with server, client:
        async with trio.open_nursery() as nursery:
            outbox = Outbox(
                server,
                nursery,
                limit=20_000,
                overflow_frame=frames.SLOW_CONSUMER_CLOSE,
                on_overflow=lambda: overflowed.append(True),
            )
            sent = 0
            while outbox.send(frames.text_frame(b"x" * 1000)):
                sent += 1
            assert overflowed == [True]
            assert outbox.overflowed
            assert not outbox.send(frames.text_frame(b"y"))
            received = await read_frames(client)
        texts = [p for op, p in received if op == frames.OP_TEXT]
        assert all(p == b"x" * 1000 for p in texts), "no torn frame: every text frame is whole"
        assert len(texts) < sent, "queued frames were dropped, not delivered late"
        assert received[-1] == (
            frames.OP_CLOSE,
            struct.pack("!H", frames.CLOSE_SLOW_CONSUMER) + b"slow consumer",
        )


async def test_a_broken_peer_stops_the_outbox() -> None:
    server, client = small_pair()
    with server:
        async with trio.open_nursery() as nursery:
            outbox = Outbox(server, nursery)
            client.close()
            for _ in range(3):
                outbox.send(frames.text_frame(b"z" * 100))
            await trio.testing.wait_all_tasks_blocked()
            assert outbox.broken
            assert not outbox.send(frames.text_frame(b"z"))


async def test_one_frame_larger_than_the_limit_is_delivered_whole() -> None:
    # A full eth_getLogs reply (10,000 logs, about 5 MB) is larger than the 4 MiB limit: the limit
    # bounds what is already waiting, not the size of one message.
    server, client = small_pair()
    big = b"L" * 200_000
    with server, client:
        async with trio.open_nursery() as nursery:
            outbox = Outbox(
                server, nursery, limit=20_000, overflow_frame=frames.SLOW_CONSUMER_CLOSE
            )
            assert outbox.send(frames.text_frame(big))
            assert not outbox.overflowed
            # a peer that has not read it yet is a slow consumer for the next message
            assert not outbox.send(frames.text_frame(b"next"))
            assert outbox.overflowed
            received = await read_frames(client)
    assert received[0] == (frames.OP_TEXT, big)
    assert received[-1][0] == frames.OP_CLOSE


async def test_a_reader_that_keeps_up_gets_large_frames_back_to_back() -> None:
    server, client = small_pair()
    big = b"M" * 100_000
    with server, client:
        async with trio.open_nursery() as nursery:
            outbox = Outbox(server, nursery, limit=20_000)
            for _ in range(3):
                assert outbox.send(frames.text_frame(big))
                opcode, payload = (await read_frames(client, 1))[0]
                assert (opcode, payload) == (frames.OP_TEXT, big)
                await outbox.drain()
            assert not outbox.overflowed


async def test_many_sockets_pushing_back_are_flushed_by_one_task(flusher: str) -> None:
    pairs = [small_pair() for _ in range(40)]
    payloads = [f"frame {i} ".encode() * 40 for i in range(60)]
    try:
        async with trio.open_nursery() as nursery:
            before = trio.lowlevel.current_statistics().tasks_living
            outboxes = [Outbox(server, nursery, limit=10_000_000) for server, _ in pairs]
            for outbox in outboxes:
                for payload in payloads:
                    assert outbox.send(frames.text_frame(payload))
            assert all(outbox.backlog_size for outbox in outboxes)  # every socket pushed back
            # one flusher for all of them, not a task per connection (without epoll: one each)
            flushers = 1 if flusher == "epoll" else len(pairs)
            assert trio.lowlevel.current_statistics().tasks_living == before + flushers
            for _, client in pairs:
                found = await read_frames(client, len(payloads))
                assert [payload for _, payload in found] == payloads
            for outbox in outboxes:
                await outbox.drain()
                assert outbox.backlog_size == 0
    finally:
        for server, client in pairs:
            server.close()
            client.close()
