"""Subscriptions and fan-out: ``eth_subscribe`` ``newHeads`` and ``logs``, direct or in a session,
and the subscriptions of other chain families (Solana's PubSub), through the family's matchers.

One chain event becomes one payload, encoded once; for each form of notification (geth's direct
``eth_subscription``, or the session's ``wallet_notify``) the frame is split around the subscription id
once, so delivering to a subscriber is one concatenation and one non-blocking write. Log filters are
indexed by address, else by first topic, else kept in a short list of catch-alls, so a log is checked
only against filters that can match it.
"""

from __future__ import annotations

import itertools
import secrets
from collections import defaultdict
from collections.abc import Awaitable, Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final, Protocol

import msgspec

from adapters.base import EventMatcher, SubscriptionFamily
from adapters.evm.log_filter import LogCriteria, parse_criteria
from broker import frames
from broker.cursors import FeedPositions, ResumeState
from broker.errors import InvalidParams, MethodNotFound, ServerError, WireError, missing_argument
from broker.events import FamilyEvent, HeadEvent, HubEvent, LogsEvent
from broker.metrics import Metrics

MAX_PER_CONNECTION: Final = 1024
NEW_HEADS: Final = "newHeads"
LOGS: Final = "logs"

_EVM_NOTIFICATION: Final = b"eth_subscription"
_RESULT: Final = b',"result":'
_REMOVED_FALSE: Final = b'"removed":false'
_REMOVED_TRUE: Final = b'"removed":true'


class Subscriber(Protocol):
    """The connection side of a subscription (a WebSocket connection)."""

    @property
    def state(self) -> dict[str, object]: ...

    def send_frame(self, frame: bytes) -> bool: ...


class Subscription:
    """One subscription of one connection; ``params`` is its ``eth_subscribe`` params as JSON
    (to take it over on a resumed connection), ``resume`` the connection's cursor source."""

    __slots__ = (
        "chain",
        "conn",
        "criteria",
        "id",
        "id_json",
        "kind",
        "matcher",
        "method",
        "notification",
        "params",
        "resume",
        "scope",
    )

    def __init__(
        self,
        conn: Subscriber,
        chain: str,
        kind: str,
        criteria: LogCriteria | None,
        scope: str | None,
        *,
        params: bytes = b"[]",
        sub_id: str | None = None,
        matcher: EventMatcher | None = None,
        method: str | None = None,
    ) -> None:
        self.id = sub_id or "0x" + secrets.token_hex(16)
        #: A family's subscription (``method`` its subscribe method) has an integer id.
        self.matcher = matcher
        self.method = method
        self.id_json = self.id.encode() if matcher is not None else b'"' + self.id.encode() + b'"'
        self.notification = (
            matcher.notification.encode() if matcher is not None else _EVM_NOTIFICATION
        )
        self.conn = conn
        self.chain = chain
        self.kind = kind
        self.criteria = criteria
        self.scope = scope
        self.params = params
        self.resume: ResumeState | None = None


@dataclass(frozen=True, slots=True)
class _Framing:
    """A notification frame split around the subscription id: ``pre + id + post``, or, with a
    cursor, ``pre_body + id + mid + cursor + _CURSOR_END`` under a header of its own."""

    pre: bytes
    post: bytes
    pre_body: bytes
    mid: bytes


_CURSOR_END: Final = b'"}}'


def _framing(prefix: bytes, payload: bytes, suffix: bytes, id_length: int) -> _Framing:
    body_length = len(prefix) + id_length + len(_RESULT) + len(payload) + len(suffix)
    # The cursor goes in the outermost params: before the suffix's last "}}".
    mid = _RESULT + payload + suffix[:-2] + b',"cursor":"'
    return _Framing(
        frames.frame_header(frames.OP_TEXT, body_length) + prefix,
        _RESULT + payload + suffix,
        prefix,
        mid,
    )


def _direct_prefix(notification: bytes) -> bytes:
    return b'{"jsonrpc":"2.0","method":"' + notification + b'","params":{"subscription":'


def _session_prefix(scope: str, notification: bytes = _EVM_NOTIFICATION) -> bytes:
    return (
        b'{"jsonrpc":"2.0","method":"wallet_notify","params":{"scope":"'
        + scope.encode()
        + b'","notification":{"method":"'
        + notification
        + b'","params":{"subscription":'
    )


