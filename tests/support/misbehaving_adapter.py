"""A chain adapter that misbehaves in every way a plug-in can, to show that each fault stays the
fault of the one call that met it (``tests/broker/test_misbehaving_plugin_e2e.py``).

It is registered as plug-ins are, through the entry-point group ``scopecast.adapters``, by the
distribution metadata in ``tests/support/plugins`` (:func:`installed` puts it on ``sys.path``), so
the broker finds it by name as it finds any installed adapter.

Every method but ``misbehave_ok`` fails; ``call_now`` (the HTTP fast path, asked first) fails the
same way as ``call`` for the methods named ``misbehave_now_*``, and leaves the others to ``call``.
What is not the plug-in's to raise (``trio.Cancelled``, ``KeyboardInterrupt``) is not among its
faults: the broker lets those through. A ``SystemExit`` or ``GeneratorExit`` the plug-in raises
itself is its fault like any other.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, Final

import msgspec
import pytest
import trio

from adapters.base import NOT_NOW, ChainAdapter, NetworkSpec

NAME: Final = "misbehaving"
PLUGINS: Final = Path(__file__).parent / "plugins"
#: The size of ``misbehave_huge``'s result: above the outbox limit (4 MiB), as a 10,000-log reply.
HUGE: Final = 6 * 1024 * 1024


class PluginBaseError(BaseException):
    """A plug-in's own ``BaseException`` subclass (not Exception): still the plug-in's fault."""


def _raise(kind: str) -> Any:
    if kind == "ValueError":
        raise ValueError("bad value")
    if kind == "KeyError":
        raise KeyError("missing")
    if kind == "ZeroDivisionError":
        return 1 / 0
    if kind == "RecursionError":
        raise RecursionError("too deep")
    if kind == "StopIteration":  # becomes RuntimeError when it leaves a coroutine
        raise StopIteration
    if kind == "ExceptionGroup":
        raise ExceptionGroup("several", [ValueError("one"), TypeError("two")])
    if kind == "BaseException":
        raise PluginBaseError("a plug-in's own BaseException")
    if kind == "BaseExceptionGroup":
        raise BaseExceptionGroup("several", [PluginBaseError("one"), ValueError("two")])
    if kind == "SystemExit":  # a library calling sys.exit()
        raise SystemExit(3)
    if kind == "GeneratorExit":
        raise GeneratorExit
    if kind == "msgspec.DecodeError":
        raise msgspec.DecodeError("from the plug-in's own decoding")
    raise RuntimeError(f"unknown kind {kind}")


RAISED: Final = (
    "ValueError",
    "KeyError",
    "ZeroDivisionError",
    "RecursionError",
    "StopIteration",
    "ExceptionGroup",
    "BaseException",
    "BaseExceptionGroup",
    "msgspec.DecodeError",
    "SystemExit",
    "GeneratorExit",
)

#: The results that are not JSON, by method.
RETURNED: Final[dict[str, Callable[[], Any]]] = {
    "misbehave_object": object,
    "misbehave_nested_object": lambda: {"ok": [1, 2, {"deep": object()}]},
    "misbehave_raw_not_json": lambda: msgspec.Raw(b'{"truncated": '),
    "misbehave_raw_two_values": lambda: msgspec.Raw(b"1 2"),
    "misbehave_raw_not_utf8": lambda: msgspec.Raw(b'"\xff\xfe"'),
    "misbehave_raw_empty": lambda: msgspec.Raw(b""),
    "misbehave_nan": lambda: [1.0, math.nan],
    "misbehave_infinity": lambda: {"x": {"y": -math.inf}},
    "misbehave_too_deep": lambda: _nested(100_000),  # past the encoder's recursion limit
    "misbehave_set_of_objects": lambda: {"s": [object(), object()]},
}


def _nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


class MisbehavingAdapter(ChainAdapter):
    name: ClassVar[str] = NAME

    @classmethod
    def from_spec(cls, spec: NetworkSpec) -> MisbehavingAdapter:
        return cls(spec.chain)

    def __init__(self, chain: str) -> None:
        self.chain = chain
        self.hanging = 0

    def chains(self) -> Sequence[str]:
        return [self.chain]

    def methods(self, chain: str) -> frozenset[str]:
        names = {"misbehave_ok", "misbehave_raise", "misbehave_hang", "misbehave_huge"}
        names |= set(RETURNED) | {f"misbehave_now_{m.removeprefix('misbehave_')}" for m in RETURNED}
        names.add("misbehave_now_raise")
        return frozenset(names)

    async def call(self, chain: str, method: str, params: msgspec.Raw) -> Any:
        await trio.lowlevel.checkpoint()
        if method == "misbehave_hang":
            await self._hang()
        return self._answer(method.replace("misbehave_now_", "misbehave_"), params)

    def call_now(self, chain: str, method: str, params: msgspec.Raw) -> Any:
        if not method.startswith("misbehave_now_"):
            return NOT_NOW
        return self._answer(method.replace("misbehave_now_", "misbehave_"), params)

    def _answer(self, method: str, params: msgspec.Raw) -> Any:
        if method == "misbehave_ok":
            return "ok"
        if method == "misbehave_raise":
            return _raise(msgspec.json.decode(params)[0])
        if method == "misbehave_huge":
            return "x" * HUGE
        return RETURNED[method]()

    async def _hang(self) -> None:
        """Never return (until cancelled); :attr:`hanging` counts the calls waiting here."""
        self.hanging += 1
        try:
            await trio.sleep_forever()
        finally:
            self.hanging -= 1


@contextmanager
def installed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The adapter installed as plug-ins are (an entry point in ``scopecast.adapters``)."""
    with monkeypatch.context() as patch:
        patch.syspath_prepend(str(PLUGINS))
        yield
