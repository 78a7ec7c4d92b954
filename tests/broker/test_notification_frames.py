"""Notification frames, sans-io (``broker.events.subscriptions._frames``): each subscriber's frame is a
whole WebSocket text frame whose JSON names its subscription, carries the payload, and (when its
connection can resume) its own cursor, however the shared parts are reused between subscribers."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from adapters.evm.subscriptions import parse_subscribe
from broker.events.cursors import FeedPositions, ResumeState
from broker.events.subscriptions import Subscription
from broker.events.subscriptions._frames import HEX_ID_LENGTH, FrameBatch, notification_frames
from broker.rpc.dispatch import Slots

PAYLOAD = b'{"number":"0x10"}'
SCOPE = "eip155:1"


class Sink:
    """A connection as the fan-out sees it: where its frames go."""

    def __init__(self) -> None:
        self.slots = Slots()
        self.sent: list[bytes] = []

    def send_frame(self, frame: bytes) -> bool:
        self.sent.append(frame)
        return True

    def frame_sender(self, *, held: bool = False) -> Callable[[bytes], bool]:
        return self.send_frame


def _sub(sub_id: str, scope: str | None, resume: ResumeState | None) -> Subscription:
    sub = Subscription(
        Sink(),
        SCOPE,
        "eth_subscribe",
        parse_subscribe(["newHeads"]),
        scope,
        sub_id=sub_id,
        integer_id=sub_id.isdigit(),
        kind="newHeads",
    )
    sub.resume = resume
    return sub


def _header(frame: bytes) -> tuple[int, int]:
    """Where an unmasked server frame's payload starts, and its length, as its header says."""
    length, start = frame[1], 2
    if length == 126:
        length, start = int.from_bytes(frame[2:4], "big"), 4
    elif length == 127:
        length, start = int.from_bytes(frame[2:10], "big"), 10
    return start, length


def _message(frame: bytes) -> Any:
    """The JSON of one unmasked server text frame (its header's length checked)."""
    assert frame[0] == 0x81
    start, length = _header(frame)
    assert len(frame) - start == length
    return json.loads(frame[start:])


def _state(live: FeedPositions, token: str, *feeds: str) -> ResumeState:
    state = ResumeState(live, token)
    for feed in feeds:
        state.follow(feed)
    return state


def test_each_subscriber_gets_its_id_and_its_own_cursor_whatever_it_shares() -> None:
    live = FeedPositions()
    live.advance("changes", "1-0")
    live.advance(SCOPE, "7-0")
    same_a = _state(live, "a" * 24, "changes", SCOPE)
    same_b = _state(live, "b" * 24, "changes", SCOPE)
    assert same_a.feeds_key is same_b.feeds_key  # one tuple for equal feeds
    pinned = _state(live, "c" * 24, "changes", SCOPE)
    pinned.pinned = {SCOPE: "5-2"}
    fewer = _state(live, "d" * 24, SCOPE)
    unknown = _state(live, "e" * 24, "changes", SCOPE, "eip155:2")  # a feed with no position yet
    # ... and a resumed connection's record says where it stood on that feed.
    resumed = ResumeState(live, "f" * 24, ["changes", SCOPE, "eip155:2"], ["1-0", "7-0", "3-1"])
    hex_id = "0x" + "ab" * 16
    subs = [
        _sub(hex_id, None, same_a),
        _sub(hex_id, None, same_b),
        _sub(hex_id, None, pinned),  # replaying: its feeds are the same, its positions not
        _sub(hex_id, SCOPE, same_a),  # a session's: wallet_notify
        _sub(hex_id, None, same_b),
        _sub(hex_id, None, unknown),
        _sub(hex_id, None, resumed),
        _sub(hex_id, None, fewer),
        _sub(hex_id, None, None),  # a connection that cannot resume
    ]
    found = list(notification_frames(subs, PAYLOAD, b"eth_subscription", HEX_ID_LENGTH))
    assert [sub for sub, _ in found] == subs
    messages = [_message(frame) for _, frame in found]
    cursors = [m["params"].get("cursor") for m in messages]
    assert cursors == [
        "a" * 24 + ".1-0.7-0",
        "b" * 24 + ".1-0.7-0",
        "c" * 24 + ".1-0.5-2",
        "a" * 24 + ".1-0.7-0",
        "b" * 24 + ".1-0.7-0",
        "e" * 24 + ".1-0.7-0.0-0",
        "f" * 24 + ".1-0.7-0.3-1",
        "d" * 24 + ".7-0",
        None,
    ]
    direct = messages[0]
    assert direct["method"] == "eth_subscription"
    assert direct["params"]["subscription"] == hex_id
    assert direct["params"]["result"] == json.loads(PAYLOAD)
    session = messages[3]
    assert session["method"] == "wallet_notify"
    assert session["params"]["scope"] == SCOPE
    assert session["params"]["notification"] == {
        "method": "eth_subscription",
        "params": {"subscription": hex_id, "result": json.loads(PAYLOAD)},
    }


