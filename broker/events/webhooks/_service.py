"""The webhooks' I/O shell: reads the chains' events from the bus, matches them with each
webhook's subscription (the chain family's own matcher, as a connection's subscription would),
queues the deliveries of each webhook (:class:`~broker.events.webhooks._queue.DeliveryQueue`) and runs
one delivery task per webhook, so a slow or dead receiver holds only its own webhook. The bus
reader only queues: it never waits for a receiver, so the live fan-out never does either.
"""

from __future__ import annotations

import hashlib
import logging
import math
import random
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec
import trio

from adapters.base import ChainCall, EventMatcher, Follower, SubscriptionFamily, SubscriptionIndex
from broker.events.bus import EventBus, Position
from broker.events.chain_events import FamilyEvent, HubEvent
from broker.events.webhooks._queue import Delivery, DeliveryQueue, RetryPolicy, Send
from broker.events.webhooks._records import SharedWebhookStore, WebhookRecord, WebhookStore
from broker.events.webhooks._sender import Outcome, Sender
from broker.events.webhooks._signing import new_secret, secret_key, signed_headers
from broker.events.webhooks._target import Target, check_literal
from schemas.errors import InvalidParams, MethodNotFound

log = logging.getLogger(__name__)

#: Webhooks one broker delivers at most.
MAX_WEBHOOKS: Final = 1000
_json = msgspec.json.Encoder()


@dataclass(frozen=True, slots=True)
class WebhookSettings:
    """Retries and bounds (``[server] webhook_*`` in the config)."""

    policy: RetryPolicy = field(default_factory=RetryPolicy)
    #: Seconds an attempt may take (connecting, sending, and the response's head).
    timeout: float = 10.0
    #: Attempts under way at once, all webhooks together.
    concurrency: int = 64
    #: How often changed positions are written to the store (seconds).
    flush_every: float = 0.5


@dataclass(eq=False, slots=True)
class _Webhook:
    """A webhook being delivered: its definition, parsed, and its queue."""

    record: WebhookRecord
    target: Target
    matcher: EventMatcher
    key: bytes
    queue: DeliveryQueue
    wake: trio.Event = field(default_factory=trio.Event)
    cancel: trio.CancelScope = field(default_factory=trio.CancelScope)
    attempt: trio.CancelScope | None = None
    stored_position: str | None = None
    sender: Sender | None = None

    def poke(self) -> None:
        self.wake.set()


def _body(record: WebhookRecord, cursor: str, notification: str, result: bytes) -> bytes:
    """The POST body: ``{"webhook", "chain", "cursor", "notification"}``, the notification as a
    connection would receive it (the webhook's id as its subscription)."""
    hook_id = _json.encode(record.id)
    return b"".join(
        (
            b'{"webhook":',
            hook_id,
            b',"chain":',
            _json.encode(record.chain),
            b',"cursor":',
            _json.encode(cursor),
            b',"notification":{"method":',
            _json.encode(notification),
            b',"params":{"subscription":',
            hook_id,
            b',"result":',
            result,
            b"}}}",
        )
    )


def _deliveries(
    hook: _Webhook, position: Position, results: list[bytes], *, by_content: bool = False
) -> list[Delivery]:
    """An event's deliveries for one webhook; the ids are made of the webhook, the event's
    position and the notification's place in it, so a delivery read back after a restart or a
    replay carries the id it had (the receiver's idempotency key)."""
    last = len(results) - 1
    return [
        Delivery(
            # A step a follower made (not on the log) is named by its content alone: made again
            # after a restart, at another position, it keeps its id.
            f"msg_{hook.record.id}_{_tag(result)}"
            if by_content
            else f"msg_{hook.record.id}_{position}_{n}",
            position,
            n == last,
            _body(hook.record, position, hook.matcher.notification, result),
        )
        for n, result in enumerate(results)
    ]


def _tag(result: bytes) -> str:
    """A family event's place (not on the log: a transaction's step) named by its content."""
    return hashlib.sha256(result).hexdigest()[:16]


