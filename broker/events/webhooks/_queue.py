"""One webhook's deliveries, sans-io: the backlog in order, the attempt at its head, the backoff
between attempts, and parking when a delivery keeps failing or the backlog overflows.

The shell (:mod:`broker.events.webhooks._service`) asks :meth:`DeliveryQueue.next` what to do at ``now``
(send this delivery, or wait until a time or for more work), sends, and reports the outcome with
:meth:`~DeliveryQueue.delivered` or :meth:`~DeliveryQueue.failed`. Only the head of the backlog is
ever attempted, so a failing delivery holds the ones after it (order per webhook); a retry is the
same :class:`Delivery` (same id, same body), so the receiver can drop a duplicate by its id.

States::

    active ──(attempt fails)──> retrying ──(attempt succeeds)──> active
       │                           │
       │ backlog over its bound     │ still failing after ``retry_for``, or refused for good
       v                           v
    failed <───────────────────────┘      (replay from a cursor: back to active)
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final, Literal

State = Literal["active", "retrying", "failed"]

#: Parked deliveries a webhook remembers (the oldest are forgotten first).
FAILED_KEPT: Final = 20


@dataclass(frozen=True, slots=True)
class Delivery:
    """One notification for one webhook: its id (the idempotency key, ``webhook-id``), the
    cursor of the event it comes from, whether it is that event's last for this webhook (its
    acknowledgement moves the webhook's position to ``cursor``), and the body to POST."""

    id: str
    cursor: str
    last_of_event: bool
    body: bytes


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How deliveries are retried: exponential backoff from ``initial`` seconds, doubling up to
    ``longest``, each wait drawn between half and all of it (jitter, so that many webhooks failing
    together do not retry together); given up ``retry_for`` seconds after the first failure of a
    delivery. ``backlog``: deliveries waiting per webhook before it is parked as failed."""

    initial: float = 1.0
    longest: float = 300.0
    retry_for: float = 24 * 3600.0
    backlog: int = 10_000

    def wait(self, attempts: int, draw: Callable[[], float]) -> float:
        """The wait after the ``attempts``-th failed attempt (``draw``: uniform in [0, 1))."""
        ceiling = min(self.longest, self.initial * 2.0 ** min(attempts - 1, 60))
        return ceiling * (0.5 + draw() / 2)


@dataclass(frozen=True, slots=True)
class ParkedDelivery:
    """A delivery given up: what the console shows, and the cursor to replay after."""

    id: str
    cursor: str
    error: str
    attempts: int


@dataclass(frozen=True, slots=True)
class Send:
    """Attempt the head of the backlog now."""

    delivery: Delivery


@dataclass(frozen=True, slots=True)
class WaitUntil:
    """Nothing to send before ``when`` (a retry's time); None: until more work comes."""

    when: float | None


@dataclass(slots=True)
class _Head:
    """The attempts at the head of the backlog so far."""

    attempts: int = 0
    first_failure: float | None = None
    retry_at: float = 0.0


@dataclass(slots=True)
class DeliveryQueue:
    """The deliveries of one webhook (see the module's docstring for the states)."""

    policy: RetryPolicy
    #: The cursor of the last event whose deliveries were all acknowledged (None: none yet).
    position: str | None = None
    draw: Callable[[], float] = random.random
    state: State = "active"
    last_error: str | None = None
    delivered: int = 0
    failed_deliveries: deque[ParkedDelivery] = field(
        default_factory=lambda: deque(maxlen=FAILED_KEPT)
    )
    _backlog: deque[Delivery] = field(default_factory=deque)
    _head: _Head = field(default_factory=_Head)
    #: Deliveries offered while a replay reads its range (None: no replay under way).
    _held: list[Delivery] | None = None
    _in_flight: bool = False

    @property
    def backlog(self) -> int:
        """Deliveries waiting (the one being attempted included)."""
        return len(self._backlog) + len(self._held or ())

    @property
    def idle(self) -> bool:
        """Whether nothing is owed: not parked, nothing queued, held or under way."""
        return self.state != "failed" and not self._backlog and self._held is None

    def offer(self, deliveries: Iterable[Delivery]) -> bool:
        """Queue an event's deliveries, in order; False when the webhook is parked (they are not
        kept: a replay from :attr:`position` brings them back) or the backlog overflowed (which
        parks it)."""
        if self._held is not None:  # a replay is reading its range (parked or not)
            self._held.extend(deliveries)
            return True
        if self.state == "failed":
            return False
        self._backlog.extend(deliveries)
        if len(self._backlog) > self.policy.backlog:
            self._park(f"backlog over {self.policy.backlog} deliveries: the receiver is too slow")
            return False
        return True

    def next(self, now: float) -> Send | WaitUntil:
        """What to do at ``now``: attempt the head of the backlog, or wait."""
        if self.state == "failed" or not self._backlog or self._in_flight:
            return WaitUntil(None)
        if now < self._head.retry_at:
            return WaitUntil(self._head.retry_at)
        self._in_flight = True
        return Send(self._backlog[0])

    def delivered_head(self) -> Delivery:
        """The receiver acknowledged the head (2xx): the next delivery may go; returns it."""
        self._check_in_flight()
        self._in_flight = False
        done = self._backlog.popleft()
        self._head = _Head()
        self.delivered += 1
        if self.state == "retrying":
            self.state = "active"
        if done.last_of_event:
            self.position = done.cursor
        return done

    def failed_head(
        self, now: float, error: str, *, retry_after: float | None = None, final: bool = False
    ) -> None:
        """The head's attempt failed with ``error``: retry it later (``retry_after``: the wait
        the receiver asked for), or park the webhook when ``final`` or out of time."""
        self._check_in_flight()
        self._in_flight = False
        self.last_error = error
        head = self._head
        head.attempts += 1
        if head.first_failure is None:
            head.first_failure = now
        wait = self.policy.wait(head.attempts, self.draw)
        if retry_after is not None:
            wait = max(wait, retry_after)
        if final or now + wait > head.first_failure + self.policy.retry_for:
            self._park(error)
            return
        head.retry_at = now + wait
        self.state = "retrying"

    def abandon_attempt(self) -> None:
        """The attempt under way was cancelled before an outcome (the webhook is being replayed
        or deleted): it counts for nothing, the head stays as it was."""
        self._in_flight = False

    def park(self, error: str) -> None:
        """Park the webhook as failed (its position cannot be read back, say)."""
        self._park(error)

    def _park(self, error: str) -> None:
        self.last_error = error
        if self._backlog:
            head = self._backlog[0]
            self.failed_deliveries.append(
                ParkedDelivery(head.id, head.cursor, error, self._head.attempts)
            )
        self.state = "failed"
        self._backlog.clear()
        self._held = None
        self._head = _Head()
        self._in_flight = False

    def hold(self) -> None:
        """A replay begins reading its range: keep what is offered meanwhile aside."""
        self._held = []

    def replay(self, cursor: str, deliveries: Iterable[Delivery]) -> None:
        """Deliver again everything after ``cursor``: ``deliveries`` (read back from the event
        log), then whatever was offered since :meth:`hold`. A parked webhook becomes active."""
        held = self._held or []
        self._held = None
        self._backlog = deque([*deliveries, *held])
        self._head = _Head()
        self._in_flight = False
        self.position = cursor
        self.state = "active"
        self.last_error = None

    def cancel_hold(self) -> None:
        """The replay could not read its range: what was held joins the backlog as it is."""
        held = self._held or []
        self._held = None
        if self.state != "failed":
            self.offer(held)

    def _check_in_flight(self) -> None:
        if not self._in_flight:
            raise RuntimeError("no attempt is under way: next() did not answer Send")
