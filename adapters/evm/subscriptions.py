"""The EVM profile's subscriptions, sans-io: ``eth_subscribe`` ``newHeads``, ``logs``, where
the adapter follows its pool ``newPendingTransactions`` (geth's params and errors), ``activity``
(scopecast's: every log naming an address, as emitter or topic, and every transaction from or to
it, in one shape: :func:`activity_payload`) and ``transaction`` (one transaction's life), log
filters indexed by address, else by first topic, else in a short list of catch-alls (so a log is
checked only against filters that can match it), and the ``removed`` replay of logs (and
transactions) a reorganisation orphaned.

The broker's subscription hub (chain-neutral) keeps ids, connections, session scoping and cursors;
it serves this family as it serves Solana's (:class:`adapters.base.SubscriptionFamily`), over the
events the broker's head tracking makes of an adapter's blocks (:mod:`adapters.evm.blocks`).
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from adapters.base import (
    ChainCall,
    EventMatcher,
    Follower,
    MethodDocs,
    S,
    SubscriptionFamily,
    SubscriptionIndex,
)
from adapters.evm.blocks import HeadEvent, LogsEvent, PendingTransaction
from adapters.evm.log_filter import (
    BLOCK_RANGE_MEMBERS,
    LogCriteria,
    filter_members,
    parse_criteria,
)
from adapters.evm.openrpc import stream_docs
from adapters.evm.transactions import (
    TRANSACTION,
    TransactionFollower,
    TransactionMatcher,
    TransactionStatus,
    parse_transaction,
)
from schemas.errors import InvalidParams, RpcError, ServerError, WireError
from schemas.params import positional_count

SUBSCRIBE: Final = "eth_subscribe"
UNSUBSCRIBE: Final = "eth_unsubscribe"
NOTIFICATION: Final = "eth_subscription"
NEW_HEADS: Final = "newHeads"
LOGS: Final = "logs"
NEW_PENDING_TRANSACTIONS: Final = "newPendingTransactions"
ACTIVITY: Final = "activity"
_ADDRESS: Final = re.compile(r"\A0x[0-9a-fA-F]{40}\Z")
#: A topic holding an address: 12 zero bytes, then the address.
_PADDING: Final = "0x" + "0" * 24
_REMOVED_FALSE: Final = b'"removed":false'
_REMOVED_TRUE: Final = b'"removed":true'
#: The start of an ``activity`` notification's ``result``, by kind and ``removed``.
_ACTIVITY_HEADS: Final = {
    (kind, removed): b'{"kind":"%s","removed":%s,"%s":'
    % (kind.encode(), b"true" if removed else b"false", kind.encode())
    for kind in ("log", "transaction")
    for removed in (False, True)
}


@dataclass(frozen=True, slots=True)
class EvmMatcher:
    """One ``eth_subscribe`` subscription, parsed: its kind and, for ``logs``, its filter."""

    kind: str
    criteria: LogCriteria | None = None
    #: ``newPendingTransactions``: whole transactions (geth's ``true``), else hashes.
    full: bool = False
    #: The address an ``activity`` subscription follows (lowercase).
    address: str | None = None

    @property
    def key(self) -> Hashable:
        return (self.kind, self.criteria, self.full, self.address)

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
        if self.kind == NEW_PENDING_TRANSACTIONS and isinstance(event, PendingTransaction):
            return event.json if self.full else event.hash_json
        return None


_NEW_HEADS: Final = EvmMatcher(NEW_HEADS)


def parse_subscribe(params: Any, *, pending: bool = False) -> EvmMatcher | TransactionMatcher:
    """The kind and log criteria of ``eth_subscribe`` params (geth's errors for bad ones);
    ``pending``: ``newPendingTransactions`` is served."""
    if not isinstance(params, list):
        raise InvalidParams("non-array args")
    positional_count(params, 1, 2)
    kind = params[0]
    if kind == NEW_HEADS:
        positional_count(params, 1, 1)
        return _NEW_HEADS  # frozen: every newHeads subscription shares one
    if kind == NEW_PENDING_TRANSACTIONS and pending:
        full = params[1] if len(params) > 1 else False
        if full is not None and not isinstance(full, bool):
            raise InvalidParams("invalid argument 1: want true (whole transactions) or false")
        return EvmMatcher(NEW_PENDING_TRANSACTIONS, full=bool(full))
    if kind == LOGS:
        filter_obj = params[1] if len(params) > 1 and params[1] is not None else {}
        if isinstance(filter_obj, dict) and filter_members(filter_obj).keys() & BLOCK_RANGE_MEMBERS:
            raise InvalidParams(
                "invalid argument 1: a logs subscription takes only address and topics"
            )
        return EvmMatcher(LOGS, parse_criteria(filter_obj, where="invalid argument 1"))
    if kind == TRANSACTION:
        positional_count(params, 2, 2)
        return parse_transaction(params)
    if kind == ACTIVITY:
        positional_count(params, 2, 2)
        options = params[1]
        address = options.get("address") if isinstance(options, dict) else None
        if not isinstance(address, str) or not _ADDRESS.match(address):
            raise InvalidParams(
                'invalid argument 1: activity takes {"address": "0x" + 40 hex digits}'
            )
        return EvmMatcher(ACTIVITY, address=address.lower())
    if isinstance(kind, str):
        supported = [
            NEW_HEADS,
            LOGS,
            *([NEW_PENDING_TRANSACTIONS] if pending else []),
            ACTIVITY,
            TRANSACTION,
        ]
        raise WireError(
            -32601, f'no "{kind}" subscription in eth namespace', data={"supported": supported}
        )
    raise InvalidParams("invalid argument 0: subscription name must be a string")


def log_payload(log_json: bytes, removed: bool) -> bytes:
    """A log's JSON as sent: ``"removed": true`` when a reorganisation orphaned its block."""
    return log_json.replace(_REMOVED_FALSE, _REMOVED_TRUE, 1) if removed else log_json


def activity_payload(kind: str, item_json: bytes, removed: bool) -> bytes:
    """An ``activity`` notification's ``result``: ``{"kind": "log" | "transaction", "removed",
    "log" | "transaction": {...}}``, the log as ``logs`` sends it (its own ``removed`` too), the
    transaction as ``eth_getTransactionByHash`` gives a mined one. ``removed``: a reorganisation
    took its block away."""
    return b"".join((_ACTIVITY_HEADS[kind, removed], item_json, b"}"))


def follows_activity(index: SubscriptionIndex[Any] | None) -> bool:
    """Whether ``index`` (a chain's subscriptions) holds an ``activity`` subscription: then the
    chain's blocks must carry their transactions."""
    return isinstance(index, EvmIndex) and bool(index.activity)


_Bucket = dict[LogCriteria, dict[S, None]]
"""Filters grouped by their criteria: a log is checked once per distinct filter, however many
subscriptions share it (as dapps watching one token do)."""


class EvmIndex(SubscriptionIndex[S]):
    """The EVM subscriptions of one chain, indexed for matching: heads, and log filters by
    address, else by first topic, else in a short list of catch-alls, each grouped by criteria."""

    __slots__ = (
        "activity",
        "by_address",
        "by_topic0",
        "catch_all",
        "heads",
        "pending",
        "transactions",
    )

    def __init__(self) -> None:
        self.heads: dict[S, None] = {}
        #: ``newPendingTransactions`` subscriptions: those wanting hashes, those wanting the whole
        #: transactions.
        self.pending: tuple[dict[S, None], dict[S, None]] = ({}, {})
        #: ``activity`` subscriptions by the address they follow.
        self.activity: dict[str, dict[S, None]] = {}
        #: ``transaction`` subscriptions by hash, each with its own matcher (its own life).
        self.transactions: dict[str, dict[S, TransactionMatcher]] = {}
        self.by_address: dict[str, _Bucket[S]] = {}
        self.by_topic0: dict[str, _Bucket[S]] = {}
        self.catch_all: _Bucket[S] = {}

    def add(self, sub: S, matcher: EventMatcher) -> None:
        if isinstance(matcher, TransactionMatcher):
            self.transactions.setdefault(matcher.tx_hash, {})[sub] = matcher
            return
        assert isinstance(matcher, EvmMatcher)
        if matcher.address is not None:
            self.activity.setdefault(matcher.address, {})[sub] = None
            return
        criteria = matcher.criteria
        if matcher.kind == NEW_PENDING_TRANSACTIONS:
            self.pending[matcher.full][sub] = None
            return
        if criteria is None:
            self.heads[sub] = None
            return
        index, keys = self._place(criteria)
        buckets = [self.catch_all] if index is None else [index.setdefault(k, {}) for k in keys]
        for bucket in buckets:
            bucket.setdefault(criteria, {})[sub] = None

    def remove(self, sub: S, matcher: EventMatcher) -> None:
        if isinstance(matcher, TransactionMatcher):
            following = self.transactions.get(matcher.tx_hash)
            if following is not None:
                following.pop(sub, None)
                if not following:
                    del self.transactions[matcher.tx_hash]
            return
        assert isinstance(matcher, EvmMatcher)
        if matcher.address is not None:
            followers = self.activity.get(matcher.address)
            if followers is not None:
                followers.pop(sub, None)
                if not followers:
                    del self.activity[matcher.address]
            return
        criteria = matcher.criteria
        if matcher.kind == NEW_PENDING_TRANSACTIONS:
            self.pending[matcher.full].pop(sub, None)
            return
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
        if isinstance(event, PendingTransaction):
            hashes, whole = self.pending
            if hashes:
                yield hashes, event.hash_json
            if whole and event.json is not None:
                yield whole, event.json
            return
        if isinstance(event, TransactionStatus):
            following = self.transactions.get(event.matcher.tx_hash, {})
            subs = [sub for sub, matcher in following.items() if matcher is event.matcher]
            if subs:
                yield subs, event.result
            return
        if not isinstance(event, LogsEvent):
            return
        removed = event.removed
        if self.activity:
            # A block's transactions come first (only while some activity subscription exists
            # does the ingestion fetch them), each once per address it is from or to.
            for tx in event.block.transactions:
                named = {tx.sender} if tx.recipient is None else {tx.sender, tx.recipient}
                payload = b""
                for each in named:
                    followers = self.activity.get(each)
                    if followers:
                        payload = payload or activity_payload("transaction", tx.json, removed)
                        yield followers, payload
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
            followed = list(self._followers(address, topics)) if self.activity else []
            if not groups and not followed:
                continue
            # A subscription is in one bucket only, and a log has one address and first topic:
            # no subscription is in two groups. Each group is yielded itself (the same object for
            # every log it matches), so the broker can gather a block's logs per group.
            payload = log_payload(log.json, removed)
            for group in groups:
                yield group, payload
            if followed:
                wrapped = activity_payload("log", payload, removed)
                for followers in followed:
                    yield followers, wrapped

    def ended(self, event: object) -> Iterable[S]:
        """A transaction's last step ends its subscription."""
        if not isinstance(event, TransactionStatus) or not event.final:
            return ()
        following = self.transactions.get(event.matcher.tx_hash, {})
        return [sub for sub, matcher in following.items() if matcher is event.matcher]

    def _followers(self, address: str, topics: tuple[str, ...]) -> Iterator[dict[S, None]]:
        """The ``activity`` subscriptions a log concerns: of its emitter, and of each address a
        topic holds (each address once, so no subscription is in two groups)."""
        named = {address, *(t[:2] + t[26:] for t in topics[1:] if t.startswith(_PADDING))}
        for each in named:
            followers = self.activity.get(each)
            if followers:
                yield followers


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

    def __init__(self, *, pending: bool = False) -> None:
        """``pending``: the chain's adapter reports its pool's transactions (``newPendingTransactions``)."""
        self.pending = pending

    def parse(self, method: str, params: Any) -> EvmMatcher | TransactionMatcher:
        return parse_subscribe(params, pending=self.pending)

    def notifications(self) -> frozenset[str]:
        return frozenset({NOTIFICATION})

    def method_docs(self) -> MethodDocs:
        return stream_docs(pending=self.pending)

    def kind(self, method: str, matcher: EventMatcher) -> str:
        assert isinstance(matcher, EvmMatcher | TransactionMatcher)
        return matcher.kind

    def follower(self, chain: str, call: ChainCall) -> Follower:
        """The transactions' steps, asked of the node (:mod:`adapters.evm.transactions`)."""
        return TransactionFollower(call)

    def new_index(self) -> EvmIndex[Any]:
        return EvmIndex()

    def unsubscribe_id(self, method: str, params: Any) -> str | None:
        sub_id = params[0] if isinstance(params, list) and params else None
        return sub_id if isinstance(sub_id, str) else None

    def unknown_subscription(self) -> RpcError:
        return ServerError("subscription not found")


EVM_SUBSCRIPTIONS: Final = EvmSubscriptions()
"""The EVM profile's subscription family, shared by every EVM chain adapter."""

EVM_SUBSCRIPTIONS_WITH_PENDING: Final = EvmSubscriptions(pending=True)
"""The same, with ``newPendingTransactions``: for the chains whose adapter follows its pool."""
