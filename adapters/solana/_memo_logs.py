"""SPL Memo's logs as the released program writes them, sans-io.

The Memo v3 build LiteSVM carries logs a successful memo as ``Signed by:``, then each signer on a
line of its own, then ``Memo (len N)`` and the text on another line. The spl-memo release (what
every cluster runs) writes ``Signed by <signer>`` per signer and ``Memo (len N): "<text>"``, the
text as Rust's ``{:?}`` prints a string, and tools read memos from those lines (solana-py's own
integration tests do). :func:`as_released` rewrites the lines of a successful invocation of the
carried build into the release's; anything else (a failed invocation, another program, a memo
program loaded from a file) is left as it ran.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import Final

MEMO_V3: Final = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr"
_INVOKE: Final = f"Program {MEMO_V3} invoke ["
_SUCCESS: Final = f"Program {MEMO_V3} success"
_LOG: Final = "Program log: "
_SIGNED_BY: Final = "Program log: Signed by:"
_MEMO_LEN: Final = "Program log: Memo (len "
_ESCAPES: Final = {"\t": "\\t", "\r": "\\r", "\n": "\\n", "\\": "\\\\", '"': '\\"', "\0": "\\0"}
#: Unicode categories Rust's ``{:?}`` prints as ``\u{…}`` (not printable).
_UNPRINTABLE: Final = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def debug_str(text: str) -> str:
    """``text`` quoted as Rust's ``{:?}`` prints a ``&str``."""
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif unicodedata.category(char) in _UNPRINTABLE:
            out.append(f"\\u{{{ord(char):x}}}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def as_released(logs: Sequence[str]) -> tuple[str, ...]:
    """``logs`` with each successful invocation of the carried Memo v3 build written as the
    release writes it."""
    if not any(line.startswith(_INVOKE) for line in logs):
        return tuple(logs)
    out: list[str] = []
    at = 0
    while at < len(logs):
        line = logs[at]
        out.append(line)
        at += 1
        if not line.startswith(_INVOKE):
            continue
        end = _end_of_invocation(logs, at)
        if end is None or logs[end] != _SUCCESS:
            continue  # failed, or cut short: left as it ran
        rewritten = _released_body(logs[at:end])
        if rewritten is not None:
            out.extend(rewritten)
            at = end
    return tuple(out)


def _end_of_invocation(logs: Sequence[str], start: int) -> int | None:
    """The index of the line ending the invocation whose body starts at ``start`` (the memo
    program makes no calls, so the first line naming it as done ends it)."""
    for index in range(start, len(logs)):
        if logs[index].startswith(f"Program {MEMO_V3} ") and not logs[index].startswith(
            f"Program {MEMO_V3} consumed"
        ):
            return index
    return None


def _released_body(body: Sequence[str]) -> list[str] | None:
    """The body of one successful invocation (its ``consumed`` line kept) in the release's
    words; None when it is not the carried build's pattern."""
    lines = list(body)
    consumed = [line for line in lines if line.startswith(f"Program {MEMO_V3} consumed")]
    logged = [line for line in lines if not line.startswith(f"Program {MEMO_V3} consumed")]
    signers: list[str] = []
    if logged and logged[0] == _SIGNED_BY:
        logged.pop(0)
        while logged and not logged[0].startswith(_MEMO_LEN):
            signers.append(logged.pop(0).removeprefix(_LOG))
    if len(logged) != 2 or not logged[0].startswith(_MEMO_LEN) or not logged[1].startswith(_LOG):
        return None
    length = logged[0].removeprefix(_MEMO_LEN).removesuffix(")")
    text = logged[1].removeprefix(_LOG)
    released = [f"{_LOG}Signed by {signer}" for signer in signers]
    released.append(f"{_LOG}Memo (len {length}): {debug_str(text)}")
    return released + consumed
