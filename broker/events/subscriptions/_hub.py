"""The subscription hub: every subscription of this process, whatever its chain family, and the
delivery of events to them. The hub owns ids, which connection holds what, session scoping
(``wallet_notify``), fan-out and cursors; each chain's family
(:class:`adapters.base.SubscriptionFamily`: the EVM profile's ``eth_subscribe``, Solana's PubSub)
says what a subscription matches and what it sends.
"""

from __future__ import annotations

import functools
import itertools
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Final

import trio

from adapters.base import SubscriptionFamily, SubscriptionIndex
from broker.events.chain_events import FamilyEvent, HubEvent
from broker.events.cursors import FeedPositions
from broker.events.subscriptions._delivery import DeliveryQueue
from broker.events.subscriptions._frames import HEX_ID_LENGTH, FrameBatch, notification_frames
from broker.events.subscriptions._model import (
    MAX_PER_CONNECTION,
    CursorKeeper,
    NoCursors,
    Subscriber,
    Subscription,
    connection_subs,
    encode_params,
)
from broker.metrics import Metrics
from broker.transport.after_answer import send_after_answer
from schemas.errors import MethodNotFound, ServerError


class SubscriptionHub:
    """Every subscription of this process, and delivery of chain events to them."""

    def __init__(self, metrics: Metrics, positions: FeedPositions | None = None) -> None:
        self._metrics = metrics
        self._chains: dict[str, SubscriptionIndex[Subscription]] = {}
        self._count = 0
        #: The subscription family of each chain that has one (set up by the composition root).
        self.families: dict[str, SubscriptionFamily] = {}
        self._integer_ids = itertools.count(1)
        #: The position delivered last on each chain (a cursor is built from them).
        self.positions = positions or FeedPositions()
        #: Cursors and resume records (the resume keeper, which uses the hub in turn: the
        #: composition root, :mod:`broker.compose`, links the two).
        self.cursors: CursorKeeper = NoCursors()
        #: Fan-outs in order, in slices; what must follow the fan-outs begun before it (a session
        #: change's cursor, a closing one) takes its turn here too.
        self.delivery = DeliveryQueue()
        #: Shares what a new subscription needs the chain's ingestion to read (its family's
        #: :meth:`~adapters.base.SubscriptionFamily.interest`) with the process that ingests it,
        #: before the subscription is answered (None: this process ingests its chains).
        self.share_interest: Callable[[str, str], Awaitable[None]] | None = None

    # -- managing subscriptions -----------------------------------------------------------------

    def family_methods(self, chain: str) -> frozenset[str]:
        """The subscribe and unsubscribe methods of ``chain``'s family (none without one)."""
        family = self.families.get(chain)
        if family is None:
            return frozenset()
        return frozenset(family.methods) | family.unsubscribe_methods()

    async def subscribe(
        self, conn: Subscriber, chain: str, method: str, params: Any, *, scope: str | None = None
    ) -> Any:
        """Create a subscription of ``chain``'s family from a subscribe call; returns its id (a
        string or an integer, as the family's ids are).

        The subscription is kept (its resume record written) and what it needs read is shared
        (:attr:`share_interest`) before it is attached, and nothing awaits between the attach and
        the answer: no notification precedes the subscription id.
        """
        sub = self.parse(conn, chain, method, params, scope=scope)
        self._check_room(sub.conn)
        await self.cursors.keep(sub)
        if self.share_interest is not None:
            interest = self.families[chain].interest(sub.matcher)
            if interest is not None:
                await self.share_interest(chain, interest)
        self._check_room(sub.conn)
        self.attach(sub, kept=True)
        self._notify_at_once(sub)
        return int(sub.id) if self.families[chain].integer_ids else sub.id

    def _notify_at_once(self, sub: Subscription) -> None:
        """Send the notification the family says is due as the subscription starts (a landed
        signature's), after the subscribe call's answer; a one-shot ends with it."""
        family = self.families[sub.chain]
        payload = family.initial(sub.matcher)
        if payload is None:
            return
        for _, frame in self._frames([sub], sub, payload):
            send_after_answer(sub.conn.frame_sender(), frame, family.initial_delay)
        self._metrics.notifications.inc()
        if sub.matcher.one_shot:
            taken = connection_subs(sub.conn)
            if taken.get(sub.id) is sub:
                self._remove(taken, sub)
                self.cursors.changed(sub.conn)

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
        method: str | None,
        params: Any,
        *,
        scope: str | None = None,
        sub_id: str | None = None,
    ) -> Subscription:
        """The subscription a subscribe call of ``chain``'s family describes, not attached yet
        (``method`` None: the family's first subscribe method, as resume records written before
        they named it have it)."""
        family = self.families.get(chain)
        if family is None:
            raise MethodNotFound(method or "subscribe")
        if method is None:
            method = next(iter(family.methods))
        elif method not in family.methods:
            raise MethodNotFound(method)
        matcher = family.parse(method, params)
        if sub_id is None:
            sub_id = self._new_id(conn, family.integer_ids)
        return Subscription(
            conn,
            chain,
            method,
            matcher,
            scope,
            sub_id=sub_id,
            integer_id=family.integer_ids,
            kind=family.kind(method, matcher),
            params=encode_params(params),
        )

    def _new_id(self, conn: Subscriber, integer: bool) -> str:
        if not integer:
            return "0x" + secrets.token_hex(16)
        taken = connection_subs(conn)
        sub_id = str(next(self._integer_ids))
        while sub_id in taken:
            sub_id = str(next(self._integer_ids))
        return sub_id

    def unsubscribe(
        self, conn: Subscriber, chain: str, method: str, params: Any, *, scope: str | None = None
    ) -> bool:
        """End one of ``conn``'s subscriptions that ``method`` (an unsubscribe method of
        ``chain``'s family) ends; the family's error when ``params`` name none."""
        family = self.families.get(chain)
        if family is None or method not in family.unsubscribe_methods():
            raise MethodNotFound(method)
        sub_id = family.unsubscribe_id(method, params)
        subs = connection_subs(conn)
        sub = subs.get(sub_id) if sub_id is not None else None
        if sub is None or sub.scope != scope or family.methods.get(sub.method) != method:
            raise family.unknown_subscription()
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
        # A connection with several subscriptions holds its frames for the rest of a delivery
        # step (an event's groups, a head and its logs): they leave in one write.
        if len(subs) == 2:
            for each in subs.values():
                each.send = each.conn.frame_sender(held=True)
        else:
            sub.send = sub.conn.frame_sender(held=len(subs) > 1)
        index = self._chains.get(sub.chain)
        if index is None:
            index = self._chains[sub.chain] = self.families[sub.chain].new_index()
        index.add(sub, sub.matcher)
        self._count += 1
        self._metrics.subscriptions.labels(sub.kind).inc()
        if not kept:
            self.cursors.changed(sub.conn)

    def subscriptions_of(self, conn: Subscriber) -> list[Subscription]:
        """The subscriptions of ``conn``, oldest first."""
        return list(connection_subs(conn).values())

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
        if len(subs) == 1:  # alone again: written at once
            for each in subs.values():
                each.send = each.conn.frame_sender()
        index = self._chains.get(sub.chain)
        if index is not None:
            index.remove(sub, sub.matcher)
        self._count -= 1
        self._metrics.subscriptions.labels(sub.kind).dec()
        # A fan-out under way holds it still: its frames now go nowhere (no flag to check, and
        # nothing more to keep per subscription).
        sub.send = _refuse

    # -- delivery -------------------------------------------------------------------------------

    def publish(self, event: HubEvent, position: str | None = None) -> None:
        """Deliver one chain event (at ``position`` on its chain's log) to every matching
        subscription, after the events published before it: at once when none is under way
        (slices of a large fan-out go on in :meth:`serve_delivery`'s task)."""
        self.delivery.submit(functools.partial(self._begin, event, position))

    async def serve_delivery(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Run the slices of large fan-outs (see :mod:`broker.events.subscriptions._delivery`)."""
        await self.delivery.serve(task_status=task_status)

    def _begin(self, event: HubEvent, position: str | None) -> _FanOut | None:
        """The fan-out of ``event``, begun: its position advanced, its subscribers taken."""
        # No await in this method: the position advances and the subscribers are taken in one
        # step, so a resume that reads the log up to this position attaches either before (it is
        # taken, and its frames carry the new cursor) or after (it replays the event): never both.
        if position is not None:
            self.positions.advance(event.chain, position, event)
        index = self._chains.get(event.chain)
        if index is None:
            return None
        # Each group's payloads (a block's logs) are gathered first, so that a subscriber gets
        # every frame the event makes for it in one write. Containers are made per group and per
        # event, never per subscriber: at 10,000 subscribers, a container each set off the garbage
        # collector mid-delivery (p99 400 ms, docs/benchmarks).
        # A group is known by its identity (an index yields the same one for each log it
        # matches), so each is held here until the end: no other takes its id meanwhile.
        groups: dict[int, tuple[Iterable[Subscription], list[Subscription], list[bytes]]] = {}
        for subs, payload in index.matching(_family_event(event)):
            found = groups.get(id(subs))
            if found is None:
                # The group as it is now: subscriptions that end later are skipped as they come
                # (their send refuses), those that begin later missed this event.
                taken = list(subs)
                if not taken:
                    continue
                groups[id(subs)] = found = (subs, taken, [])
            found[2].append(payload)
        # Those whose last step this event is (a transaction's life): ended once it is delivered.
        ended = list(index.ended(_family_event(event)))
        if not groups:
            self._end_all(ended)
            return None
        id_length = None if self.families[event.chain].integer_ids else HEX_ID_LENGTH
        batches = [
            (taken, FrameBatch(payloads, taken[0].notification, id_length))
            for _, taken, payloads in groups.values()
        ]
        return _FanOut(self, batches, ended)

    def _end_all(self, subs: list[Subscription]) -> None:
        for sub in subs:
            self._end_one_shot(sub)

    def _end_one_shot(self, sub: Subscription) -> None:
        """``sub`` ends with its one notification (Solana's ``signatureSubscribe``), or its last
        (a transaction's ``finalized``)."""
        taken = connection_subs(sub.conn)
        if taken.get(sub.id) is sub:
            self._remove(taken, sub)
            self.cursors.changed(sub.conn)

    def index(self, chain: str) -> SubscriptionIndex[Subscription] | None:
        """The family's index of ``chain``'s subscriptions (None before the first)."""
        return self._chains.get(chain)

    def replay(self, subs: list[Subscription], event: HubEvent) -> list[bytes]:
        """The frames ``subs`` (not attached) would have been sent for ``event``, in order; a
        one-shot subscription that fires is taken out of ``subs``."""
        family = self.families.get(event.chain)
        if family is None:
            return []
        index: SubscriptionIndex[Subscription] = family.new_index()
        for sub in subs:
            if sub.chain == event.chain:
                index.add(sub, sub.matcher)
        rendered: list[bytes] = []
        for matching, payload in index.matching(_family_event(event)):
            group = list(matching)
            if not group:
                continue
            rendered.extend(frame for _, frame in self._frames(group, group[0], payload))
            if group[0].matcher.one_shot:
                for sub in group:
                    subs.remove(sub)
        return rendered

    def _frames(
        self, subs: Iterable[Subscription], first: Subscription, payload: bytes
    ) -> Iterable[tuple[Subscription, bytes]]:
        id_length = None if self.families[first.chain].integer_ids else HEX_ID_LENGTH
        return notification_frames(subs, payload, first.notification, id_length)


def _refuse(frame: bytes) -> bool:
    return False


#: Frames sent between two looks at the clock (a look costs about what a small frame does).
_FRAMES_PER_CHECK: Final = 256


class _FanOut:
    """One event's fan-out: each group's subscribers, as they were when it began, and the frames
    the event makes for them (:class:`FrameBatch`), one write per subscriber."""

    __slots__ = ("_at", "_batches", "_ended", "_hub", "_next")

    def __init__(
        self,
        hub: SubscriptionHub,
        batches: list[tuple[list[Subscription], FrameBatch]],
        ended: list[Subscription],
    ):
        self._hub = hub
        self._batches = batches
        self._ended = ended  # subscriptions this event ends, once it is delivered
        self._next = 0  # the batch under way
        self._at = 0  # its next subscriber

    def run(self, until: float) -> bool:
        # Never awaits: a slice ends by returning False, and the delivery queue checkpoints
        # between slices. A subscription that ends meanwhile stays in ``subs``; its send refuses.
        clock = time.perf_counter
        sent = 0
        try:
            while self._next < len(self._batches):
                subs, batch = self._batches[self._next]
                one_shot = subs[0].matcher.one_shot
                # Looked up once a batch, not once a subscriber: at 10,000 subscribers a property
                # read per subscriber (batch.count) was 5 % of the fan-out's CPU (py-spy, bench).
                count = batch.count
                frames = batch.frames
                step = max(1, _FRAMES_PER_CHECK // count)
                at, end = self._at, len(subs)
                while at < end:
                    stop = min(end, at + step)
                    for i in range(at, stop):
                        sub = subs[i]
                        if sub.send(frames(sub)):
                            sent += count
                        if one_shot:
                            self._hub._end_one_shot(sub)
                    at = stop
                    if at < end and clock() >= until:
                        self._at = at
                        return False
                self._next += 1
                self._at = 0
            self._hub._end_all(self._ended)
            return True
        finally:
            if sent:
                self._hub._metrics.notifications.inc(sent)


def _family_event(event: HubEvent) -> object:
    """What the chain's family matches: a family's own event, or a block ingestion's."""
    return event.event if isinstance(event, FamilyEvent) else event
