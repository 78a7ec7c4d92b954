"""A runner for the execution-apis ``.io`` conformance fixtures (the hive ``rpc-compat`` format).

A fixture file holds ``//`` comment lines and pairs of lines: ``>> request`` and ``<< response``. The
runner posts each request through an async ``post(request_bytes) -> response_bytes`` (so it works over
HTTP, WebSocket or a direct adapter binding) and compares as the reference runner does: structurally,
numbers numerically, ``error.message`` ignored when both sides carry an error. A fixture whose
comments say ``speconly`` is only checked for a result of the expected shape.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

Post = Callable[[bytes], Awaitable[bytes]]


@dataclass(frozen=True, slots=True)
class Exchange:
    request: bytes
    response: bytes


@dataclass(frozen=True, slots=True)
class Fixture:
    method: str
    name: str
    comments: tuple[str, ...]
    exchanges: tuple[Exchange, ...]

    @property
    def speconly(self) -> bool:
        return any("speconly" in comment for comment in self.comments)

    @property
    def id(self) -> str:
        return f"{self.method}/{self.name}"


@dataclass(slots=True)
class Report:
    """Outcomes by method: (passed, total), and the failures' explanations."""

    by_method: dict[str, list[int]] = field(default_factory=dict)
    failures: dict[str, list[str]] = field(default_factory=dict)

    def add(self, fixture: Fixture, problems: list[str]) -> None:
        counts = self.by_method.setdefault(fixture.method, [0, 0])
        counts[1] += 1
        if problems:
            self.failures[fixture.id] = problems
        else:
            counts[0] += 1

    @property
    def passed(self) -> int:
        return sum(passed for passed, _ in self.by_method.values())

    @property
    def total(self) -> int:
        return sum(total for _, total in self.by_method.values())

    def lines(self) -> list[str]:
        rows = [
            f"{method}: passed {passed} of {total}"
            for method, (passed, total) in sorted(self.by_method.items())
        ]
        rows.append(f"all: passed {self.passed} of {self.total}")
        return rows


def parse_io(text: str, *, method: str = "", name: str = "") -> Fixture:
    """Read one ``.io`` file."""
    comments: list[str] = []
    exchanges: list[Exchange] = []
    pending: bytes | None = None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("//"):
            comments.append(stripped[2:].strip())
        elif stripped.startswith(">>"):
            if pending is not None:
                raise ValueError(f"{name}:{number}: request without a response before it")
            pending = stripped[2:].strip().encode()
        elif stripped.startswith("<<"):
            if pending is None:
                raise ValueError(f"{name}:{number}: response without a request")
            exchanges.append(Exchange(pending, stripped[2:].strip().encode()))
            pending = None
        else:
            raise ValueError(f"{name}:{number}: unexpected line {stripped[:40]!r}")
    if pending is not None:
        raise ValueError(f"{name}: last request has no response")
    return Fixture(method, name, tuple(comments), tuple(exchanges))


def load_fixtures(root: Path) -> list[Fixture]:
    """Every ``<method>/<name>.io`` fixture under ``root``, sorted."""
    return [
        parse_io(path.read_text(), method=path.parent.name, name=path.stem)
        for path in sorted(root.glob("*/*.io"))
    ]


def differences(expected: Any, actual: Any, path: str = "$") -> list[str]:
    """Where ``actual`` differs from ``expected``: structure, strings exactly, numbers by value."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return [] if expected is actual else [f"{path}: expected {expected!r}, got {actual!r}"]
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return [] if expected == actual else [f"{path}: expected {expected}, got {actual}"]
    if isinstance(expected, dict) and isinstance(actual, dict):
        problems = [f"{path}.{key}: missing" for key in expected if key not in actual]
        problems += [f"{path}.{key}: unexpected" for key in actual if key not in expected]
        for key in expected.keys() & actual.keys():
            problems += differences(expected[key], actual[key], f"{path}.{key}")
        return problems
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return [f"{path}: expected {len(expected)} items, got {len(actual)}"]
        problems = []
        for index, (want, got) in enumerate(zip(expected, actual, strict=True)):
            problems += differences(want, got, f"{path}[{index}]")
        return problems
    if expected != actual or type(expected) is not type(actual):
        return [f"{path}: expected {_short(expected)}, got {_short(actual)}"]
    return []


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _kind(value: Any) -> str:
    return type(value).__name__


def compare_response(expected: Any, actual: Any, *, speconly: bool) -> list[str]:
    """The reference runner's comparison of one response."""
    if not isinstance(actual, dict):
        return [f"$: not a JSON-RPC response: {_short(actual)}"]
    if "error" in expected and "error" in actual:
        want = {**expected, "error": {k: v for k, v in expected["error"].items() if k != "message"}}
        got = {**actual, "error": {k: v for k, v in actual["error"].items() if k != "message"}}
        return differences(want, got)
    if speconly:
        if "result" not in actual:
            return [f"$: expected a result, got {_short(actual)}"]
        if _kind(expected.get("result")) != _kind(actual["result"]):
            return [f"$.result: expected a {_kind(expected.get('result'))}, got {_short(actual)}"]
        return []
    return differences(expected, actual)


async def run_fixture(fixture: Fixture, post: Post) -> list[str]:
    """Post every request of ``fixture``; the problems found (empty when it passes)."""
    problems: list[str] = []
    for exchange in fixture.exchanges:
        response = await post(exchange.request)
        try:
            actual = msgspec.json.decode(response)
        except msgspec.DecodeError as exc:
            problems.append(f"response is not JSON: {exc}")
            continue
        expected = msgspec.json.decode(exchange.response)
        problems += compare_response(expected, actual, speconly=fixture.speconly)
    return problems


async def run_all(fixtures: Iterable[Fixture], post: Post) -> Report:
    """Run ``fixtures`` in order and count the outcomes per method."""
    report = Report()
    for fixture in fixtures:
        report.add(fixture, await run_fixture(fixture, post))
    return report