class WebhookService:
    """Every webhook this process delivers (a broker's service: ``await service.start(nursery)``)."""

    def __init__(
        self,
        bus: EventBus,
        families: Mapping[str, SubscriptionFamily],
        store: WebhookStore,
        settings: WebhookSettings | None = None,
        *,
        calls: Mapping[str, ChainCall] | None = None,
        clock: Callable[[], float] = trio.current_time,
        draw: Callable[[], float] = random.random,
    ) -> None:
        """``families``: the subscription family of each chain whose events the bus carries;
        ``calls``: each chain's node, for the family events that need it (a transaction's
        steps)."""
        self._bus = bus
        self._families = dict(families)
        self._store = store
        self.settings = settings = settings or WebhookSettings()
        self._clock = clock
        self._draw = draw
        self._hooks: dict[str, _Webhook] = {}
        self._indexes: dict[str, SubscriptionIndex[_Webhook]] = {}
        self._positions: dict[str, Position] = {}
        self._slots = trio.Semaphore(settings.concurrency)
        self._nursery: trio.Nursery | None = None
        self._followers: dict[str, Follower] = {}
        for chain, call in (calls or {}).items():
            follower = (
                self._families[chain].follower(chain, call) if chain in self._families else None
            )
            if follower is not None:
                self._followers[chain] = follower

    # -- running --------------------------------------------------------------------------------

    def index(self, chain: str) -> SubscriptionIndex[Any] | None:
        """The subscriptions of the webhooks on ``chain`` (None before the first)."""
        return self._indexes.get(chain)

    async def start(self, nursery: trio.Nursery) -> None:
        """Follow the chains' events and deliver every stored webhook, in ``nursery``."""
        self._nursery = nursery
        if self._families:
            started = await nursery.start(
                self._bus.serve_reader, list(self._families), self._on_event
            )
            self._positions.update(started)
        for record, position in await self._store.load():
            await self._adopt(record, position)
        nursery.start_soon(self._serve_flusher)
        for chain, follower in self._followers.items():
            nursery.start_soon(follower.serve, self._index_of(chain), self._publisher(chain))

    def _index_of(self, chain: str) -> Callable[[], SubscriptionIndex[_Webhook] | None]:
        return lambda: self._indexes.get(chain)

    def _publisher(self, chain: str) -> Callable[[object], None]:
        def publish(event: object) -> None:
            """A family event made here (a transaction's step): delivered at the chain's
            current position, its delivery named by its content."""
            index = self._indexes.get(chain)
            position = self._positions.get(chain)
            if index is None or position is None:
                return
            for hooks, payload in index.matching(event):
                for hook in hooks:
                    hook.queue.offer(_deliveries(hook, position, [payload], by_content=True))
                    hook.poke()
            for hook in list(index.ended(event)):  # its subscription is over; the webhook stays
                index.remove(hook, hook.matcher)

        return publish

    async def _adopt(self, record: WebhookRecord, position: str | None) -> None:
        """Deliver a stored webhook from after ``position``: what it missed while no process
        delivered it first (read back from the chain's log), then the live events."""
        try:
            hook = self._build(record, position)
        except (InvalidParams, MethodNotFound) as exc:
            log.warning("webhook %s cannot be delivered here: %s", record.id, exc)
            return
        self._add(hook)
        behind = position is not None and position != self._positions.get(record.chain)
        if behind and position is not None and await self._replay(hook, position) is None:
            hook.queue.park(
                f"its position {position} is no longer on {record.chain}'s event log: "
                "replay it from a newer cursor"
            )

    async def sync(self, store: SharedWebhookStore) -> None:
        """Take up the webhooks other processes created, drop those they deleted, run the
        replays they asked for, and tell them each webhook's state."""
        records = await store.load()
        kept = {record.id for record, _ in records}
        for record, position in records:
            if record.id not in self._hooks:
                await self._adopt(record, position)
        for hook_id in [h for h in self._hooks if h not in kept]:
            self._drop(hook_id)
        for hook_id, cursor in (await store.take_replays()).items():
            hook = self._hooks.get(hook_id)
            if hook is not None and await self._replay(hook, cursor) is None:
                hook.queue.last_error = f"replay: cursor {cursor!r} is not on the event log"
        await store.write_states({h.record.id: _describe(h) for h in self._hooks.values()})

    async def serve_sync(self, store: SharedWebhookStore, every: float) -> None:
        """:meth:`sync` every ``every`` seconds, until cancelled."""
        while True:
            await trio.sleep(every)
            await self.sync(store)

    def _on_event(self, event: HubEvent, position: Position) -> None:
        """One event from the bus: queue it for every webhook it concerns (never waits)."""
        self._positions[event.chain] = position
        own = family_event(event)
        follower = self._followers.get(event.chain)
        if follower is not None:
            follower.on_event(own)
        index = self._indexes.get(event.chain)
        if index is None:
            return
        results: dict[_Webhook, list[bytes]] = {}
        for hooks, payload in index.matching(own):
            for hook in hooks:
                results.setdefault(hook, []).append(payload)
        for hook, found in results.items():
            hook.queue.offer(_deliveries(hook, position, found))
            hook.poke()
            if hook.matcher.one_shot:  # its subscription is over (one notification); it stays
                index.remove(hook, hook.matcher)
        for hook in self._hooks.values():
            # A webhook with nothing owed moves to the newest event, so its stored position
            # stays on the part of the log a restart can read back.
            if hook.record.chain == event.chain and hook not in results and hook.queue.idle:
                hook.queue.position = position

    def _build(self, record: WebhookRecord, position: str | None) -> _Webhook:
        family = self._families.get(record.chain)
        if family is None:
            raise InvalidParams(f"invalid params: no chain {record.chain!r} with events here")
        matcher = family.parse(record.method, record.params)
        queue = DeliveryQueue(self.settings.policy, position, draw=self._draw)
        return _Webhook(
            record,
            Target.parse(record.url),
            matcher,
            secret_key(record.secret),
            queue,
            stored_position=position,
        )

    def _add(self, hook: _Webhook) -> None:
        chain = hook.record.chain
        index = self._indexes.get(chain)
        if index is None:
            index = self._indexes[chain] = self._families[chain].new_index()
        index.add(hook, hook.matcher)
        self._hooks[hook.record.id] = hook
        assert self._nursery is not None
        self._nursery.start_soon(self._serve_webhook, hook)

    async def _serve_webhook(self, hook: _Webhook) -> None:
        with hook.cancel:
            try:
                while True:
                    step = hook.queue.next(self._clock())
                    if isinstance(step, Send):
                        await self._attempt(hook, step.delivery)
                        continue
                    hook.wake = trio.Event()
                    deadline = math.inf if step.when is None else step.when
                    with trio.move_on_at(deadline):
                        await hook.wake.wait()
            finally:
                if hook.sender is not None:
                    await hook.sender.aclose()  # its kept-alive connection

    async def _attempt(self, hook: _Webhook, delivery: Delivery) -> None:
        async with self._slots:
            timestamp = int(time.time())
            headers = signed_headers(hook.key, delivery.id, timestamp, delivery.body)
            outcome: Outcome | None = None
            with trio.CancelScope() as hook.attempt:
                with trio.move_on_after(self.settings.timeout):
                    if hook.sender is None:
                        hook.sender = Sender(hook.target, allow_private=hook.record.allowPrivate)
                    outcome = await hook.sender.post(headers, delivery.body)
                if outcome is None:
                    outcome = Outcome(
                        None,
                        ok=False,
                        retryable=True,
                        error=f"no answer within {self.settings.timeout:g} s",
                    )
            hook.attempt = None
        if outcome is None:  # cancelled from outside: a replay or a delete took over
            hook.queue.abandon_attempt()
            return
        if outcome.ok:
            hook.queue.delivered_head()
            return
        error = outcome.error or "failed"
        hook.queue.failed_head(
            self._clock(), error, retry_after=outcome.retry_after, final=not outcome.retryable
        )
        if hook.queue.state == "failed":
            log.warning("webhook %s parked as failed: %s", hook.record.id, error)

    async def _serve_flusher(self) -> None:
        """Write changed positions to the store (a restart redelivers at most what the last
        interval acknowledged: at-least-once, with the same delivery ids)."""
        while True:
            await trio.sleep(self.settings.flush_every)
            await self.flush()

    async def flush(self) -> None:
        """Write every changed position now."""
        for hook in list(self._hooks.values()):
            position = hook.queue.position
            if position is not None and position != hook.stored_position:
                await self._store.set_position(hook.record.id, position)
                hook.stored_position = position

    # -- the operator's side --------------------------------------------------------------------

    async def create(
        self, url: str, chain: str, method: str, params: Any, *, allow_private: bool
    ) -> dict[str, str]:
        """A new webhook, delivering from the chain's next event: ``{"id", "secret"}``."""
        if len(self._hooks) >= MAX_WEBHOOKS:
            raise InvalidParams(f"at most {MAX_WEBHOOKS} webhooks")
        record = define_webhook(url, chain, method, params, allow_private, self._families)
        position = self._positions.get(chain)
        hook = self._build(record, position)
        await self._store.save(record, position)
        self._add(hook)
        self._notify_at_once(hook, position)
        return {"id": record.id, "secret": record.secret}

    def _notify_at_once(self, hook: _Webhook, position: Position | None) -> None:
        """The notification the family says is due as a subscription starts (a landed
        signature's), delivered at once; a one-shot subscription ends with it."""
        chain = hook.record.chain
        payload = self._families[chain].initial(hook.matcher)
        if payload is None or position is None:
            return
        hook.queue.offer(_deliveries(hook, position, [payload], by_content=True))
        hook.poke()
        if hook.matcher.one_shot:
            self._indexes[chain].remove(hook, hook.matcher)

    async def describe(self) -> list[dict[str, Any]]:
        """Each webhook and its state, oldest first."""
        return [_describe(h) for h in sorted(self._hooks.values(), key=lambda h: h.record.created)]

    async def delete(self, webhook_id: str) -> bool:
        if not self._drop(webhook_id):
            raise _unknown(webhook_id)
        await self._store.delete(webhook_id)
        return True

    def _drop(self, webhook_id: str) -> bool:
        hook = self._hooks.pop(webhook_id, None)
        if hook is None:
            return False
        hook.cancel.cancel()
        self._indexes[hook.record.chain].remove(hook, hook.matcher)
        return True

    async def replay(self, webhook_id: str, cursor: str) -> dict[str, Any]:
        """Deliver again every event after ``cursor`` (a delivery's ``cursor``, or the listed
        ``position``), then the live ones; a parked webhook becomes active."""
        hook = self._hooks.get(webhook_id)
        if hook is None:
            raise _unknown(webhook_id)
        count = await self._replay(hook, cursor)
        if count is None:
            raise InvalidParams(
                f"invalid params: cursor {cursor!r} is not on {hook.record.chain}'s event log "
                "any more (or never was)"
            )
        return {"replayed": count}

    async def _replay(self, hook: _Webhook, cursor: str) -> int | None:
        chain = hook.record.chain
        upto = self._positions.get(chain)
        hook.queue.hold()
        if hook.attempt is not None:
            hook.attempt.cancel()
        try:
            events = (
                []
                if upto is None or upto == cursor
                else await self._bus.read_range(chain, cursor, upto)
            )
        except BaseException:
            hook.queue.cancel_hold()
            raise
        if events is None:
            hook.queue.cancel_hold()
            return None
        index = self._families[chain].new_index()
        index.add(hook, hook.matcher)
        deliveries: list[Delivery] = []
        for position, event in events:
            found = [payload for _, payload in index.matching(family_event(event))]
            if found:
                deliveries.extend(_deliveries(hook, position, found))
        hook.queue.replay(cursor, deliveries)
        hook.poke()
        return len(deliveries)


