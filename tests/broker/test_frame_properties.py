"""Property tests of the fan-out's notification frames (``broker.events.subscriptions._frames``): a frame's
length is computed apart from its bytes (from the framing and the positions alone), so every frame,
however its parts were shared, is parsed back here: its WebSocket header states exactly the length
of its payload, and its JSON is, byte for byte, the notification encoded whole (the slow path)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.evm.subscriptions import parse_subscribe
from broker.events.cursors import CHANGES, FeedPositions, ResumeState, with_cursor
from broker.events.subscriptions import Subscription
from broker.events.subscriptions._frames import HEX_ID_LENGTH, notification_frames
from broker.rpc.dispatch import Slots

CHAINS = ["eip155:1", "eip155:1337", "solana:FKgV6EmdcJjWdiHxuVJKdr6qyT74uYMU", "ledger:demo"]
FEEDS = [CHANGES, *CHAINS]


class Sink:
    def __init__(self) -> None:
        self.slots = Slots()

    def send_frame(self, frame: bytes) -> bool:
        return True

    def frame_sender(self, *, held: bool = False) -> Callable[[bytes], bool]:
        return self.send_frame


positions = st.one_of(
    st.builds("{}-{}".format, st.integers(0, 2**48), st.integers(0, 2**20)),
    st.builds("m{:x}-{}".format, st.integers(0, 2**32), st.integers(0, 2**40)),
)
#: A result as the chain family encoded it: sizes on both sides of the 126 and 65,536 byte
#: boundaries of the frame header's length.
payloads = st.one_of(
    st.integers(0, 300).map(lambda n: b'"' + b"x" * n + b'"'),
    st.integers(65_300, 65_700).map(lambda n: b'{"data":"' + b"0" * n + b'"}'),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=4).map(msgspec.json.encode),
)
tokens = st.text("0123456789abcdef", min_size=24, max_size=24)


@st.composite
def resume_states(draw: st.DrawFn, live: FeedPositions) -> ResumeState | None:
    """A connection's cursor source: none, following feeds live (some with no position yet),
    resumed from a record, or replaying (its positions pinned)."""
    kind = draw(st.sampled_from(["none", "live", "resumed", "pinned"]))
    if kind == "none":
        return None
    feeds = draw(st.lists(st.sampled_from(FEEDS), min_size=1, max_size=4, unique=True))
    token = draw(tokens)
    if kind == "resumed":
        since = draw(st.lists(positions, min_size=len(feeds), max_size=len(feeds)))
        return ResumeState(live, token, list(feeds), since)
    state = ResumeState(live, token)
    for feed in feeds:
        state.follow(feed)
    if kind == "pinned":
        state.pinned = draw(st.dictionaries(st.sampled_from(feeds), positions, min_size=1))
    return state


@st.composite
def fan_outs(draw: st.DrawFn) -> tuple[list[Subscription], bytes, bytes, int | None]:
    """Subscribers of one event (hex ids of one length, or integer ids of any), direct or in
    session scopes, sharing cursor sources and positions as the fan-out meets them."""
    live = FeedPositions()
    for feed in draw(st.lists(st.sampled_from(FEEDS), unique=True)):
        live.advance(feed, draw(positions))
    states = draw(st.lists(resume_states(live), min_size=1, max_size=4))
    hex_ids = draw(st.booleans())
    ids = (
        st.binary(min_size=16, max_size=16).map(lambda b: "0x" + b.hex())
        if hex_ids
        else st.integers(0, 2**64).map(str)
    )
    subs = []
    for _ in range(draw(st.integers(1, 12))):
        sub_id = draw(ids)
        sub = Subscription(
            Sink(),
            CHAINS[0],
            "eth_subscribe",
            parse_subscribe(["newHeads"]),
            draw(st.sampled_from([None, *CHAINS])),
            sub_id=sub_id,
            integer_id=not hex_ids,
            kind="newHeads",
        )
        sub.resume = draw(st.sampled_from(states))
        subs.append(sub)
    notification = draw(st.sampled_from([b"eth_subscription", b"slotNotification"]))
    return subs, draw(payloads), notification, HEX_ID_LENGTH if hex_ids else None


def parse_frame(frame: bytes) -> bytes:
    """The payload of one final, unmasked text frame, its header's length checked against it."""
    assert frame[0] == 0x81
    length, start = frame[1], 2
    if length == 126:
        length, start = int.from_bytes(frame[2:4], "big"), 4
        assert length >= 126  # the shortest form, as RFC 6455 requires
    elif length == 127:
        length, start = int.from_bytes(frame[2:10], "big"), 10
        assert length >= 65_536
    assert len(frame) - start == length
    return frame[start:]


def slow_path(sub: Subscription, payload: bytes, notification: bytes) -> bytes:
    """The notification ``sub`` gets, encoded whole, its cursor added as replays add it."""
    inner: dict[str, Any] = {
        "subscription": int(sub.id) if sub.id.isdigit() else sub.id,
        "result": msgspec.Raw(payload),
    }
    message: dict[str, Any]
    if sub.scope is None:
        message = {"jsonrpc": "2.0", "method": notification.decode(), "params": inner}
    else:
        notified = {"method": notification.decode(), "params": inner}
        message = {
            "jsonrpc": "2.0",
            "method": "wallet_notify",
            "params": {"scope": sub.scope, "notification": notified},
        }
    encoded = msgspec.json.encode(message)
    return encoded if sub.resume is None else with_cursor(encoded, sub.resume.cursor())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fan_outs())
def test_every_frame_parses_back_to_its_notification_encoded_whole(
    fan_out: tuple[list[Subscription], bytes, bytes, int | None],
) -> None:
    subs, payload, notification, id_length = fan_out
    found = list(notification_frames(subs, payload, notification, id_length))
    assert [sub for sub, _ in found] == subs
    for sub, frame in found:
        body = parse_frame(frame)
        assert body == slow_path(sub, payload, notification)
        json.loads(body)  # and JSON a client parses
