"""The EVM profile of the subscription hub: ``eth_subscribe`` ``newHeads`` and ``logs`` (geth's
params and errors), log filters indexed by address, else by first topic, else in a short list of
catch-alls (so a log is checked only against filters that can match it), and the ``removed``
replay of logs a reorganisation orphaned."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import Any, Final

from adapters.evm.log_filter import (
    BLOCK_RANGE_MEMBERS,
    LogCriteria,
    filter_members,
    parse_criteria,
)
from broker.errors import InvalidParams, WireError
from broker.events import HeadEvent, LogsEvent
from broker.subscriptions._model import Subscription
from schemas.params import positional_count

NEW_HEADS: Final = "newHeads"
LOGS: Final = "logs"
_REMOVED_FALSE: Final = b'"removed":false'
_REMOVED_TRUE: Final = b'"removed":true'


def parse_subscribe(params: Any) -> tuple[str, LogCriteria | None]:
    """The kind and log criteria of ``eth_subscribe`` params (geth's errors for bad ones)."""
    if not isinstance(params, list):
        raise InvalidParams("non-array args")
    positional_count(params, 1, 2)
    kind = params[0]
    criteria: LogCriteria | None = None
    if kind == NEW_HEADS:
        positional_count(params, 1, 1)
    elif kind == LOGS:
        filter_obj = params[1] if len(params) > 1 and params[1] is not None else {}
        if isinstance(filter_obj, dict) and filter_members(filter_obj).keys() & BLOCK_RANGE_MEMBERS:
            raise InvalidParams(
                "invalid argument 1: a logs subscription takes only address and topics"
            )
        criteria = parse_criteria(filter_obj, where="invalid argument 1")
    elif isinstance(kind, str):
        raise WireError(
            -32601,
            f'no "{kind}" subscription in eth namespace',
            data={"supported": [NEW_HEADS, LOGS]},
        )
    else:
        raise InvalidParams("invalid argument 0: subscription name must be a string")
    return kind, criteria


class EvmIndex:
    """The EVM subscriptions of one chain, indexed for matching: heads, and log filters by
    address, else by first topic, else in a short list of catch-alls."""

    __slots__ = ("by_address", "by_topic0", "catch_all", "heads")

    def __init__(self) -> None:
        self.heads: dict[Subscription, None] = {}
        self.by_address: defaultdict[str, dict[Subscription, None]] = defaultdict(dict)
        self.by_topic0: defaultdict[str, dict[Subscription, None]] = defaultdict(dict)
        self.catch_all: dict[Subscription, None] = {}

    def _buckets(self, sub: Subscription) -> Iterable[dict[Subscription, None]]:
        criteria = sub.criteria
        assert criteria is not None
        if criteria.addresses:
            return [self.by_address[a] for a in criteria.addresses]
        first = criteria.topics[0] if criteria.topics else None
        if first:
            return [self.by_topic0[t] for t in first]
        return [self.catch_all]

    def add(self, sub: Subscription) -> None:
        if sub.kind == NEW_HEADS:
            self.heads[sub] = None
            return
        for bucket in self._buckets(sub):
            bucket[sub] = None

    def remove(self, sub: Subscription) -> None:
        if sub.kind == NEW_HEADS:
            self.heads.pop(sub, None)
            return
        criteria = sub.criteria
        assert criteria is not None
        if criteria.addresses:
            for a in criteria.addresses:
                self._discard(self.by_address, a, sub)
        elif criteria.topics and criteria.topics[0]:
            for t in criteria.topics[0]:
                self._discard(self.by_topic0, t, sub)
        else:
            self.catch_all.pop(sub, None)

    @staticmethod
    def _discard(
        index: defaultdict[str, dict[Subscription, None]], key: str, sub: Subscription
    ) -> None:
        bucket = index.get(key)
        if bucket is not None:
            bucket.pop(sub, None)
            if not bucket:
                del index[key]

    def log_candidates(self, address: str, topic0: str | None) -> list[Subscription]:
        found = list(self.catch_all)
        bucket = self.by_address.get(address)
        if bucket:
            found.extend(bucket)
        if topic0 is not None:
            bucket = self.by_topic0.get(topic0)
            if bucket:
                found.extend(bucket)
        return found


def log_payload(log_json: bytes, removed: bool) -> bytes:
    """A log's JSON as sent: ``"removed": true`` when a reorganisation orphaned its block."""
    return log_json.replace(_REMOVED_FALSE, _REMOVED_TRUE, 1) if removed else log_json


def matching_logs(index: EvmIndex, event: LogsEvent) -> Iterator[tuple[list[Subscription], bytes]]:
    """Each log of ``event`` that some indexed filter matches: (the filters, the payload)."""
    for log in event.block.logs:
        topic0 = log.topics[0] if log.topics else None
        candidates = index.log_candidates(log.address, topic0)
        if not candidates:
            continue
        matching = [
            s
            for s in candidates
            if s.criteria is not None and s.criteria.matches(log.address, log.topics)
        ]
        if matching:
            yield matching, log_payload(log.json, event.removed)


def replayed(
    subs: list[Subscription], event: HeadEvent | LogsEvent
) -> Iterator[tuple[list[Subscription], bytes]]:
    """What ``subs`` (not indexed) would have been sent for ``event``: (subscribers, payload)."""
    if isinstance(event, HeadEvent):
        heads = [s for s in subs if s.kind == NEW_HEADS]
        if heads:
            yield heads, event.block.header_json
        return
    for log in event.block.logs:
        matching = [
            s
            for s in subs
            if s.criteria is not None and s.criteria.matches(log.address, log.topics)
        ]
        if matching:
            yield matching, log_payload(log.json, event.removed)
