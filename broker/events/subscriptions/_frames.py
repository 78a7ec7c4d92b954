"""Notification frames: built once per event and form (direct, or per session scope), split around
the subscription id (and the resume token, when the connection can resume), so that a subscriber
costs one join for all the frames an event makes for it."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final

from broker.events.subscriptions._model import Subscription
from broker.transport import frames

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
    """Each subscription's ``notification`` frame for ``payload``: one join each (the frames
    are split around the id once per form: direct or per session scope, and per id length unless
    every id is ``id_length`` long, as hex ids are)."""
    batch = FrameBatch([payload], notification, id_length)
    for sub in list(subs):
        yield sub, batch.frames(sub)


class FrameBatch:
    """The frames of one event for the subscribers of one group: every payload the event makes
    for them (a block's logs, a slot's updates), each a whole frame with its own id and cursor,
    joined into one buffer per subscriber, so a connection gets them in one write.

    The bytes are those :func:`notification_frames` makes for each payload, back to back. What
    varies between subscribers (their id and resume token) goes into templates built once per form
    (and cursor positions): a subscriber costs one join, and nothing is allocated for it but its
    buffer (the tuples filling a template's slots are freed at once, never tracked for long).
    """

    __slots__ = (
        "_cursored",
        "_forms",
        "_id_length",
        "_last_feeds",
        "_last_form",
        "_last_template",
        "_length",
        "_notification",
        "_payloads",
        "_plain",
        "_scope",
        "_scope_form",
    )

    def __init__(self, payloads: list[bytes], notification: bytes, id_length: int | None) -> None:
        """``id_length``: every id's length as sent (None: they vary, as integer ids do)."""
        self._payloads = payloads
        self._notification = notification
        self._id_length = id_length
        # (scope, id length) -> each payload's framing, in order
        self._forms: dict[tuple[str | None, int], list[_Framing]] = {}
        # id(form) -> the bytes between the ids: id.join(them) is the subscriber's buffer
        self._plain: dict[int, list[bytes]] = {}
        # (id(form), positions) -> head, None (id), mid, None (token), tail, ... per payload
        self._cursored: dict[tuple[int, bytes], list[bytes | None]] = {}
        # The subscriber before's template: most share it (same form, same feeds, no replay),
        # which is checked by identity before any dict.
        self._last_feeds: tuple[str, ...] | None = None
        self._last_form: list[_Framing] | None = None
        self._last_template: list[bytes | None] = []
        self._scope: str | None = ""  # no scope is "": the first subscriber looks its form up
        self._length = 0
        self._scope_form: list[_Framing] = []

    @property
    def count(self) -> int:
        """Frames per subscriber."""
        return len(self._payloads)

    def _form(self, scope: str | None, length: int) -> list[_Framing]:
        form = self._forms.get((scope, length))
        if form is None:
            prefix = (
                _direct_prefix(self._notification)
                if scope is None
                else _session_prefix(scope, self._notification)
            )
            suffix = b"}}" if scope is None else b"}}}}"
            form = self._forms[(scope, length)] = [
                _framing(prefix, payload, suffix, length) for payload in self._payloads
            ]
        return form

    def frames(self, sub: Subscription) -> bytes:
        """``sub``'s frames for every payload, back to back."""
        length = self._id_length if self._id_length is not None else len(sub.id_json)
        scope = sub.scope
        if scope is self._scope and length == self._length:  # most share the one before's
            form = self._scope_form
        else:
            form = self._scope_form = self._form(scope, length)
            self._scope, self._length = scope, length
        state = sub.resume
        if state is None:
            plain = self._plain.get(id(form))
            if plain is None:
                # pre_1 | post_1 pre_2 | ... | post_k: the id goes between each two
                plain = [form[0].pre]
                plain.extend(a.post + b.pre for a, b in itertools.pairwise(form))
                plain.append(form[-1].post)
                self._plain[id(form)] = plain
            return sub.id_json.join(plain)
        feeds = state.feeds_key
        if feeds is self._last_feeds and form is self._last_form and state.pinned is None:
            template = self._last_template
        else:
            positions = state.shared_positions()
            shareable = positions is not None
            if positions is None:
                positions = state.positions()
            key = (id(form), positions)
            found = self._cursored.get(key)
            if found is None:
                found = self._cursored[key] = _cursored_template(
                    form, positions, len(sub.id_json) + len(state.prefix)
                )
            template = self._last_template = found
            self._last_feeds = feeds if shareable else None
            self._last_form = form
        count = len(form)
        if count == 1:  # one frame (a head): a plain join, no slots to fill (3x faster)
            return b"".join((template[0], sub.id_json, template[2], state.prefix, template[4]))  # type: ignore[arg-type]
        template[1::5] = (sub.id_json,) * count
        template[3::5] = (state.prefix,) * count
        return b"".join(template)  # type: ignore[arg-type]  # every slot is filled above


def _cursored_template(form: list[_Framing], positions: bytes, size: int) -> list[bytes | None]:
    """Each framing's cursored frame with its id and token left out (``size``: their length)."""
    tail = positions + _CURSOR_END
    template: list[bytes | None] = []
    for framing in form:
        length = len(framing.pre_body) + len(framing.mid) + len(tail) + size
        head = frames.frame_header(frames.OP_TEXT, length) + framing.pre_body
        template.extend((head, None, framing.mid, None, tail))
    return template