def define_webhook(
    url: str,
    chain: str,
    method: str,
    params: Any,
    allow_private: bool,
    families: Mapping[str, SubscriptionFamily],
) -> WebhookRecord:
    """A new webhook's definition, checked: its URL, its chain, its subscription (the family's
    own errors for bad params, as a client subscribing would get)."""
    target = Target.parse(url)
    check_literal(target, allow_private=allow_private)
    family = families.get(chain)
    if family is None:
        raise InvalidParams(f"invalid params: no chain {chain!r} with events here")
    if method not in family.methods:
        raise MethodNotFound(method)
    family.parse(method, params)
    return WebhookRecord(
        id="wh_" + secrets.token_hex(12),
        url=url,
        chain=chain,
        method=method,
        params=params,
        allowPrivate=allow_private,
        secret=new_secret(),
        created=time.time(),
    )


def matching_count(family: SubscriptionFamily, record: WebhookRecord, events: list[Any]) -> int:
    """How many deliveries ``events`` (a range of the chain's log) make for ``record``."""
    index: SubscriptionIndex[str] = family.new_index()
    index.add(record.id, family.parse(record.method, record.params))
    return sum(1 for _, event in events for _ in index.matching(family_event(event)))


def family_event(event: object) -> object:
    """What a chain's family matches: a family's own event (unwrapped), or a block's."""
    return event.event if isinstance(event, FamilyEvent) else event


def _unknown(webhook_id: str) -> InvalidParams:
    return InvalidParams(f"invalid params: no webhook {webhook_id!r}")


def _describe(hook: _Webhook) -> dict[str, Any]:
    queue = hook.queue
    return {
        **hook.record.describe(),
        "state": queue.state,
        "position": queue.position,
        "backlog": queue.backlog,
        "delivered": queue.delivered,
        "lastError": queue.last_error,
        "failedDeliveries": [
            {"id": p.id, "cursor": p.cursor, "error": p.error, "attempts": p.attempts}
            for p in queue.failed_deliveries
        ],
    }
