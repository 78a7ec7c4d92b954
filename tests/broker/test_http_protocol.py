"""The HTTP/1.1 machine, driven with plain calls: bytes in, events and bytes out, no sockets."""

from __future__ import annotations

import random

import pytest

from broker.transport.http_protocol import (
    ENDED,
    NEED_DATA,
    HttpResponse,
    HttpServerConnection,
    Refused,
    RequestReceived,
    UpgradeRequested,
)

BODY = b'{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}'


def post(body: bytes = BODY, *, extra: bytes = b"") -> bytes:
    return (
        b"POST /v3/dev HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + extra
        + b"Content-Length: %d\r\n\r\n" % len(body)
        + body
    )


def machine(limit: int = 1024) -> HttpServerConnection:
    return HttpServerConnection(body_limit=limit)


def status_of(data: bytes) -> int:
    return int(data.split(b" ", 2)[1])


def test_a_whole_request_is_one_event_with_lowercase_header_names() -> None:
    conn = machine()
    assert conn.next_event() is NEED_DATA
    conn.receive_data(post())
    event = conn.next_event()
    assert isinstance(event, RequestReceived)
    assert event.request.method == b"POST"
    assert event.request.target == b"/v3/dev"
    assert event.request.header(b"content-type") == b"application/json"
    assert event.request.body == BODY
    reply = conn.send_response(HttpResponse(200, b"{}", [(b"content-type", b"application/json")]))
    assert reply.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"content-length: 2\r\n" in reply
    assert reply.endswith(b"\r\n\r\n{}")
    assert b"connection: close" not in reply
    assert conn.next_event() is NEED_DATA  # kept alive, waiting for the next request


def test_bytes_fed_one_at_a_time_give_the_same_request() -> None:
    conn = machine()
    data = post()
    for index in range(len(data) - 1):
        conn.receive_data(data[index : index + 1])
        assert conn.next_event() is NEED_DATA
    conn.receive_data(data[-1:])
    event = conn.next_event()
    assert isinstance(event, RequestReceived)
    assert event.request.body == BODY


def test_pipelined_requests_are_answered_in_order() -> None:
    conn = machine()
    conn.receive_data(post(b"[1]") + post(b"[2]") + post(b"[3]"))
    bodies = []
    for _ in range(3):
        event = conn.next_event()
        assert isinstance(event, RequestReceived)
        bodies.append(event.request.body)
        conn.send_response(HttpResponse(200))
    assert bodies == [b"[1]", b"[2]", b"[3]"]
    assert conn.next_event() is NEED_DATA


def test_a_head_sent_again_gives_each_request_its_own_body() -> None:
    # The second and third requests repeat the first one's head byte for byte (a keep-alive client
    # polling): the machine may take them without the parser, but never with a stale body.
    conn = machine()
    bodies = [b'{"id":1}', b'{"id":2}', b'{"id":3}']
    for body in bodies:
        conn.receive_data(post(body))
        event = conn.next_event()
        assert isinstance(event, RequestReceived)
        assert event.request.body == body
        assert event.request.method == b"POST"
        assert event.request.target == b"/v3/dev"
        assert event.request.header(b"content-type") == b"application/json"
        conn.send_response(HttpResponse(200))
        assert conn.next_event() is NEED_DATA


def test_a_head_sent_again_with_another_length_or_target_is_parsed_afresh() -> None:
    conn = machine()
    for data, target, body in (
        (post(b"[1]"), b"/v3/dev", b"[1]"),
        (post(b"[10]"), b"/v3/dev", b"[10]"),  # another Content-Length
        (post(b"[2]").replace(b"/v3/dev", b"/v3/xyz"), b"/v3/xyz", b"[2]"),  # same size
        (post(b"[3]") + post(b"[4]"), b"/v3/dev", b"[3]"),  # two requests in one read
    ):
        conn.receive_data(data)
        event = conn.next_event()
        assert isinstance(event, RequestReceived)
        assert (event.request.target, event.request.body) == (target, body)
        conn.send_response(HttpResponse(200))
    event = conn.next_event()
    assert isinstance(event, RequestReceived)
    assert event.request.body == b"[4]"


def test_a_repeated_request_that_closes_or_expects_is_not_taken_as_a_repeat() -> None:
    closing = post(extra=b"Connection: close\r\n")
    conn = machine()
    conn.receive_data(closing)
    assert isinstance(conn.next_event(), RequestReceived)
    assert b"connection: close" in conn.send_response(HttpResponse(200))
    assert conn.next_event() is ENDED
    conn.receive_data(closing)  # nothing is read after the end
    assert conn.next_event() is ENDED

    expecting = b"POST /v3/dev HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n[]"
    conn = machine()
    for _ in range(2):
        conn.receive_data(expecting)
        assert isinstance(conn.next_event(), RequestReceived)
        assert conn.data_to_send() == b""  # the body came with the head: no 100 Continue
        conn.send_response(HttpResponse(200))


def test_a_chunked_body_is_assembled() -> None:
    conn = machine()
    conn.receive_data(
        b"POST /v3/dev HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5\r\n[1,2,\r\n2\r\n3]\r\n0\r\n\r\n"
    )
    event = conn.next_event()
    assert isinstance(event, RequestReceived)
    assert event.request.body == b"[1,2,3]"


