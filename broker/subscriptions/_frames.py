"""Notification frames: built once per event and form (direct, or per session scope), split around
the subscription id, so that a subscriber costs one concatenation (and its cursor, when the
connection can resume)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final

from broker import frames
from broker.subscriptions._model import Subscription

_RESULT: Final = b',"result":'


@dataclass(frozen=True, slots=True)
class _Framing:
    """A notification frame split around the subscription id: ``pre + id + post``, or, with a
    cursor, ``pre_body + id + mid + cursor + _CURSOR_END`` under a header of its own."""

    pre: bytes
    post: bytes
    pre_body: bytes
    mid: bytes


_CURSOR_END: Final = b'"}}'


def _framing(prefix: bytes, payload: bytes, suffix: bytes, id_length: int) -> _Framing:
    body_length = len(prefix) + id_length + len(_RESULT) + len(payload) + len(suffix)
    # The cursor goes in the outermost params: before the suffix's last "}}".
    mid = _RESULT + payload + suffix[:-2] + b',"cursor":"'
    return _Framing(
        frames.frame_header(frames.OP_TEXT, body_length) + prefix,
        _RESULT + payload + suffix,
        prefix,
        mid,
    )


def _direct_prefix(notification: bytes) -> bytes:
    return b'{"jsonrpc":"2.0","method":"' + notification + b'","params":{"subscription":'


def _session_prefix(scope: str, notification: bytes) -> bytes:
    return (
        b'{"jsonrpc":"2.0","method":"wallet_notify","params":{"scope":"'
        + scope.encode()
        + b'","notification":{"method":"'
        + notification
        + b'","params":{"subscription":'
    )


HEX_ID_LENGTH: Final = 36
"""A hex subscription id's length as sent: ``"0x"`` and 32 hex digits, quoted."""


def notification_frames(
    subs: Iterable[Subscription], payload: bytes, notification: bytes, id_length: int | None
) -> Iterator[tuple[Subscription, bytes]]:
    """Each subscription's ``notification`` frame for ``payload``: one concatenation each (the
    frames are split around the id once per form: direct or per session scope, and per id length
    unless every id is ``id_length`` long, as hex ids are)."""
    direct: _Framing | None = None
    sessions: dict[str, _Framing] = {}
    others: dict[tuple[str | None, int], _Framing] = {}
    cursored: dict[tuple[int, bytes], tuple[bytes, bytes, bytes]] = {}
    # The shared parts of the subscriber before: most subscribers share them with the one before
    # (same form, same feeds, not replaying), which is checked by identity, before any dict.
    last_feeds: tuple[str, ...] | None = None
    last_framing: _Framing | None = None
    last_shared: tuple[bytes, bytes, bytes] = (b"", b"", b"")
    for sub in list(subs):
        scope = sub.scope
        if id_length is None:
            length = len(sub.id_json)
            framing_found = others.get((scope, length))
            if framing_found is None:
                prefix = (
                    _direct_prefix(notification)
                    if scope is None
                    else _session_prefix(scope, notification)
                )
                framing_found = others[(scope, length)] = _framing(
                    prefix, payload, b"}}" if scope is None else b"}}}}", length
                )
            framing = framing_found
        elif scope is None:
            if direct is None:
                direct = _framing(_direct_prefix(notification), payload, b"}}", id_length)
            framing = direct
        else:
            found = sessions.get(scope)
            if found is None:
                found = sessions[scope] = _framing(
                    _session_prefix(scope, notification), payload, b"}}}}", id_length
                )
            framing = found
        state = sub.resume
        if state is None:
            yield sub, framing.pre + sub.id_json + framing.post
            continue
        # With a cursor (token and positions): the positions are shared by every connection that
        # follows the same feeds, unless a replay pins them. A framing is of one id length and
        # every token is TOKEN_LENGTH long, so framing and positions make the frame's length.
        feeds = state.feeds_key
        if feeds is last_feeds and framing is last_framing and state.pinned is None:
            head, mid, tail = last_shared
        else:
            positions = state.shared_positions()
            shareable = positions is not None
            if positions is None:
                positions = state.positions()
            key = (id(framing), positions)
            found_shared = cursored.get(key)
            if found_shared is None:
                size = len(sub.id_json) + len(state.prefix)
                length = (
                    len(framing.pre_body)
                    + len(framing.mid)
                    + len(positions)
                    + len(_CURSOR_END)
                    + size
                )
                found_shared = cursored[key] = (
                    frames.frame_header(frames.OP_TEXT, length) + framing.pre_body,
                    framing.mid,
                    positions + _CURSOR_END,
                )
            head, mid, tail = last_shared = found_shared
            last_feeds = feeds if shareable else None
            last_framing = framing
        yield sub, b"".join((head, sub.id_json, mid, state.prefix, tail))