_DIRECT_PREFIX: Final = _direct_prefix(_EVM_NOTIFICATION)


_ID_LENGTH: Final = 36  # "0x" + 32 hex digits, quoted


class _ChainIndex:
    """The subscriptions of one chain, indexed for matching."""

    __slots__ = ("by_address", "by_topic0", "catch_all", "groups", "heads")

    def __init__(self) -> None:
        self.heads: dict[Subscription, None] = {}
        #: A family's subscriptions, by their matcher's key (alike ones render alike).
        self.groups: dict[Hashable, dict[Subscription, None]] = {}
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
        if sub.matcher is not None:
            self.groups.setdefault(sub.matcher.key, {})[sub] = None
            return
        if sub.kind == NEW_HEADS:
            self.heads[sub] = None
            return
        for bucket in self._buckets(sub):
            bucket[sub] = None

    def remove(self, sub: Subscription) -> None:
        if sub.matcher is not None:
            group = self.groups.get(sub.matcher.key)
            if group is not None:
                group.pop(sub, None)
                if not group:
                    del self.groups[sub.matcher.key]
            return
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

    def __init__(self, metrics: Metrics, positions: FeedPositions | None = None) -> None:
        self._metrics = metrics
        self._chains: defaultdict[str, _ChainIndex] = defaultdict(_ChainIndex)
        self._count = 0
        #: The subscription family of each chain that has one (set up by the broker).
        self.families: dict[str, SubscriptionFamily] = {}
        self._family_ids = itertools.count(1)
        #: The position delivered last on each chain (a cursor is built from them).
        self.positions = positions or FeedPositions()
        #: The cursor source of a connection subscribing to a chain (None: no cursors); set by
        #: :class:`broker.resume.ResumeKeeper`.
        self.resume_state: Callable[[Subscriber, str], ResumeState | None] = _no_cursor
        #: Called when a connection's subscriptions changed (its resume record is stale).
        self.on_change: Callable[[Subscriber], None] = _ignore
        #: Awaited with a new subscription before it is attached (to keep its resume record).
        self.before_attach: Callable[[Subscription], Awaitable[None]] = _nothing_to_keep

    # -- managing subscriptions -----------------------------------------------------------------

    async def subscribe(
        self,
        conn: Subscriber,
        chain: str,
        params: Any,
        *,
        scope: str | None = None,
    ) -> str:
        """Create a subscription from ``eth_subscribe`` params; returns its id.

        The subscription is kept (its resume record written) before it is attached, and nothing
        awaits between the attach and the answer: no notification precedes the subscription id.
        """
        sub = self.parse(conn, chain, params, scope=scope)
        await self._keep_and_attach(sub)
        return sub.id

    async def _keep_and_attach(self, sub: Subscription) -> None:
        self._check_room(sub.conn)
        await self.before_attach(sub)
        self._check_room(sub.conn)
        self.attach(sub, kept=True)

    @staticmethod
    def _check_room(conn: Subscriber) -> None:
        if len(_connection_subs(conn)) >= MAX_PER_CONNECTION:
            raise ServerError(
                f"too many subscriptions on this connection (at most {MAX_PER_CONNECTION})"
            )

    def parse(
        self,
        conn: Subscriber,
        chain: str,
        params: Any,
        *,
        scope: str | None = None,
        sub_id: str | None = None,
    ) -> Subscription:
        """The subscription ``eth_subscribe`` params describe, not attached yet."""
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
        encoded = _encode_params(params)
        return Subscription(conn, chain, kind, criteria, scope, params=encoded, sub_id=sub_id)

    async def subscribe_family(
        self, conn: Subscriber, chain: str, method: str, params: Any, *, scope: str | None = None
    ) -> int:
        """Create a subscription of ``chain``'s family from a subscribe call; returns its id."""
        sub = self.parse_family(conn, chain, method, params, scope=scope)
        await self._keep_and_attach(sub)
        return int(sub.id)

    def parse_family(
        self,
        conn: Subscriber,
        chain: str,
        method: str,
        params: Any,
        *,
        scope: str | None = None,
        sub_id: str | None = None,
    ) -> Subscription:
        """The subscription a family's subscribe call describes, not attached yet."""
        family = self.families.get(chain)
        if family is None or method not in family.methods:
            raise MethodNotFound(method)
        matcher = family.parse(method, params)
        if sub_id is None:
            taken = _connection_subs(conn)
            sub_id = str(next(self._family_ids))
            while sub_id in taken:
                sub_id = str(next(self._family_ids))
        return Subscription(
            conn,
            chain,
            method,
            None,
            scope,
            params=_encode_params(params),
            sub_id=sub_id,
            matcher=matcher,
            method=method,
        )

    def unsubscribe_family(
        self, conn: Subscriber, chain: str, method: str, params: Any, *, scope: str | None = None
    ) -> bool:
        """End one of ``conn``'s family subscriptions (``params``: ``[id]``)."""
        family = self.families.get(chain)
        if family is None or method not in family.unsubscribe_methods():
            raise MethodNotFound(method)
        sub_id = params[0] if isinstance(params, list) and len(params) == 1 else None
        if not isinstance(sub_id, int) or isinstance(sub_id, bool):
            raise InvalidParams("Invalid params: expected one subscription id (an integer).")
        subs = _connection_subs(conn)
        sub = subs.get(str(sub_id))
        if sub is None or sub.scope != scope or sub.method is None:
            raise InvalidParams("Invalid subscription id.")
        if family.methods[sub.method] != method:
            raise InvalidParams("Invalid subscription id.")
        self._remove(subs, sub)
        self.on_change(conn)
        return True

    def attach(self, sub: Subscription, *, kept: bool = False) -> None:
        """Start delivering to ``sub`` (replacing a subscription of its connection with its id);
        ``kept``: :attr:`before_attach` kept it already (no change to report)."""
        subs = _connection_subs(sub.conn)
        previous = subs.get(sub.id)
        if previous is not None:
            self._remove(subs, previous)
        sub.resume = self.resume_state(sub.conn, sub.chain)
        subs[sub.id] = sub
        self._chains[sub.chain].add(sub)
        self._count += 1
        self._metrics.subscriptions.labels(sub.kind).inc()
        if not kept:
            self.on_change(sub.conn)

    def subscriptions_of(self, conn: Subscriber) -> list[Subscription]:
        """The subscriptions of ``conn``, oldest first."""
        return list(_connection_subs(conn).values())

    def unsubscribe(self, conn: Subscriber, sub_id: Any, *, scope: str | None = None) -> bool:
        """End one subscription of ``conn``; unknown ids raise geth's -32000."""
        subs = _connection_subs(conn)
        sub = subs.get(sub_id) if isinstance(sub_id, str) else None
        if sub is None or sub.scope != scope or sub.matcher is not None:
            raise ServerError("subscription not found")
        self._remove(subs, sub)
        self.on_change(conn)
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
        if ending:
            self.on_change(conn)
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

    def publish(self, event: HubEvent, position: str | None = None) -> int:
        """Deliver one chain event (at ``position`` on its chain's log) to every matching
        subscription; returns deliveries made."""
        if position is not None:
            self.positions.advance(event.chain, position, event)
        index = self._chains.get(event.chain)
        if index is None:
            return 0
        if isinstance(event, HeadEvent):
            sent = self._deliver(index.heads, event.block.header_json)
        elif isinstance(event, LogsEvent):
            sent = self._deliver_logs(index, event)
        else:
            sent = self._deliver_family(index, event)
        if sent:
            self._metrics.notifications.inc(sent)
        return sent

    def replay(self, subs: list[Subscription], event: HubEvent) -> list[bytes]:
        """The frames ``subs`` (not attached) would have been sent for ``event``, in order; a
        one-shot subscription that fires is taken out of ``subs``."""
        chosen = [s for s in subs if s.chain == event.chain]
        if isinstance(event, FamilyEvent):
            groups: dict[Hashable, list[Subscription]] = {}
            for sub in chosen:
                if sub.matcher is not None:
                    groups.setdefault(sub.matcher.key, []).append(sub)
            rendered: list[bytes] = []
            for group in groups.values():
                fired = self._render_group(group, event)
                rendered.extend(frame for _, frame in fired)
                if fired and group[0].matcher is not None and group[0].matcher.one_shot:
                    for sub in group:
                        subs.remove(sub)
            return rendered
        if isinstance(event, HeadEvent):
            heads = [s for s in chosen if s.kind == NEW_HEADS]
            return [frame for _, frame in _frames(heads, event.block.header_json)]
        found: list[bytes] = []
        for log in event.block.logs:
            matching = [
                s
                for s in chosen
                if s.criteria is not None and s.criteria.matches(log.address, log.topics)
            ]
            if matching:
                payload = _log_payload(log.json, event.removed)
                found.extend(frame for _, frame in _frames(matching, payload))
        return found

    def _deliver(self, subs: Iterable[Subscription], payload: bytes) -> int:
        sent = 0
        for conn, frame in _frames(subs, payload):
            if conn.send_frame(frame):
                sent += 1
        return sent

    @staticmethod
    def _render_group(
        group: list[Subscription], event: FamilyEvent
    ) -> list[tuple[Subscriber, bytes]]:
        """The frames of one group of alike family subscriptions for ``event`` (rendered once)."""
        matcher = group[0].matcher
        assert matcher is not None
        result = matcher.render(event.event)
        if result is None:
            return []
        return list(_frames(group, result, group[0].notification))

    def _deliver_family(self, index: _ChainIndex, event: FamilyEvent) -> int:
        sent = 0
        for group in list(index.groups.values()):
            subs = list(group)
            fired = self._render_group(subs, event)
            for conn, frame in fired:
                if conn.send_frame(frame):
                    sent += 1
            matcher = subs[0].matcher
            if fired and matcher is not None and matcher.one_shot:
                for sub in subs:  # it ends with its one notification (signatureSubscribe)
                    taken = _connection_subs(sub.conn)
                    if taken.get(sub.id) is sub:
                        self._remove(taken, sub)
                        self.on_change(sub.conn)
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
            sent += self._deliver(matching, _log_payload(log.json, event.removed))
        return sent


