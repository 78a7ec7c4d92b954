"""The WebSocket machine, driven with plain calls: a wsproto client makes the bytes, no sockets,
and time is a number the test passes in."""

from __future__ import annotations

import random

import pytest
import wsproto
import wsproto.events as wse
from wsproto.frame_protocol import CloseReason

from broker.transport import frames
from broker.transport.ws_protocol import (
    CLOSED,
    CLOSING,
    DRAINING,
    OPEN,
    PING_TIMED_OUT,
    SEND_PING,
    CloseRequested,
    LocalProtocolError,
    Message,
    PongReceived,
    RemoteProtocolError,
    SendFrame,
    WebSocketProtocol,
    accept_handshake,
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


# -- calls under way ---------------------------------------------------------------------------


def test_calls_run_side_by_side_up_to_the_limit_then_the_reader_answers_them() -> None:
    machine = WebSocketProtocol(LIMIT, max_inflight=2)
    assert [machine.call_arrived() for _ in range(4)] == [True, True, False, False]
    assert machine.inflight == 4
    assert [machine.call_answered() for _ in range(4)] == [False, False, False, True]
    assert machine.call_arrived() is True  # below the limit again


def test_a_call_answered_that_never_arrived_is_refused_and_changes_nothing() -> None:
    machine = server()
    with pytest.raises(LocalProtocolError):
        machine.call_answered()
    assert machine.inflight == 0
    assert machine.state is OPEN


def test_draining_discards_what_arrives_and_says_whether_calls_are_under_way() -> None:
    idle, busy, client = server(), server(), Client()
    busy.call_arrived()
    assert idle.drain() is False
    assert busy.drain() is True
    assert busy.state is DRAINING
    assert busy.closed
    assert busy.receive_data(client.send(wse.TextMessage("late"))) == []
    assert busy.call_answered() is True  # the call under way still ends
    assert busy.heartbeat(0.0, 30.0) is SEND_PING  # a draining connection is still pinged


def test_no_call_arrives_and_no_second_drain_begins_after_a_drain() -> None:
    machine = server()
    machine.drain()
    with pytest.raises(LocalProtocolError):
        machine.call_arrived()
    with pytest.raises(LocalProtocolError):
        machine.drain()
    assert machine.inflight == 0
    assert machine.state is DRAINING


# -- pings --------------------------------------------------------------------------------------


def test_a_ping_answered_before_its_deadline_keeps_the_connection() -> None:
    machine, client = server(), Client()
    assert machine.heartbeat(0.0, 30.0) is SEND_PING
    assert machine.pong_deadline == 30.0
    assert [type(e) for e in machine.receive_data(client.send(wse.Pong(b"")))] == [PongReceived]
    assert machine.pong_deadline is None
    assert machine.heartbeat(30.0, 60.0) is SEND_PING
    assert machine.pong_deadline == 60.0


def test_a_ping_unanswered_by_its_deadline_closes_with_4009() -> None:
    machine = server()
    assert machine.heartbeat(0.0, 30.0) is SEND_PING
    assert machine.heartbeat(10.0, 40.0) is SEND_PING  # an early tick: the deadline stays
    assert machine.pong_deadline == 30.0
    event = machine.heartbeat(30.0, 60.0)
    assert event is PING_TIMED_OUT
    assert event.code == frames.CLOSE_PING_TIMEOUT == 4009


# -- closing ------------------------------------------------------------------------------------


def test_a_close_gives_its_frame_once_and_a_deadline_for_the_socket() -> None:
    machine, client = WebSocketProtocol(LIMIT, close_grace=2.0), Client()
    machine.heartbeat(0.0, 30.0)
    frame = machine.close(frames.CLOSE_SERVICE_RESTART, "cursor", now=5.0)
    assert frame == frames.close_frame(1012, "cursor")
    assert machine.state is CLOSING
    assert machine.close_code == 1012
    assert machine.close_deadline == 7.0
    assert machine.close(frames.CLOSE_NORMAL, "", now=6.0) is None
    assert (machine.close_code, machine.close_deadline) == (1012, 7.0)
    assert machine.receive_data(client.send(wse.TextMessage("late"))) == []
    assert machine.heartbeat(40.0, 70.0) is None  # no ping timeout after our close


def test_after_our_close_only_the_peers_close_frame_counts_even_split_across_reads() -> None:
    machine, client = server(), Client()
    machine.close(frames.CLOSE_SERVICE_RESTART, "cursor", now=0.0)
    late = client.send(wse.TextMessage("a request the client sent before it read our close"))
    assert machine.discard_data(late) is False
    assert not machine.peer_closed
    answer = client.send(wse.CloseConnection(code=1012))
    assert machine.discard_data(answer[:1]) is False  # half a frame: not yet
    assert machine.discard_data(answer[1:]) is True
    assert machine.peer_closed
    assert machine.discard_data(b"anything after it") is True


def test_garbage_after_our_close_ends_the_wait_for_the_peers_close() -> None:
    machine = server()
    machine.close(frames.CLOSE_NORMAL, "", now=0.0)
    assert machine.discard_data(b"\xff" * 16) is True  # a protocol error: nothing worth reading


def test_a_slow_consumer_begins_the_close_with_4008_or_takes_over_one_begun() -> None:
    fresh, closing, ended = server(), server(), server()
    assert fresh.overflowed(now=1.0) is True
    assert (fresh.state, fresh.close_code, fresh.close_deadline) == (CLOSING, 4008, 3.0)
    closing.close(frames.CLOSE_NORMAL, "bye", now=0.0)
    assert closing.overflowed(now=1.0) is False  # the close under way keeps its deadline
    assert (closing.close_code, closing.close_deadline) == (4008, 2.0)
    ended.ended()
    assert ended.overflowed(now=1.0) is False
    assert (ended.state, ended.close_code) == (CLOSED, None)


def test_an_ended_connection_reads_nothing_and_pings_no_more() -> None:
    machine, client = server(), Client()
    machine.ended()
    assert machine.closed
    assert machine.receive_data(client.send(wse.TextMessage("late"))) == []
    assert machine.heartbeat(0.0, 30.0) is None
    assert machine.close(frames.CLOSE_NORMAL, "", now=0.0) is None


# -- the handshake ------------------------------------------------------------------------------

UPGRADE = [
    (b"host", b"localhost"),
    (b"upgrade", b"websocket"),
    (b"connection", b"Upgrade"),
    (b"sec-websocket-version", b"13"),
    (b"sec-websocket-key", b"dGhlIHNhbXBsZSBub25jZQ=="),
]


def test_a_valid_upgrade_is_answered_101_with_the_keys_accept_value() -> None:
    answer = accept_handshake(UPGRADE, b"/ws/v3/dev")
    head = answer.split(b"\r\n")
    assert head[0].startswith(b"HTTP/1.1 101 ")
    # RFC 6455 section 1.3's own example: this key's accept value.
    assert b"sec-websocket-accept: s3pplmbitxaq9kygzzhzrbk+xoo=" in [h.lower() for h in head]


@pytest.mark.parametrize("missing", [b"sec-websocket-key", b"sec-websocket-version", b"upgrade"])
def test_an_upgrade_missing_a_header_is_the_clients_error(missing: bytes) -> None:
    headers = [(name, value) for name, value in UPGRADE if name != missing]
    with pytest.raises(RemoteProtocolError):
        accept_handshake(headers, b"/ws/v3/dev")


def test_connections_parsing_part_way_at_once_each_get_their_own_messages() -> None:
    # Idle connections share parsers; one holds its own while a frame or a fragmented message of
    # its own is under way, whatever the others parse meanwhile.
    rng = random.Random(7)
    machines = [server() for _ in range(8)]
    clients = [Client() for _ in machines]
    pending: list[bytes] = []
    expected: list[list[bytes]] = []
    for i, client in enumerate(clients):
        first = f"{i}-first".encode()
        data = client.send(wse.TextMessage(f"{i}-", message_finished=False))
        data += client.send(wse.TextMessage(f"{i}-second", message_finished=True))
        pending.append(client.send(wse.BytesMessage(first)) + data)
        expected.append([first, f"{i}-{i}-second".encode()])
    got: list[list[bytes]] = [[] for _ in machines]
    while any(pending):
        i = rng.choice([n for n, rest in enumerate(pending) if rest])
        cut = rng.randint(1, len(pending[i]))
        chunk, pending[i] = pending[i][:cut], pending[i][cut:]
        got[i] += [e.payload for e in machines[i].receive_data(chunk) if isinstance(e, Message)]
    assert got == expected
