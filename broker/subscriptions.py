"""Subscriptions and fan-out: ``eth_subscribe`` ``newHeads`` and ``logs``, direct or in a session.

One chain event becomes one payload, encoded once; for each form of notification (geth's direct
``eth_subscription``, or the session's ``wallet_notify``) the frame is split around the subscription id
once, so delivering to a subscriber is one concatenation and one non-blocking write. Log filters are
indexed by address, else by first topic, else kept in a short list of catch-alls, so a log is checked
only against filters that can match it.
"""

from __future__ import annotations

import secrets
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final, Protocol

from adapters.evm.log_filter import LogCriteria, parse_criteria
from broker import frames
from broker.errors import InvalidParams, ServerError, WireError, missing_argument
from broker.events import ChainEvent, HeadEvent, LogsEvent
from broker.metrics import Metrics

MAX_PER_CONNECTION: Final = 1024
NEW_HEADS: Final = "newHeads"
LOGS: Final = "logs"

_DIRECT_PREFIX: Final = b'{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":'
_RESULT: Final = b',"result":'
_REMOVED_FALSE: Final = b'"removed":false'
_REMOVED_TRUE: Final = b'"removed":true'


class Subscriber(Protocol):
    """The connection side of a subscription (a WebSocket connection)."""

    @property
    def state(self) -> dict[str, object]: ...

    def send_frame(self, frame: bytes) -> bool: ...


class Subscription:
    """One subscription of one connection."""

    __slots__ = ("chain", "conn", "criteria", "id", "id_json", "kind", "scope")

    def __init__(
        self,
        conn: Subscriber,
        chain: str,
        kind: str,
        criteria: LogCriteria | None,
        scope: str | None,
    ) -> None:
        self.id = "0x" + secrets.token_hex(16)
        self.id_json = b'"' + self.id.encode() + b'"'
        self.conn = conn
        self.chain = chain
        self.kind = kind
        self.criteria = criteria
        self.scope = scope


@dataclass(frozen=True, slots=True)
class _Framing:
    """A notification frame split around the subscription id: ``pre + id + post``."""

    pre: bytes
    post: bytes


def _framing(prefix: bytes, payload: bytes, suffix: bytes, id_length: int) -> _Framing:
    body_length = len(prefix) + id_length + len(_RESULT) + len(payload) + len(suffix)
    return _Framing(
        frames.frame_header(frames.OP_TEXT, body_length) + prefix, _RESULT + payload + suffix
    )


def _session_prefix(scope: str) -> bytes:
    return (
        b'{"jsonrpc":"2.0","method":"wallet_notify","params":{"scope":"'
        + scope.encode()
        + b'","notification":{"method":"eth_subscription","params":{"subscription":'
    )


_ID_LENGTH: Final = 36  # "0x" + 32 hex digits, quoted


class _ChainIndex:
    """The subscriptions of one chain, indexed for matching."""

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


def _connection_subs(conn: Subscriber) -> dict[str, Subscription]:
    subs = conn.state.get("subscriptions")
    if subs is None:
        subs = conn.state["subscriptions"] = {}
    assert isinstance(subs, dict)
    return subs


