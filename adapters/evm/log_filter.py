"""Log filter criteria and matching, geth's rules (sans-io): the one matcher of ``eth_getLogs``,
filters (``eth_newFilter``) and ``logs`` subscriptions.

A filter names addresses (any of them matches; none given: every address) and topic positions: each
position is None (wildcard) or a set of alternatives (OR). A log matches when its address matches
and, for every position, the log has a topic there that is one of the alternatives (any topic, for a
wildcard). A filter with more positions than the log has topics never matches it, even when every
position is a wildcard: ``topics: [null, null, null, null]`` matches only logs with four topics.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from schemas.errors import InvalidParams
from schemas.eth import (
    MAX_FILTER_CRITERIA,
    ArgumentError,
    LogFilter,
    decode_filter_addresses,
    decode_filter_topics,
)


@dataclass(frozen=True, slots=True)
class LogCriteria:
    """Addresses (None: any) and per-position topic alternatives (None: any), all lowercase."""

    addresses: frozenset[str] | None = None
    topics: tuple[frozenset[str] | None, ...] = ()

    @classmethod
    def build(cls, addresses: Sequence[str], topics: Sequence[Sequence[str] | None]) -> LogCriteria:
        """From lowercase addresses (empty: any) and per-position alternatives (empty: any)."""
        return cls(
            frozenset(addresses) or None,
            tuple(frozenset(t) if t else None for t in topics),
        )

    @property
    def unfiltered(self) -> bool:
        """Every log matches (no address, no topic position: not even a wildcard one)."""
        return self.addresses is None and not self.topics

    def may_match(self, addresses: frozenset[str], topics: frozenset[str]) -> bool:
        """False when no log of a block whose logs use ``addresses`` and ``topics`` can match."""
        if self.addresses is not None and self.addresses.isdisjoint(addresses):
            return False
        return all(
            alternatives is None or not alternatives.isdisjoint(topics)
            for alternatives in self.topics
        )

    def matches(self, address: str, topics: tuple[str, ...]) -> bool:
        """Whether a log (lowercase address and topics) passes this filter."""
        if self.addresses is not None and address not in self.addresses:
            return False
        if len(self.topics) > len(topics):
            return False
        for wanted, topic in zip(self.topics, topics, strict=False):
            if wanted is not None and topic not in wanted:
                return False
        return True


def parse_criteria(obj: Any, *, where: str = "invalid argument 0") -> LogCriteria:
    """Read ``address`` and ``topics`` of a filter object (other keys are the caller's).

    Decoded as ``eth_getLogs`` decodes them (:mod:`schemas.eth`, geth's texts), and limited as it
    limits them: at most ``MAX_FILTER_CRITERIA`` addresses and topics, duplicates included.
    """
    if not isinstance(obj, dict):
        raise InvalidParams(f"{where}: filter must be an object")
    try:
        given = LogFilter(
            addresses=decode_filter_addresses(obj.get("address")),
            topics=decode_filter_topics(obj.get("topics")),
        )
    except ArgumentError as exc:
        raise InvalidParams(f"{where}: {exc}") from None
    if given.criteria_count() > MAX_FILTER_CRITERIA:
        raise InvalidParams(
            f"{where}: too many addresses and topics (at most {MAX_FILTER_CRITERIA})"
        )
    return LogCriteria(
        frozenset(given.addresses) or None,
        tuple(None if position is None else frozenset(position) for position in given.topics),
    )