def test_ids_of_any_length_frame_whole_when_the_family_numbers_them() -> None:
    live = FeedPositions()
    live.advance(SCOPE, "7-0")
    subs = [_sub(str(n), None, _state(live, f"{n:024x}", SCOPE)) for n in (1, 22, 333, 4444)]
    subs.append(_sub("55555", "solana:x", _state(live, "f" * 24, SCOPE)))
    found = list(notification_frames(subs, PAYLOAD, b"slotNotification", None))
    messages = [_message(frame) for _, frame in found]
    assert [m["params"].get("subscription") for m in messages[:4]] == [1, 22, 333, 4444]
    assert [m["params"]["cursor"] for m in messages[:4]] == [
        f"{n:024x}.7-0" for n in (1, 22, 333, 4444)
    ]
    assert messages[4]["params"]["notification"]["params"]["subscription"] == 55555
    assert messages[4]["params"]["cursor"] == "f" * 24 + ".7-0"


def _split(buffer: bytes) -> list[bytes]:
    """A buffer of back-to-back server frames, frame by frame (each header's length obeyed)."""
    found = []
    while buffer:
        start, length = _header(buffer)
        found.append(buffer[: start + length])
        buffer = buffer[start + length :]
    return found


def test_a_batch_is_each_payloads_frame_back_to_back_for_every_kind_of_subscriber() -> None:
    live = FeedPositions()
    live.advance("changes", "1-0")
    live.advance(SCOPE, "7-0")
    shared = _state(live, "a" * 24, "changes", SCOPE)
    pinned = _state(live, "c" * 24, "changes", SCOPE)
    pinned.pinned = {SCOPE: "5-2"}
    hex_id = "0x" + "ab" * 16
    subs = [
        _sub(hex_id, None, shared),
        _sub(hex_id, None, _state(live, "b" * 24, "changes", SCOPE)),
        _sub(hex_id, None, pinned),
        _sub(hex_id, SCOPE, shared),
        _sub(hex_id, None, _state(live, "e" * 24, "changes", SCOPE, "eip155:2")),
        _sub(hex_id, None, None),
        _sub(hex_id, SCOPE, None),
    ]
    # small, medium (2-byte length) and large (8-byte length) frames, one of them with a '%'
    payloads = [PAYLOAD, b'{"data":"' + b"7" * 300 + b'%"}', b'"' + b"x" * 70_000 + b'"']
    for count in (1, 3):
        batch = FrameBatch(payloads[:count], b"eth_subscription", HEX_ID_LENGTH)
        assert batch.count == count
        for sub in subs:
            one_by_one = [
                dict(notification_frames([sub], payload, b"eth_subscription", HEX_ID_LENGTH))[sub]
                for payload in payloads[:count]
            ]
            buffer = batch.frames(sub)
            assert _split(buffer) == one_by_one
            assert [_message(frame) for frame in one_by_one]  # each a whole, valid frame


def test_a_batch_frames_ids_of_any_length() -> None:
    live = FeedPositions()
    live.advance(SCOPE, "7-0")
    subs = [_sub(str(n), None, _state(live, f"{n:024x}", SCOPE)) for n in (1, 22, 333)]
    subs += [_sub("4444", "solana:x", None), _sub("5", None, None)]
    payloads = [PAYLOAD, b'{"slot":2}']
    batch = FrameBatch(payloads, b"slotNotification", None)
    for sub in subs:
        messages = [_message(frame) for frame in _split(batch.frames(sub))]
        assert len(messages) == 2
        for message, payload in zip(messages, payloads, strict=True):
            params = message["params"]
            inner = params["notification"]["params"] if sub.scope else params
            assert inner["subscription"] == int(sub.id)
            assert inner["result"] == json.loads(payload)
            if sub.resume is not None:
                assert params["cursor"] == f"{int(sub.id):024x}.7-0"
