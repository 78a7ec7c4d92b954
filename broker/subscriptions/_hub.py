"""The subscription hub: every subscription of this process, whatever its chain family, and the
delivery of events to them. The hub owns ids, which connection holds what, session scoping
(``wallet_notify``), fan-out and cursors; the EVM profile (:mod:`._evm`) and the chain families
(:class:`adapters.base.SubscriptionFamily`) say what a subscription matches and what it sends.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from adapters.base import SubscriptionFamily
from broker.cursors import FeedPositions
from broker.errors import InvalidParams, MethodNotFound, ServerError
from broker.events import FamilyEvent, HeadEvent, HubEvent, LogsEvent
from broker.metrics import Metrics
from broker.subscriptions._evm import EvmIndex, matching_logs, parse_subscribe, replayed
from broker.subscriptions._frames import notification_frames
from broker.subscriptions._model import (
    MAX_PER_CONNECTION,
    CursorKeeper,
    NoCursors,
    Subscriber,
    Subscription,
    connection_subs,
    encode_params,
)


class _ChainIndex(EvmIndex):
    """The subscriptions of one chain: the EVM profile's index, and a family's subscriptions
    grouped by their matcher's key (alike ones render alike)."""

    __slots__ = ("groups",)

    def __init__(self) -> None:
        super().__init__()
        self.groups: dict[Hashable, dict[Subscription, None]] = {}

    def add(self, sub: Subscription) -> None:
        if sub.matcher is None:
            super().add(sub)
        else:
            self.groups.setdefault(sub.matcher.key, {})[sub] = None

    def remove(self, sub: Subscription) -> None:
        if sub.matcher is None:
            super().remove(sub)
            return
        group = self.groups.get(sub.matcher.key)
        if group is not None:
            group.pop(sub, None)
            if not group:
                del self.groups[sub.matcher.key]


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
        #: Cursors and resume records (the resume keeper, which uses the hub in turn: the
        #: composition root, :mod:`broker.compose`, links the two).
        self.cursors: CursorKeeper = NoCursors()

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
        await self.cursors.keep(sub)
        self._check_room(sub.conn)
        self.attach(sub, kept=True)

    @staticmethod
    def _check_room(conn: Subscriber) -> None:
        if len(connection_subs(conn)) >= MAX_PER_CONNECTION:
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
        kind, criteria = parse_subscribe(params)
        encoded = encode_params(params)
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
            taken = connection_subs(conn)
            sub_id = str(next(self._family_ids))
            while sub_id in taken:
                sub_id = str(next(self._family_ids))
        return Subscription(
            conn,
            chain,
            method,
            None,
            scope,
            params=encode_params(params),
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
        subs = connection_subs(conn)
        sub = subs.get(str(sub_id))
        if sub is None or sub.scope != scope or sub.method is None:
            raise InvalidParams("Invalid subscription id.")
        if family.methods[sub.method] != method:
            raise InvalidParams("Invalid subscription id.")
        self._remove(subs, sub)
        self.cursors.changed(conn)
        return True

    def attach(self, sub: Subscription, *, kept: bool = False) -> None:
        """Start delivering to ``sub`` (replacing a subscription of its connection with its id);
        ``kept``: :attr:`cursors` kept it already (no change to report)."""
        subs = connection_subs(sub.conn)
        previous = subs.get(sub.id)
        if previous is not None:
            self._remove(subs, previous)
        sub.resume = self.cursors.state_for(sub.conn, sub.chain)
        subs[sub.id] = sub
        self._chains[sub.chain].add(sub)
        self._count += 1
        self._metrics.subscriptions.labels(sub.kind).inc()
        if not kept:
            self.cursors.changed(sub.conn)

    def subscriptions_of(self, conn: Subscriber) -> list[Subscription]:
        """The subscriptions of ``conn``, oldest first."""
        return list(connection_subs(conn).values())

    def unsubscribe(self, conn: Subscriber, sub_id: Any, *, scope: str | None = None) -> bool:
        """End one subscription of ``conn``; unknown ids raise geth's -32000."""
        subs = connection_subs(conn)
        sub = subs.get(sub_id) if isinstance(sub_id, str) else None
        if sub is None or sub.scope != scope or sub.matcher is not None:
            raise ServerError("subscription not found")
        self._remove(subs, sub)
        self.cursors.changed(conn)
        return True

    def drop_connection(self, conn: Subscriber) -> None:
        """End every subscription of a connection that went away."""
        self.drop_where(conn, lambda _sub: True)

    def drop_where(self, conn: Subscriber, predicate: Callable[[Subscription], bool]) -> int:
        """End the subscriptions of ``conn`` that ``predicate`` selects; returns how many."""
        subs = connection_subs(conn)
        ending = [sub for sub in subs.values() if predicate(sub)]
        for sub in ending:
            self._remove(subs, sub)
        if ending:
            self.cursors.changed(conn)
        return len(ending)

    def held(self, conn: Subscriber) -> int:
        """Subscriptions ``conn`` holds."""
        return len(connection_subs(conn))

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
        return [
            frame
            for matching, payload in replayed(chosen, event)
            for _, frame in notification_frames(matching, payload)
        ]

    def _deliver(self, subs: Iterable[Subscription], payload: bytes) -> int:
        sent = 0
        for conn, frame in notification_frames(subs, payload):
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
        return list(notification_frames(group, result, group[0].notification))

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
                    taken = connection_subs(sub.conn)
                    if taken.get(sub.id) is sub:
                        self._remove(taken, sub)
                        self.cursors.changed(sub.conn)
        return sent

    def _deliver_logs(self, index: _ChainIndex, event: LogsEvent) -> int:
        # Each log's frames are written as they are built. Gathering a block's frames per
        # connection first allocated a container per subscriber and event, and at 10,000
        # subscribers those allocations set off the garbage collector mid-delivery (p99 400 ms,
        # docs/benchmarks); one write per log keeps the hot path free of tracked allocations.
        sent = 0
        for matching, payload in matching_logs(index, event):
            sent += self._deliver(matching, payload)
        return sent
