"""The EVM profile's subscriptions, sans-io: ``eth_subscribe`` ``newHeads`` and ``logs`` (geth's
params and errors), log filters indexed by address, else by first topic, else in a short list of
catch-alls (so a log is checked only against filters that can match it), and the ``removed``
replay of logs a reorganisation orphaned.

The broker's subscription hub (chain-neutral) keeps ids, connections, session scoping and cursors;
it serves this family as it serves Solana's (:class:`adapters.base.SubscriptionFamily`), over the
events the broker's head tracking makes of an adapter's blocks (:mod:`adapters.evm.blocks`).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from adapters.base import EventMatcher, MethodDocs, S, SubscriptionFamily, SubscriptionIndex
from adapters.evm.blocks import HeadEvent, LogsEvent
from adapters.evm.log_filter import (
    BLOCK_RANGE_MEMBERS,
    LogCriteria,
    filter_members,
    parse_criteria,
)
from adapters.evm.openrpc import stream_docs
from schemas.errors import InvalidParams, RpcError, ServerError, WireError
from schemas.params import positional_count

SUBSCRIBE: Final = "eth_subscribe"
UNSUBSCRIBE: Final = "eth_unsubscribe"
NOTIFICATION: Final = "eth_subscription"
NEW_HEADS: Final = "newHeads"
LOGS: Final = "logs"
_REMOVED_FALSE: Final = b'"removed":false'
_REMOVED_TRUE: Final = b'"removed":true'


@dataclass(frozen=True, slots=True)
class EvmMatcher:
    """One ``eth_subscribe`` subscription, parsed: its kind and, for ``logs``, its filter."""

    kind: str
    criteria: LogCriteria | None = None

    @property
    def key(self) -> Hashable:
        return (self.kind, self.criteria)

    @property
    def notification(self) -> str:
        return NOTIFICATION

    @property
    def one_shot(self) -> bool:
        return False

    def render(self, event: object) -> bytes | None:
        """The ``result`` of a head for a ``newHeads`` subscription. A block's logs make one
        notification per log: :meth:`EvmIndex.matching` renders those."""
        if self.kind == NEW_HEADS and isinstance(event, HeadEvent):
            return event.block.header_json
        return None


def parse_subscribe(params: Any) -> EvmMatcher:
    """The kind and log criteria of ``eth_subscribe`` params (geth's errors for bad ones)."""
    if not isinstance(params, list):
        raise InvalidParams("non-array args")
    positional_count(params, 1, 2)
    kind = params[0]
    if kind == NEW_HEADS:
        positional_count(params, 1, 1)
        return EvmMatcher(NEW_HEADS)
    if kind == LOGS:
        filter_obj = params[1] if len(params) > 1 and params[1] is not None else {}
        if isinstance(filter_obj, dict) and filter_members(filter_obj).keys() & BLOCK_RANGE_MEMBERS:
            raise InvalidParams(
                "invalid argument 1: a logs subscription takes only address and topics"
            )
        return EvmMatcher(LOGS, parse_criteria(filter_obj, where="invalid argument 1"))
    if isinstance(kind, str):
        raise WireError(
            -32601,
            f'no "{kind}" subscription in eth namespace',
            data={"supported": [NEW_HEADS, LOGS]},
        )
    raise InvalidParams("invalid argument 0: subscription name must be a string")


def log_payload(log_json: bytes, removed: bool) -> bytes:
    """A log's JSON as sent: ``"removed": true`` when a reorganisation orphaned its block."""
    return log_json.replace(_REMOVED_FALSE, _REMOVED_TRUE, 1) if removed else log_json


_Bucket = dict[LogCriteria, dict[S, None]]
"""Filters grouped by their criteria: a log is checked once per distinct filter, however many
subscriptions share it (as dapps watching one token do)."""


class EvmIndex(SubscriptionIndex[S]):
    """The EVM subscriptions of one chain, indexed for matching: heads, and log filters by
    address, else by first topic, else in a short list of catch-alls, each grouped by criteria."""

    __slots__ = ("by_address", "by_topic0", "catch_all", "heads")

    def __init__(self) -> None:
        self.heads: dict[S, None] = {}
        self.by_address: dict[str, _Bucket[S]] = {}
        self.by_topic0: dict[str, _Bucket[S]] = {}
        self.catch_all: _Bucket[S] = {}

    def add(self, sub: S, matcher: EventMatcher) -> None:
        assert isinstance(matcher, EvmMatcher)
        criteria = matcher.criteria
        if criteria is None:
            self.heads[sub] = None
            return
        index, keys = self._place(criteria)
        buckets = [self.catch_all] if index is None else [index.setdefault(k, {}) for k in keys]
        for bucket in buckets:
            bucket.setdefault(criteria, {})[sub] = None

    def remove(self, sub: S, matcher: EventMatcher) -> None:
        assert isinstance(matcher, EvmMatcher)
        criteria = matcher.criteria
        if criteria is None:
            self.heads.pop(sub, None)
            return
        index, keys = self._place(criteria)
        if index is None:
            _leave(self.catch_all, criteria, sub)
            return
        for key in keys:
            bucket = index.get(key)
            if bucket is not None:
                _leave(bucket, criteria, sub)
                if not bucket:
                    del index[key]

    def _place(self, criteria: LogCriteria) -> tuple[dict[str, _Bucket[S]] | None, Iterable[str]]:
        """Where a filter is kept: under each of its addresses, else under each alternative of
        its first topic, else (None) among the catch-alls."""
        if criteria.addresses:
            return self.by_address, criteria.addresses
        if criteria.topics and criteria.topics[0]:
            return self.by_topic0, criteria.topics[0]
        return None, ()

    def matching(self, event: object) -> Iterator[tuple[Iterable[S], bytes]]:
        """A head's subscribers and its header; or, for each log of a block that some indexed
        filter matches, the filters and the log's payload (``removed`` spliced in once)."""
        if isinstance(event, HeadEvent):
            if self.heads:
                yield self.heads, event.block.header_json
            return
        if not isinstance(event, LogsEvent):
            return
        for log in event.block.logs:
            address, topics = log.address, log.topics
            groups = [g for c, g in self.catch_all.items() if c.matches(address, topics)]
            bucket = self.by_address.get(address)
            if bucket:
                groups.extend([g for c, g in bucket.items() if c.matches(address, topics)])
            if topics:
                bucket = self.by_topic0.get(topics[0])
                if bucket:
                    groups.extend([g for c, g in bucket.items() if c.matches(address, topics)])
            if not groups:
                continue
            # A subscription is in one bucket only, and a log has one address and first topic:
            # no subscription is in two groups. Each group is yielded itself (the same object for
            # every log it matches), so the broker can gather a block's logs per group.
            payload = log_payload(log.json, event.removed)
            for group in groups:
                yield group, payload


def _leave(bucket: _Bucket[S], criteria: LogCriteria, sub: S) -> None:
    group = bucket.get(criteria)
    if group is not None:
        group.pop(sub, None)
        if not group:
            del bucket[criteria]


class EvmSubscriptions(SubscriptionFamily):
    """``eth_subscribe`` as the broker serves it on the chains of every
    :class:`~adapters.evm.chain_adapter.BlockSource` (see :class:`adapters.base.SubscriptionFamily`)."""

    methods: ClassVar[Mapping[str, str]] = {SUBSCRIBE: UNSUBSCRIBE}
    integer_ids: ClassVar[bool] = False

    def parse(self, method: str, params: Any) -> EvmMatcher:
        return parse_subscribe(params)

    def notifications(self) -> frozenset[str]:
        return frozenset({NOTIFICATION})

    def method_docs(self) -> MethodDocs:
        return stream_docs()

    def kind(self, method: str, matcher: EventMatcher) -> str:
        assert isinstance(matcher, EvmMatcher)
        return matcher.kind

    def new_index(self) -> EvmIndex[Any]:
        return EvmIndex()

    def unsubscribe_id(self, method: str, params: Any) -> str | None:
        sub_id = params[0] if isinstance(params, list) and params else None
        return sub_id if isinstance(sub_id, str) else None

    def unknown_subscription(self) -> RpcError:
        return ServerError("subscription not found")


EVM_SUBSCRIPTIONS: Final = EvmSubscriptions()
"""The EVM profile's subscription family, shared by every EVM chain adapter."""
