"""Ending the sessions of this process's dapps when they expire: the watch sleeps (on trio's
clock) until the next thing the :class:`ConnectedDapps` tracker has to do (a dapp to look up, the
earliest expiry, a lingering dapp to forget), and wakes earlier when the tracker says that may
have come nearer. Expiries are wall-clock times, as sessions state them, compared with the
service's :class:`~broker.sessions.wall_clock.WallClock`; while checks fail, it tries every ``period``."""

from __future__ import annotations

import logging
from typing import Final

import trio

from broker.events.session_changes import SessionChange, SessionChangeBus
from broker.sessions import Session, SessionStore, is_expired
from broker.sessions.metamask import accounts_changed
from broker.sessions.service._connected import ConnectedDapps
from broker.sessions.wall_clock import WallClock

log = logging.getLogger(__name__)

#: Seconds between two expiry checks while they fail (a store outage).
EXPIRY_CHECK: Final = 5.0
#: The longest sleep: the wall clock is read again at least this often (it may be set).
LONGEST_SLEEP: Final = 60.0


class ExpiryWatch:
    """Looks up the sessions of newly connected dapps and ends those that expired."""

    def __init__(
        self,
        dapps: ConnectedDapps,
        store: SessionStore,
        changes: SessionChangeBus,
        *,
        clock: WallClock,
        period: float = EXPIRY_CHECK,
    ) -> None:
        self._dapps = dapps
        self._clock = clock
        self._store = store
        self._changes = changes
        self._period = period
        # A wait between two failing checks (None: none), moved when the period changes.
        self._waiting: trio.CancelScope | None = None
        self._last = 0.0
        self._wake = trio.Event()
        dapps.tracker.on_change = self._alarm

    @property
    def period(self) -> float:
        """Seconds between two checks while they fail; a new period applies to the wait under
        way."""
        return self._period

    @period.setter
    def period(self, seconds: float) -> None:
        self._period = seconds
        if self._waiting is not None:
            self._waiting.deadline = self._last + seconds

    def _alarm(self) -> None:
        self._wake.set()

    def _next_check(self) -> float:
        """When (trio's clock) the tracker next has something to do."""
        now = trio.current_time()
        tracker = self._dapps.tracker
        if tracker.has_to_look_up():
            return now
        deadline = now + LONGEST_SLEEP
        expiry = tracker.next_expiry()
        if expiry is not None:
            wait = (expiry - self._clock.now()).total_seconds()
            deadline = min(deadline, now + max(0.0, wait))
        forgetting = tracker.next_forgetting()
        if forgetting is not None:
            deadline = min(deadline, forgetting)
        return deadline

    async def _sleep(self, *, failing: bool) -> None:
        """Until the next check: ``period`` seconds after a failed one, else until the tracker's
        next deadline or its alarm."""
        self._last = trio.current_time()
        if failing:  # the dapps that failed are due again at once: wait, whatever comes
            with trio.move_on_at(self._last + self._period) as self._waiting:
                await trio.sleep_forever()
            self._waiting = None
            return
        self._wake = trio.Event()
        with trio.move_on_at(self._next_check()):
            await self._wake.wait()

    async def serve(self) -> None:
        """Check when the tracker has something to do, until cancelled."""
        failing = False
        while True:
            await self._sleep(failing=failing)
            # One identity's failure (a corrupt session, a Redis outage) holds up no other's.
            failures = await self._look_up_new_identities()
            failures += await self._end_expired()
            self._dapps.forget_lingering()
            if failures:
                # A store outage fails every identity, check after check: one traceback per
                # outage, then a line per failed check.
                first = failures[0]
                log.warning(
                    "session expiry check failed for %s (%s: %s); trying again in %g s",
                    "1 identity" if len(failures) == 1 else f"{len(failures)} identities",
                    type(first).__name__,
                    first,
                    self.period,
                    exc_info=False if failing else first,
                )
                failing = True
            elif failing:
                log.info("session expiry checks work again")
                failing = False

    async def _look_up_new_identities(self) -> list[Exception]:
        """Track the sessions of newly connected identities; the lookups that failed."""
        failures: list[Exception] = []
        tracker, connected = self._dapps.tracker, self._dapps.by_identity
        for identity in tracker.to_look_up(connected):
            try:
                session = await self._store.get(identity)
            except Exception as exc:
                tracker.look_up_failed(identity)
                failures.append(exc)
                continue
            expiry = session.expiry if session is not None else None
            tracker.looked_up(identity, expiry, connected=identity in connected)
        return failures

    async def _end_expired(self) -> list[Exception]:
        """End the expired sessions of the identities connected here; the ends that failed."""
        failures: list[Exception] = []
        now = self._clock.now()
        tracker = self._dapps.tracker

        def ended(current: Session | None) -> tuple[Session | None, Session | None]:
            # Deleted only if still expired: another process may have replaced it meanwhile.
            if current is not None and not is_expired(current, now):
                return current, current
            return None, current

        for identity, expiry in tracker.due(now):
            try:
                session = await self._store.modify(identity, ended)
            except Exception as exc:
                failures.append(exc)  # still tracked: the next check tries again
                continue
            if not tracker.still(identity, expiry):
                continue  # a change or the last disconnect came meanwhile, and was applied
            if session is not None and not is_expired(session, now):
                tracker.watch(identity, session.expiry)
                continue
            # Through the bus, like every change: it gets a position, so a connection that
            # drops before hearing it hears it when it resumes (on any process).
            tracker.ended(identity)
            try:
                change = SessionChange(
                    identity, None, accounts_changed=accounts_changed(session, None)
                )
                await self._changes.publish(change)
            except Exception as exc:
                tracker.end_failed(identity, expiry)  # the next check tries again
                failures.append(exc)
        return failures
