"""The rules of a key, without I/O: origin patterns, method globs and the GCRA arithmetic.

Everything here takes what it needs (an ``Origin`` header, a method name, ``now``) and answers; the
trio and Redis shells (:mod:`broker.access._limiter`, :mod:`broker.access._control`) do the waiting.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from schemas.errors import ConfigError

#: What an ``Origin`` header is (RFC 6454): a scheme, a host, maybe a port; nothing after it.
_ORIGIN: Final = re.compile(r"^([a-z][a-z0-9+.-]*)://([^/?#@:\s]+)(?::(\d{1,5}))?$")
_LABEL: Final = re.compile(r"^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?$")
#: The opaque origin of sandboxed frames, ``file:`` pages and some redirects.
NULL_ORIGIN: Final = "null"


@dataclass(frozen=True, slots=True)
class OriginPattern:
    """``scheme://host[:port]`` where a host label may be ``*``: exactly one label, never more."""

    scheme: str
    labels: tuple[str, ...]
    port: str | None
    text: str

    @classmethod
    def parse(cls, text: str) -> OriginPattern:
        """The pattern ``text`` (lower-cased: schemes and hosts are case-insensitive)."""
        lowered = text.strip().lower()
        if lowered == NULL_ORIGIN:
            return cls(NULL_ORIGIN, (), None, text)
        match = _ORIGIN.match(lowered)
        if match is None:
            raise ConfigError(
                f"origin {text!r}: expected scheme://host[:port] (no path), such as "
                "https://app.example.com or https://*.example.org"
            )
        scheme, host, port = match.groups()
        labels = tuple(host.split("."))
        for label in labels:
            if label != "*" and not _LABEL.match(label):
                raise ConfigError(
                    f"origin {text!r}: {label!r} is not a host label (a `*` stands for one whole label)"
                )
        if "*" in labels[-2:]:
            raise ConfigError(f"origin {text!r}: a wildcard must sit under a registrable domain")
        return cls(scheme, labels, port, text)

    def matches(self, origin: ParsedOrigin) -> bool:
        """Whether ``origin`` is one this pattern allows."""
        if self.scheme == NULL_ORIGIN or origin.scheme == NULL_ORIGIN:
            return self.scheme == origin.scheme
        if self.scheme != origin.scheme or self.port != origin.port:
            return False
        if len(self.labels) != len(origin.labels):
            return False
        return all(p == "*" or p == o for p, o in zip(self.labels, origin.labels, strict=True))


@dataclass(frozen=True, slots=True)
class ParsedOrigin:
    """An ``Origin`` header, lower-cased, its host split into labels."""

    scheme: str
    labels: tuple[str, ...]
    port: str | None


def parse_origin(header: str | None) -> ParsedOrigin | None:
    """An ``Origin`` header as sent (None when absent or not an origin at all)."""
    if header is None:
        return None
    lowered = header.strip().lower()
    if lowered == NULL_ORIGIN:
        return ParsedOrigin(NULL_ORIGIN, (), None)
    match = _ORIGIN.match(lowered)
    if match is None:
        return None
    scheme, host, port = match.groups()
    return ParsedOrigin(scheme, tuple(host.split(".")), port)


def origin_allowed(patterns: Sequence[OriginPattern] | None, header: str | None) -> bool:
    """Whether a request with this ``Origin`` header (None: none) may use the key.

    No patterns: any Origin, or none. With patterns, a request without an Origin is refused: only
    a browser is held to its Origin, and a key restricted to origins is a key for browsers.
    """
    if patterns is None:
        return True
    origin = parse_origin(header)
    return origin is not None and any(p.matches(origin) for p in patterns)


@dataclass(frozen=True, slots=True)
class MethodRule:
    """An allowlist of method globs (``eth_*``, ``wallet_getSession``): fnmatch, case-sensitive."""

    globs: tuple[str, ...]
    source: str

    def allows(self, method: str) -> bool:
        """Whether a glob of the rule matches ``method``."""
        return any(fnmatch.fnmatchcase(method, glob) for glob in self.globs)

    def describe(self) -> str:
        """The rule as the operator wrote it, for error messages."""
        return f"{self.source} = {list(self.globs)}"


# -- GCRA ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Rate:
    """``per_second`` calls a second with ``burst`` at once: the GCRA's emission interval and
    tolerance, in microseconds (integers, as the Redis script counts them)."""

    per_second: float
    burst: int

    @property
    def interval_us(self) -> int:
        return max(1, round(1_000_000 / self.per_second))

    @property
    def tolerance_us(self) -> int:
        return self.interval_us * self.burst


@dataclass(frozen=True, slots=True)
class Taken:
    """What a bucket gave: ``admitted`` of the calls asked for, the rest may retry after
    ``retry_after_us`` (0 when all were admitted); ``tat`` is the bucket's new state."""

    admitted: int
    retry_after_us: int
    tat: int


def gcra_take(tat: int, now: int, rate: Rate, cost: int) -> Taken:
    """Admit as many of ``cost`` calls as the bucket holds at ``now`` (microseconds).

    ``tat`` is the theoretical arrival time the bucket was left at (0: never used). The Redis script
    (:data:`broker.access._limiter.GCRA_SCRIPT`) is this function, line for line.
    """
    interval, tolerance = rate.interval_us, rate.tolerance_us
    tat = max(tat, now)
    fits = max(0, min(cost, (now + tolerance - tat) // interval))
    tat += fits * interval
    retry = 0 if fits == cost else tat + interval - tolerance - now
    return Taken(fits, retry, tat)


def share(taken: Taken, costs: Sequence[int]) -> list[Taken]:
    """Split what one bucket gave for several requests at once between them, first come first
    served: as if each had asked in turn (the later ones wait as long as the first refused)."""
    left = taken.admitted
    shares = []
    for cost in costs:
        given = min(cost, left)
        left -= given
        shares.append(Taken(given, 0 if given == cost else taken.retry_after_us, taken.tat))
    return shares


def retry_after_seconds(retry_after_us: int) -> int:
    """``Retry-After`` is whole seconds: round up, at least 1."""
    return max(1, math.ceil(retry_after_us / 1_000_000))
