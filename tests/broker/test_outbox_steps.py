"""Delivery steps (``corked``): a connection's held frames leave in one write as the step ends (or
first, when something is sent to it directly), in order with everything else sent to it, over real TCP sockets on 127.0.0.1 (the client counts the
data segments it received: one write of a few frames is one segment)."""

from __future__ import annotations

import select
import socket
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio
import trio.testing

from broker.transport import frames
from broker.transport.outbox import Outbox, corked
from tests.broker.test_outbox import read_frames

#: ``tcpi_data_segs_in`` in Linux's ``struct tcp_info`` (since 4.6).
_DATA_SEGS_IN = 152


def data_segments_in(sock: trio.socket.SocketType) -> int:
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    return int(struct.unpack_from("I", info, _DATA_SEGS_IN)[0])


async def tcp_pair() -> tuple[trio.socket.SocketType, trio.socket.SocketType]:
    listener = trio.socket.socket()
    await listener.bind(("127.0.0.1", 0))
    listener.listen()
    client = trio.socket.socket()
    with listener:
        await client.connect(listener.getsockname())
        server, _ = await listener.accept()
    server.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return server, client


@asynccontextmanager
async def connected() -> AsyncIterator[tuple[Outbox, trio.socket.SocketType]]:
    """An outbox on the server side of a TCP pair, and the client side."""
    server, client = await tcp_pair()
    with server, client:
        async with trio.open_nursery() as nursery:
            yield Outbox(server, nursery), client


def text(payload: bytes) -> bytes:
    return frames.text_frame(payload)


async def nothing_arrived(client: trio.socket.SocketType) -> bool:
    await trio.sleep(0.05)
    readable, _, _ = select.select([client.fileno()], [], [], 0)
    return not readable


async def test_held_frames_leave_in_one_write_as_the_step_ends() -> None:
    async with connected() as (outbox, client):
        before = data_segments_in(client)
        with corked():
            for i in range(3):
                assert outbox.send_held(text(b"frame %d" % i))
            assert await nothing_arrived(client), "held until the step ends"
        got = await read_frames(client, 3)
        assert [p for _, p in got] == [b"frame 0", b"frame 1", b"frame 2"]
        assert data_segments_in(client) - before == 1, "three frames, one write"


async def test_without_a_step_each_frame_is_its_own_write() -> None:
    # What the step changes: the same frames outside one are three writes.
    async with connected() as (outbox, client):
        before = data_segments_in(client)
        for i in range(3):
            assert outbox.send_held(text(b"frame %d" % i))
            await trio.sleep(0.01)
        got = await read_frames(client, 3)
        assert [p for _, p in got] == [b"frame 0", b"frame 1", b"frame 2"]
        assert data_segments_in(client) - before == 3


async def test_a_frame_sent_directly_during_a_step_writes_what_is_held_first() -> None:
    async with connected() as (outbox, client):
        with corked():
            outbox.send_held(text(b"notification 1"))
            outbox.send(text(b"a reply"))  # e.g. a call's answer: it does not wait
            got = await read_frames(client, 2)
            assert [p for _, p in got] == [b"notification 1", b"a reply"]
            outbox.send_held(text(b"notification 2"))
            assert await nothing_arrived(client)
        assert await read_frames(client, 1) == [(frames.OP_TEXT, b"notification 2")]


async def test_a_held_step_is_released_a_slice_at_a_time() -> None:
    pairs = [await tcp_pair() for _ in range(130)]
    try:
        async with trio.open_nursery() as nursery:
            outboxes = [Outbox(server, nursery) for server, _ in pairs]
            cork = corked()
            cork.holds += 1  # as the delivery queue holds a step across slices
            for outbox in outboxes:
                outbox.send_held(text(b"one"))
                outbox.send_held(text(b"two"))
            assert not cork.release(0.0), "past its deadline: one batch, the rest later"
            await trio.sleep(0.05)
            readable, _, _ = select.select([client.fileno() for _, client in pairs], [], [], 0)
            assert 0 < len(readable) < len(pairs)
            assert cork.release(float("inf"))
            cork.holds -= 1
            for _, client in pairs:
                assert [p for _, p in await read_frames(client, 2)] == [b"one", b"two"]
    finally:
        for server, client in pairs:
            server.close()
            client.close()


async def test_nested_steps_release_at_the_outermost() -> None:
    async with connected() as (outbox, client):
        before = data_segments_in(client)
        with corked():
            with corked():
                outbox.send_held(text(b"inner"))
            assert await nothing_arrived(client)
            outbox.send_held(text(b"outer"))
        got = await read_frames(client, 2)
        assert [p for _, p in got] == [b"inner", b"outer"]
        assert data_segments_in(client) - before == 1


async def test_a_connection_closed_during_a_step_drops_what_it_held() -> None:
    async with connected() as (outbox, client), connected() as (other, other_client):
        # another connection, in the same step
        with corked():
            outbox.send_held(text(b"never sent"))
            other.send_held(text(b"still sent"))
            outbox.stop()
        assert await nothing_arrived(client)
        assert not outbox.send_held(text(b"after the stop"))
        assert await read_frames(other_client, 1) == [(frames.OP_TEXT, b"still sent")]


async def test_the_last_frame_of_a_step_still_closes_the_connection() -> None:
    async with connected() as (outbox, client):
        with corked():
            outbox.send_held(text(b"last news"))
            outbox.send_last(frames.close_frame(frames.CLOSE_NORMAL))
            assert not outbox.send_held(text(b"after the close"))
        got = await read_frames(client)
        assert got[0] == (frames.OP_TEXT, b"last news")
        assert got[-1][0] == frames.OP_CLOSE