def _log_payload(log_json: bytes, removed: bool) -> bytes:
    return log_json.replace(_REMOVED_FALSE, _REMOVED_TRUE, 1) if removed else log_json


def _encode_params(params: Any) -> bytes:
    return msgspec.json.encode(params)


def _no_cursor(conn: Subscriber, chain: str) -> None:
    return None


def _ignore(conn: Subscriber) -> None:
    return None


async def _nothing_to_keep(sub: Subscription) -> None:
    return None


def _frames(
    subs: Iterable[Subscription], payload: bytes, notification: bytes = _EVM_NOTIFICATION
) -> Iterator[tuple[Subscriber, bytes]]:
    """Each subscription's notification frame for ``payload``: one concatenation each (the
    frames are split around the id once per form: direct or per session scope, and per id length
    for a family's integer ids)."""
    direct: _Framing | None = None
    sessions: dict[str, _Framing] = {}
    others: dict[tuple[str | None, int], _Framing] = {}
    cursored: dict[tuple[int, bytes, int], tuple[bytes, bytes, bytes]] = {}
    evm = notification == _EVM_NOTIFICATION
    for sub in list(subs):
        scope = sub.scope
        if not evm:
            length = len(sub.id_json)
            framing_found = others.get((scope, length))
            if framing_found is None:
                prefix = (
                    _direct_prefix(notification)
                    if scope is None
                    else _session_prefix(scope, notification)
                )
                framing_found = others[(scope, length)] = _framing(
                    prefix, payload, b"}}" if scope is None else b"}}}}", length
                )
            framing = framing_found
        elif scope is None:
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
        state = sub.resume
        if state is None:
            yield sub.conn, framing.pre + sub.id_json + framing.post
            continue
        # With a cursor: the parts every subscriber shares are built once per event.
        positions = state.positions()
        key = (id(framing), positions, len(sub.id_json) + len(state.prefix))
        shared = cursored.get(key)
        if shared is None:
            length = (
                len(framing.pre_body)
                + len(framing.mid)
                + len(positions)
                + len(_CURSOR_END)
                + key[2]
            )
            shared = cursored[key] = (
                frames.frame_header(frames.OP_TEXT, length) + framing.pre_body,
                framing.mid,
                positions + _CURSOR_END,
            )
        head, mid, tail = shared
        yield sub.conn, b"".join((head, sub.id_json, mid, state.prefix, tail))
