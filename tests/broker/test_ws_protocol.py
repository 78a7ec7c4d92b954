"""The WebSocket machine, driven with plain calls: a wsproto client makes the bytes, no sockets."""

from __future__ import annotations

import random

import pytest
import wsproto
import wsproto.events as wse
from wsproto.frame_protocol import CloseReason

from broker import frames
from broker.ws_protocol import (
    CloseRequested,
    Message,
    PongReceived,
    SendFrame,
    WebSocketProtocol,
)

LIMIT = 1024


class Client:
    """The client side of an open connection: its frames, as bytes for the server."""

    def __init__(self) -> None:
        self.connection = wsproto.Connection(wsproto.ConnectionType.CLIENT)

    def send(self, event: wse.Event) -> bytes:
        return self.connection.send(event)


def server() -> WebSocketProtocol:
    return WebSocketProtocol(LIMIT)


def test_a_text_message_and_a_binary_message_arrive_whole() -> None:
    machine, client = server(), Client()
    events = machine.receive_data(
        client.send(wse.TextMessage("héllo")) + client.send(wse.BytesMessage(b"\x00\x01"))
    )
    assert [type(e) for e in events] == [Message, Message]
    assert [e.payload for e in events if isinstance(e, Message)] == ["héllo".encode(), b"\x00\x01"]


def test_fragments_are_joined_and_bytes_may_come_one_at_a_time() -> None:
    machine, client = server(), Client()
    data = client.send(wse.TextMessage("abc", message_finished=False))
    data += client.send(wse.TextMessage("def", message_finished=True))
    events = []
    for index in range(len(data)):
        events += machine.receive_data(data[index : index + 1])
    assert len(events) == 1
    assert isinstance(events[0], Message)
    assert events[0].payload == b"abcdef"


def test_a_message_over_the_limit_closes_with_1009_and_nothing_after_counts() -> None:
    machine, client = server(), Client()
    data = client.send(wse.TextMessage("a" * 600, message_finished=False))
    data += client.send(wse.TextMessage("b" * 600, message_finished=True))
    data += client.send(wse.TextMessage("later"))
    events = machine.receive_data(data)
    assert len(events) == 1
    assert isinstance(events[0], CloseRequested)
    assert events[0].code == frames.CLOSE_TOO_BIG == 1009
    assert "1024" in events[0].reason
    assert machine.closed
    assert machine.receive_data(client.send(wse.TextMessage("more"))) == []


def test_a_message_exactly_at_the_limit_is_accepted() -> None:
    machine, client = server(), Client()
    events = machine.receive_data(client.send(wse.TextMessage("x" * LIMIT)))
    assert isinstance(events[0], Message)


def test_a_ping_is_answered_with_a_pong_frame_and_a_pong_is_reported() -> None:
    machine, client = server(), Client()
    events = machine.receive_data(client.send(wse.Ping(b"hi")) + client.send(wse.Pong(b"")))
    assert isinstance(events[0], SendFrame)
    assert events[0].frame == frames.pong_frame(b"hi")
    assert isinstance(events[1], PongReceived)


@pytest.mark.parametrize(("sent", "answered"), [(1000, 1000), (1001, 1001), (None, 1000)])
def test_the_clients_close_is_answered_with_its_code(sent: int | None, answered: int) -> None:
    machine, client = server(), Client()
    close = wse.CloseConnection(code=sent) if sent is not None else wse.CloseConnection(1005)
    events = machine.receive_data(client.send(close))
    assert len(events) == 1
    assert isinstance(events[0], CloseRequested)
    assert events[0].code == answered


def test_an_unmasked_frame_is_a_protocol_error_1002() -> None:
    machine = server()
    events = machine.receive_data(b"\x81\x02hi")  # a server-style (unmasked) text frame
    assert len(events) == 1
    assert isinstance(events[0], CloseRequested)
    assert events[0].code == CloseReason.PROTOCOL_ERROR == 1002


def test_random_bytes_never_raise() -> None:
    rng = random.Random(99)
    valid = Client().send(wse.TextMessage('{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}'))
    for _ in range(2000):
        data = bytearray(valid)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        machine = server()
        for event in machine.receive_data(bytes(data)):
            assert isinstance(event, Message | SendFrame | PongReceived | CloseRequested)
