"""Counting the elements of a JSON-RPC reply's ``result`` array while its bytes arrive (sans-io).

An upstream may answer ``eth_getLogs`` with far more than the 10,000 logs the broker may return.
Feeding the streamed body through :class:`ResultCounter` stops the download as soon as element
10,001 begins, so no more than the limit is ever held in memory.

The scanner only looks at structural bytes: a regular expression finds the next quote, bracket,
brace, comma or colon, and a string is skipped whole (escapes included) by one match, so the cost
per byte stays in C. It tracks the nesting depth, the top-level key whose value is being read and,
inside ``result``'s array, the commas at that array's depth: ``n`` commas mean ``n + 1`` elements.
"""

from __future__ import annotations

import re
from typing import Final

_QUOTE: Final = ord('"')
_COMMA: Final = ord(",")
_COLON: Final = ord(":")
_OPEN: Final = frozenset(b"[{")
_CLOSE: Final = frozenset(b"]}")
_OPEN_ARRAY: Final = ord("[")
_CLOSE_ARRAY: Final = ord("]")

#: A whole string (one match however long), or a structural byte, or a lone quote that opens a
#: string continuing in the next chunk.
_TOKEN: Final = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},:"]', re.DOTALL)
#: The rest of a string that began in an earlier chunk, up to and including its closing quote.
_STRING_TAIL: Final = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
#: The rest of a chunk inside a string with no closing quote: ends early only at a lone backslash.
_STRING_BODY: Final = re.compile(rb"[^\"\\]*(?:\\.[^\"\\]*)*", re.DOTALL)

_RESULT_KEY: Final = b"result"
_KEY_CAPTURE: Final = 16  # longer top-level keys are not "result" anyway


class TooManyResults(Exception):
    """The ``result`` array has more elements than the limit."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"more than {limit} results")
        self.limit = limit


class ResultCounter:
    """Counts the top-level ``result`` array's elements of one reply, fed chunk by chunk."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        #: Elements of ``result`` seen so far (exact once :attr:`finished`).
        self.count = 0
        #: True once ``result``'s array has closed (the rest of the body is not scanned).
        self.finished = False
        self._depth = 0
        self._in_string = False
        self._pending_escape = False
        self._string_at_top = False  # the open string is a depth-1 string (a key, maybe)
        self._last_top_string: bytes | None = b""
        self._key: bytes | None = None  # the top-level key whose value is being read
        self._in_result = False
        self._started = False  # the result array has a first element
        self._gap = False  # non-blank bytes seen after "[" before any token (a literal element)

    def feed(self, chunk: bytes) -> None:
        """Scan the next bytes. Raises :class:`TooManyResults` past the limit."""
        if self.finished or not chunk:
            return
        pos = 0
        if self._in_string:
            pos = self._continue_string(chunk)
            if pos < 0:
                return
        self._scan(chunk, pos)

    def _continue_string(self, chunk: bytes) -> int:
        """Consume the open string's bytes; returns where scanning resumes (-1: still open)."""
        pos = 0
        if self._pending_escape:
            self._pending_escape = False
            pos = 1
            if pos >= len(chunk):
                return -1
        tail = _STRING_TAIL.match(chunk, pos)
        if tail is None:
            self._swallow_open_string(chunk, pos)
            return -1
        self._in_string = False
        if self._string_at_top:
            self._capture(chunk[pos : tail.end() - 1])
        return tail.end()

    def _swallow_open_string(self, chunk: bytes, pos: int) -> None:
        body = _STRING_BODY.match(chunk, pos)
        end = body.end() if body is not None else pos
        if self._string_at_top:
            self._capture(chunk[pos:end])
        # The body stops short of the end only at a backslash whose escaped byte is still to come.
        self._pending_escape = end < len(chunk)

    def _capture(self, piece: bytes) -> None:
        if self._last_top_string is not None:
            captured = self._last_top_string + piece
            self._last_top_string = captured if len(captured) <= _KEY_CAPTURE else None

    def _scan(self, chunk: bytes, pos: int) -> None:
        depth = self._depth
        try:
            for match in _TOKEN.finditer(chunk, pos):
                start = match.start()
                byte = chunk[start]
                if self._in_result and not self._started and depth == 2:
                    self._gap = self._gap or bool(chunk[pos:start].strip())
                    if byte != _CLOSE_ARRAY or self._gap:
                        self._started = True
                        self.count = 1
                pos = match.end()
                if byte == _QUOTE:
                    if depth == 1:
                        self._last_top_string = b""
                    if pos - start == 1:  # the string goes on in the next chunk
                        self._in_string = True
                        self._string_at_top = depth == 1
                        self._swallow_open_string(chunk, pos)
                        return
                    if depth == 1:
                        self._capture(chunk[start + 1 : pos - 1])
                elif byte == _COMMA:
                    if self._in_result and depth == 2:
                        self.count += 1
                        if self.count > self.limit:
                            raise TooManyResults(self.limit)
                elif byte == _COLON:
                    if depth == 1:
                        self._key = self._last_top_string
                elif byte in _OPEN:
                    depth += 1
                    if depth == 2 and byte == _OPEN_ARRAY and self._key == _RESULT_KEY:
                        self._in_result = True
                        self._gap = False
                elif byte in _CLOSE:
                    depth -= 1
                    if self._in_result and depth == 1:
                        self._in_result = False
                        self.finished = True
                        return
            if self._in_result and not self._started and depth == 2:
                self._gap = self._gap or bool(chunk[pos:].strip())
        finally:
            self._depth = depth