def test_a_declared_length_over_the_limit_is_refused_before_the_body_arrives() -> None:
    conn = machine(limit=10)
    conn.receive_data(b"POST /v3/dev HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\n")
    event = conn.next_event()
    assert isinstance(event, Refused)
    assert event.response.status == 413
    reply = conn.send_response(event.response)
    assert status_of(reply) == 413
    assert b"connection: close" in reply
    assert b'"code":-32600' in reply
    assert conn.next_event() is ENDED


def test_a_chunked_body_over_the_limit_is_refused() -> None:
    conn = machine(limit=4)
    conn.receive_data(
        b"POST /v3/dev HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n12345\r\n"
    )
    event = conn.next_event()
    assert isinstance(event, Refused)
    assert event.response.status == 413


def test_a_head_over_the_header_limit_gets_431_complete_or_not() -> None:
    big = b"X-Pad: " + b"a" * 40_000 + b"\r\n"
    whole = machine()
    whole.receive_data(b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + big + b"\r\n")
    event = whole.next_event()
    assert isinstance(event, Refused)
    assert event.response.status == 431
    partial = machine()
    partial.receive_data(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 40_000)
    event = partial.next_event()
    assert isinstance(event, Refused)
    assert event.response.status == 431


@pytest.mark.parametrize(
    "data",
    [
        b"NOT A REQUEST\r\n\r\n",
        b"POST /v3/dev HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"POST /v3/dev HTTP/1.1\r\nContent-Length: x\r\n\r\n",
        b"GET / HTTP/1.1\r\nBad Header Name: 1\r\n\r\n",
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",  # a TLS hello on the plain port
    ],
)
def test_malformed_requests_get_400_and_the_connection_ends(data: bytes) -> None:
    conn = machine()
    conn.receive_data(data)
    event = conn.next_event()
    assert isinstance(event, Refused)
    assert event.response.status == 400
    conn.send_response(event.response)
    assert conn.next_event() is ENDED
    conn.receive_data(post())  # ignored: the machine has stopped reading
    assert conn.next_event() is ENDED


def test_a_request_before_a_malformed_one_is_still_answered() -> None:
    conn = machine()
    conn.receive_data(post() + b"GARBAGE\r\n\r\n")
    assert isinstance(conn.next_event(), RequestReceived)
    reply = conn.send_response(HttpResponse(200))
    assert status_of(reply) == 200
    event = conn.next_event()
    assert isinstance(event, Refused)
    assert event.response.status == 400


def test_an_upgrade_keeps_the_bytes_after_its_head() -> None:
    conn = machine()
    conn.receive_data(
        b"GET /ws/v3/dev HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
        b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
        b"\x81\x85frame"
    )
    event = conn.next_event()
    assert isinstance(event, UpgradeRequested)
    assert event.request.target == b"/ws/v3/dev"
    assert event.trailing == b"\x81\x85frame"
    refused = conn.send_response(HttpResponse(401))  # a refused upgrade closes the connection
    assert b"connection: close" in refused
    assert conn.next_event() is ENDED


def test_http_1_0_and_connection_close_end_after_the_response() -> None:
    for data in (
        b"POST /v3/dev HTTP/1.0\r\nContent-Length: 2\r\n\r\n[]",
        b"POST /v3/dev HTTP/1.1\r\nConnection: close\r\nContent-Length: 2\r\n\r\n[]",
    ):
        conn = machine()
        conn.receive_data(data)
        assert isinstance(conn.next_event(), RequestReceived)
        assert b"connection: close" in conn.send_response(HttpResponse(200))
        assert conn.next_event() is ENDED


def test_expect_100_continue_is_answered_once_the_head_is_accepted() -> None:
    conn = machine()
    conn.receive_data(
        b"POST /v3/dev HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n"
    )
    assert conn.next_event() is NEED_DATA
    assert conn.headers_complete  # the body deadline runs from here
    assert conn.data_to_send() == b"HTTP/1.1 100 Continue\r\n\r\n"
    assert conn.data_to_send() == b""
    conn.receive_data(b"[]")
    assert isinstance(conn.next_event(), RequestReceived)
    assert not conn.headers_complete


def test_the_client_closing_ends_the_connection_between_or_within_requests() -> None:
    idle = machine()
    idle.receive_data(b"")
    assert idle.next_event() is ENDED
    halfway = machine()
    halfway.receive_data(post()[:30])
    halfway.receive_data(b"")
    assert halfway.next_event() is ENDED


def test_unusual_statuses_are_serialised_with_their_number() -> None:
    conn = machine()
    conn.receive_data(post())
    conn.next_event()
    assert conn.send_response(HttpResponse(299)).startswith(b"HTTP/1.1 299 \r\n")


def test_random_bytes_never_raise_and_always_end_in_a_known_event() -> None:

    rng = random.Random(1234)
    seeds = [
        post(),
        b"GET /ws/v3/dev HTTP/1.1\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n",
    ]
    for _ in range(2000):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 6)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        conn = machine(limit=64)
        cut = rng.randrange(len(data) + 1)
        conn.receive_data(bytes(data[:cut]))
        conn.receive_data(bytes(data[cut:]))
        for _ in range(4):
            event = conn.next_event()
            assert event in (NEED_DATA, ENDED) or isinstance(
                event, RequestReceived | UpgradeRequested | Refused
            )
            if isinstance(event, RequestReceived | UpgradeRequested | Refused):
                conn.send_response(HttpResponse(200))
