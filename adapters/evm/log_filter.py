"""Log filter objects and matching, geth's rules (sans-io): the one reading of a filter object and
the one matcher of ``eth_getLogs``, filters (``eth_newFilter``) and ``logs`` subscriptions.

A filter object's keys match case-insensitively and a ``null`` member counts as absent, as geth
decodes it (:func:`filter_members`); ``blockHash`` excludes ``fromBlock`` and ``toBlock``
(:func:`check_block_range`, SPEC §8); addresses and topics count toward
``MAX_FILTER_CRITERIA``, duplicates included.

A filter names addresses (any of them matches; none given: every address) and topic positions: each
position is None (wildcard) or a set of alternatives (OR). A log matches when its address matches
and, for every position, the log has a topic there that is one of the alternatives (any topic, for a
wildcard). A filter with more positions than the log has topics never matches it, even when every
position is a wildcard: ``topics: [null, null, null, null]`` matches only logs with four topics.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from schemas.errors import InvalidParams
from schemas.eth import (
    MAX_FILTER_CRITERIA,
    ArgumentError,
    LogFilter,
    decode_block_number,
    decode_filter_addresses,
    decode_filter_topics,
    decode_hash,
    fold_keys,
    json_kind,
    type_error,
)

#: The members that say which blocks a filter reads, as :func:`filter_members` keys them.
BLOCK_RANGE_MEMBERS: Final = frozenset({"blockhash", "fromblock", "toblock"})
BLOCK_HASH_WITH_RANGE: Final = (
    "cannot specify both BlockHash and FromBlock/ToBlock, choose one or the other"
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


def filter_members(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A filter object's members as geth reads them: by lowercase name (keys match
    case-insensitively, as Go's json matches them), a ``null`` member as absent."""
    return {key: value for key, value in fold_keys(obj).items() if value is not None}


def check_block_range(members: Mapping[str, Any]) -> None:
    """SPEC §8: ``blockHash`` names one block, so it excludes ``fromBlock`` and ``toBlock``.

    Args:
        members: The filter's :func:`filter_members`.

    Raises:
        ArgumentError: geth's text when both are given.
    """
    if "blockhash" in members and ("fromblock" in members or "toblock" in members):
        raise ArgumentError(BLOCK_HASH_WITH_RANGE)


def _criteria(members: Mapping[str, Any]) -> LogFilter:
    """The addresses and topics of a filter, within ``MAX_FILTER_CRITERIA``."""
    given = LogFilter(
        addresses=decode_filter_addresses(members.get("address")),
        topics=decode_filter_topics(members.get("topics")),
    )
    if given.criteria_count() > MAX_FILTER_CRITERIA:
        raise ArgumentError(f"too many addresses and topics (at most {MAX_FILTER_CRITERIA})")
    return given


def decode_log_filter(value: Any) -> LogFilter:
    """An ``eth_getLogs`` filter object, decoded as geth's ``FilterCriteria.UnmarshalJSON``, and
    limited as ``eth_getLogs`` limits it.

    Raises:
        ArgumentError: geth's reason.
    """
    if not isinstance(value, dict):
        raise type_error(json_kind(value), "filters.input")
    members = filter_members(value)
    block_hash = None
    if "blockhash" in members:
        try:
            block_hash = decode_hash(members["blockhash"])
        except ArgumentError as exc:
            raise ArgumentError(_struct_field_error(str(exc), "blockHash")) from None
    from_block = to_block = None
    if "fromblock" in members:
        from_block = decode_block_number(members["fromblock"])
    if "toblock" in members:
        to_block = decode_block_number(members["toblock"])
    check_block_range(members)
    criteria = _criteria(members)
    return LogFilter(
        block_hash=block_hash,
        from_block=from_block,
        to_block=to_block,
        addresses=criteria.addresses,
        topics=criteria.topics,
    )


def _struct_field_error(reason: str, field: str) -> str:
    # Go names the struct field when a field's value has the wrong type.
    prefix = "json: cannot unmarshal "
    marker = " into Go value of type "
    if reason.startswith(prefix) and marker in reason:
        what, go_type = reason[len(prefix) :].split(marker, 1)
        return f"{prefix}{what} into Go struct field input.{field} of type {go_type}"
    return reason


def parse_filter(
    obj: Any, *, where: str = "invalid argument 0"
) -> tuple[dict[str, Any], LogCriteria]:
    """A filter object's members and criteria, checked as ``eth_getLogs`` checks it before it
    reads any block: an object, ``blockHash`` alone, addresses and topics well formed and within
    the limit (the block numbers are the caller's).

    Raises:
        InvalidParams: ``where: reason``, geth's reasons.
    """
    if not isinstance(obj, dict):
        raise InvalidParams(f"{where}: filter must be an object")
    members = filter_members(obj)
    try:
        check_block_range(members)
    except ArgumentError as exc:
        raise InvalidParams(f"{where}: {exc}") from None
    return members, parse_criteria(obj, where=where)


def parse_criteria(obj: Any, *, where: str = "invalid argument 0") -> LogCriteria:
    """Read ``address`` and ``topics`` of a filter object (other members are the caller's).

    Decoded as ``eth_getLogs`` decodes them (geth's texts), and limited as it limits them: at
    most ``MAX_FILTER_CRITERIA`` addresses and topics, duplicates included.

    Raises:
        InvalidParams: ``where: reason``.
    """
    if not isinstance(obj, dict):
        raise InvalidParams(f"{where}: filter must be an object")
    try:
        given = _criteria(filter_members(obj))
    except ArgumentError as exc:
        raise InvalidParams(f"{where}: {exc}") from None
    return LogCriteria(
        frozenset(given.addresses) or None,
        tuple(None if position is None else frozenset(position) for position in given.topics),
    )
