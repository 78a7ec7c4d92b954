"""Log filter criteria and matching, geth's rules (sans-io).

A filter names addresses (any of them matches; none given: every address) and topic positions: each
position is None (wildcard) or a set of alternatives (OR). A log matches when its address matches
and, for every position the filter constrains, the log has a topic there that is one of the
alternatives. A filter with more positions than the log has topics does not match it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Final

from broker.errors import InvalidParams
from schemas.eth import MAX_FILTER_CRITERIA

MAX_CRITERIA: Final = MAX_FILTER_CRITERIA
_ADDRESS = re.compile(r"^0x[0-9a-fA-F]{40}$")
_TOPIC = re.compile(r"^0x[0-9a-fA-F]{64}$")


@dataclass(frozen=True, slots=True)
class LogCriteria:
    """Addresses (None: any) and per-position topic alternatives (None: any), all lowercase."""

    addresses: frozenset[str] | None = None
    topics: tuple[frozenset[str] | None, ...] = ()
    #: Addresses plus topic alternatives as the request gave them, duplicates included: what
    #: SPEC §8 limits to 5,000 per request, counted as ``eth_getLogs`` counts it (geth's rule).
    size: int = field(default=0, compare=False)

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


def _address(value: Any, where: str) -> str:
    if not isinstance(value, str) or not _ADDRESS.match(value):
        raise InvalidParams(f"{where}: invalid address {value!r}")
    return value.lower()


def _topic(value: Any, where: str) -> str:
    if not isinstance(value, str) or not _TOPIC.match(value):
        raise InvalidParams(f"{where}: invalid topic {value!r}")
    return value.lower()


def parse_criteria(obj: Any, *, where: str = "invalid argument 0") -> LogCriteria:
    """Read ``address`` and ``topics`` of a filter object (other keys are the caller's)."""
    if not isinstance(obj, dict):
        raise InvalidParams(f"{where}: filter must be an object")
    addresses: frozenset[str] | None = None
    given = 0  # duplicates count: a filter's matching dedupes, the limit does not
    raw_address = obj.get("address")
    if isinstance(raw_address, list):
        addresses = frozenset(_address(a, where) for a in raw_address) if raw_address else None
        given += len(raw_address)
    elif raw_address is not None:
        addresses = frozenset({_address(raw_address, where)})
        given += 1
    raw_topics = obj.get("topics")
    positions: list[frozenset[str] | None] = []
    if raw_topics is not None:
        if not isinstance(raw_topics, list):
            raise InvalidParams(f"{where}: topics must be an array")
        if len(raw_topics) > 4:
            raise InvalidParams(f"{where}: too many topic positions (at most 4)")
        for position in raw_topics:
            if position is None:
                positions.append(None)
            elif isinstance(position, list):
                alternatives = [_topic(t, where) for t in position if t is not None]
                # An empty list or a list holding null matches anything at that position (geth).
                wildcard = not position or any(t is None for t in position)
                positions.append(None if wildcard else frozenset(alternatives))
                given += 0 if wildcard else len(alternatives)
            else:
                positions.append(frozenset({_topic(position, where)}))
                given += 1
    criteria = LogCriteria(addresses, tuple(positions), given)
    if criteria.size > MAX_CRITERIA:
        raise InvalidParams(f"{where}: too many addresses and topics (at most {MAX_CRITERIA})")
    return criteria