class SubscriptionHub:
    """Every subscription of this process, and delivery of chain events to them."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics
        self._chains: defaultdict[str, _ChainIndex] = defaultdict(_ChainIndex)
        self._count = 0

    # -- managing subscriptions -----------------------------------------------------------------

    def subscribe(
        self, conn: Subscriber, chain: str, params: Any, *, scope: str | None = None
    ) -> str:
        """Create a subscription from ``eth_subscribe`` params; returns its id."""
        if not isinstance(params, list):
            raise InvalidParams("non-array args")
        if not params:
            raise missing_argument(0)
        kind = params[0]
        criteria: LogCriteria | None = None
        if kind == NEW_HEADS:
            if len(params) > 1:
                raise InvalidParams("too many arguments, want at most 1")
        elif kind == LOGS:
            if len(params) > 2:
                raise InvalidParams("too many arguments, want at most 2")
            filter_obj = params[1] if len(params) > 1 and params[1] is not None else {}
            if isinstance(filter_obj, dict) and (
                {"fromBlock", "toBlock", "blockHash", "blockhash"} & filter_obj.keys()
            ):
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
        subs = _connection_subs(conn)
        if len(subs) >= MAX_PER_CONNECTION:
            raise ServerError(
                f"too many subscriptions on this connection (at most {MAX_PER_CONNECTION})"
            )
        sub = Subscription(conn, chain, kind, criteria, scope)
        subs[sub.id] = sub
        self._chains[chain].add(sub)
        self._count += 1
        self._metrics.subscriptions.labels(kind).inc()
        return sub.id

    def unsubscribe(self, conn: Subscriber, sub_id: Any, *, scope: str | None = None) -> bool:
        """End one subscription of ``conn``; unknown ids raise geth's -32000."""
        subs = _connection_subs(conn)
        sub = subs.get(sub_id) if isinstance(sub_id, str) else None
        if sub is None or sub.scope != scope:
            raise ServerError("subscription not found")
        self._remove(subs, sub)
        return True

    def drop_connection(self, conn: Subscriber) -> None:
        """End every subscription of a connection that went away."""
        self.drop_where(conn, lambda _sub: True)

    def drop_where(self, conn: Subscriber, predicate: Callable[[Subscription], bool]) -> int:
        """End the subscriptions of ``conn`` that ``predicate`` selects; returns how many."""
        subs = _connection_subs(conn)
        ending = [sub for sub in subs.values() if predicate(sub)]
        for sub in ending:
            self._remove(subs, sub)
        return len(ending)

    def held(self, conn: Subscriber) -> int:
        """Subscriptions ``conn`` holds."""
        return len(_connection_subs(conn))

    def count(self) -> int:
        """Subscriptions held (all chains)."""
        return self._count

    def _remove(self, subs: dict[str, Subscription], sub: Subscription) -> None:
        del subs[sub.id]
        index = self._chains.get(sub.chain)
        if index is not None:
            index.remove(sub)
        self._count -= 1
        self._metrics.subscriptions.labels(sub.kind).dec()

    # -- delivery -------------------------------------------------------------------------------

    def publish(self, event: ChainEvent) -> int:
        """Deliver one chain event to every matching subscription; returns deliveries made."""
        index = self._chains.get(event.chain)
        if index is None:
            return 0
        if isinstance(event, HeadEvent):
            sent = self._deliver(index.heads, event.chain, event.block.header_json)
        else:
            sent = self._deliver_logs(index, event)
        if sent:
            self._metrics.notifications.inc(sent)
        return sent

    def _deliver(self, subs: Iterable[Subscription], chain: str, payload: bytes) -> int:
        sent = 0
        for conn, frame in _frames(subs, payload):
            if conn.send_frame(frame):
                sent += 1
        return sent

    def _deliver_logs(self, index: _ChainIndex, event: LogsEvent) -> int:
        # Each log's frames are written as they are built. Gathering a block's frames per
        # connection first allocated a container per subscriber and event, and at 10,000
        # subscribers those allocations set off the garbage collector mid-delivery (p99 400 ms,
        # docs/benchmarks); one write per log keeps the hot path free of tracked allocations.
        sent = 0
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
            if not matching:
                continue
            payload = (
                log.json.replace(_REMOVED_FALSE, _REMOVED_TRUE, 1) if event.removed else log.json
            )
            sent += self._deliver(matching, event.chain, payload)
        return sent


def _frames(subs: Iterable[Subscription], payload: bytes) -> Iterator[tuple[Subscriber, bytes]]:
    """Each subscription's notification frame for ``payload``: one concatenation each."""
    direct: _Framing | None = None
    sessions: dict[str, _Framing] = {}
    for sub in list(subs):
        scope = sub.scope
        if scope is None:
            if direct is None:
                direct = _framing(_DIRECT_PREFIX, payload, b"}}", _ID_LENGTH)
            framing = direct
        else:
            found = sessions.get(scope)
            if found is None:
                found = sessions[scope] = _framing(
                    _session_prefix(scope), payload, b"}}}}", _ID_LENGTH
                )
            framing = found
        yield sub.conn, framing.pre + sub.id_json + framing.post
