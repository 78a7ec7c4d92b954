"""The resume keeper: cursors for this process's connections, their records, and the replay.

A connection gets a resume token the first time it follows a log (its first subscription, or the
first session change it is told about). Its record is written before the call that changed its
subscriptions is answered; when it ends, the record is kept for the resume window. A connection
opened with ``?resume=<cursor>`` reads the record back, reads every log it followed from the
cursor's positions up to what this process has delivered, sends what its subscriptions match (and
the session changes of its dapp), then attaches the subscriptions, with no await between the last
read and the attach, so live delivery takes over exactly where the replay stopped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final, Protocol

import msgspec
import trio

from broker.events.bus import EventBus, MemoryLog, Position
from broker.events.chain_events import FamilyEvent
from broker.events.cursors import (
    CHANGES,
    FeedEntry,
    FeedPositions,
    ResumeState,
    new_token,
    parse_cursor,
    position_order,
    with_cursor,
)
from broker.events.resume._records import LIVE_TTL, ResumeRecord, ResumeStore, SubscriptionRecord
from broker.events.session_changes import SessionChange, SessionChangeBus
from broker.events.subscriptions import Subscriber, Subscription, SubscriptionHub
from broker.redis import Repair
from broker.rpc.dispatch import Slot
from broker.transport.websocket import WebSocketConnection
from schemas.errors import RpcError

log = logging.getLogger(__name__)

#: Close code for a connection whose subscriptions another connection resumed (README).
CLOSE_RESUMED_ELSEWHERE: Final = 4010
#: A connection's resume state.
_STATE: Final[Slot[ResumeState]] = Slot("resume")
_FLUSH_DELAY: Final = 0.05
#: Reads a resume makes at most before it gives up catching up with the live logs.
_MAX_ROUNDS: Final = 20

_Round = tuple[list[tuple[str, Position, FeedEntry]], dict[str, Position]]
"""A replay round: entries (feed, position, entry) in the order they came, and each feed's
position once they are sent."""


def _merged(entries: list[tuple[str, Position, FeedEntry]], uptos: dict[str, Position]) -> _Round:
    entries.sort(key=lambda item: position_order(item[1]))
    return entries, uptos


class SessionReplay(Protocol):
    """The session side of a replay (the session service)."""

    def replay_changes(
        self, api_key: str, origin: str, changes: list[tuple[Position, SessionChange]], owner: str
    ) -> tuple[list[tuple[Position, bytes]], Callable[[str, str], bool] | None]:
        """The ``wallet_sessionChanged`` messages the dapp's connection would have been sent for
        ``changes`` (less those ``owner`` caused itself), and, when they changed the session,
        which scopes its subscriptions may still hold."""
        ...


def resumed_message(replayed: int, complete: bool) -> bytes:
    return msgspec.json.encode(
        {
            "jsonrpc": "2.0",
            "method": "scopecast_resumed",
            "params": {"replayed": replayed, "complete": complete},
        }
    )


def _ours(conn: Subscriber) -> WebSocketConnection:
    """The hub's subscriber as this process's WebSocket connection (the only kind there is)."""
    assert isinstance(conn, WebSocketConnection), conn
    return conn


class _Incomplete(Exception):
    """The gap since a cursor cannot be filled."""


class ResumeKeeper:
    """Cursors, records and replays for one process's connections.

    It is the hub's :class:`~broker.events.subscriptions.CursorKeeper` (:meth:`state_for`,
    :meth:`changed`, :meth:`keep`); the composition root gives it to the hub.
    """

    def __init__(
        self,
        hub: SubscriptionHub,
        bus: EventBus,
        store: ResumeStore,
        *,
        window: float,
        process_id: str = "",
        changes: SessionChangeBus | None = None,
        family_logs: dict[str, MemoryLog[FamilyEvent]] | None = None,
    ) -> None:
        """``process_id`` names this process in records (``<process>:<connection id>``);
        ``changes``: the session change bus, whose changes a resume replays (None: no
        sessions); ``family_logs``: the in-process logs of the chain families' events, by
        chain."""
        self.hub = hub
        self.bus = bus
        self.store = store
        self.window = window
        self.process_id = process_id
        self.changes = changes
        #: The session side of a replay (the session service, which uses this keeper in turn:
        #: the composition root links the two; None: no sessions).
        self.sessions: SessionReplay | None = None
        self.family_logs = family_logs or {}
        self.positions: FeedPositions = hub.positions
        self._owners: dict[str, WebSocketConnection] = {}
        self._dirty: set[WebSocketConnection] = set()
        self._wake = trio.Event()

    # -- cursors ----------------------------------------------------------------------------------

    def state(self, conn: WebSocketConnection) -> ResumeState:
        """The connection's resume state (created, with a new token, on first use)."""
        found = conn.slots.get(_STATE)
        if found is not None:
            return found
        state = ResumeState(self.positions, new_token())
        state.follow(CHANGES)
        conn.slots.set(_STATE, state)
        self._owners[state.token] = conn
        self.changed(conn)
        return state

    def cursor(self, conn: WebSocketConnection) -> bytes:
        return self.state(conn).cursor()

    def last_cursor(self, conn: WebSocketConnection) -> str | None:
        """The cursor of the last notification ``conn`` was sent (None: it followed nothing)."""
        found = conn.slots.get(_STATE)
        return found.cursor().decode() if found is not None else None

    async def closing_cursor(self, conn: WebSocketConnection) -> str | None:
        """:meth:`last_cursor` once the fan-outs under way are delivered (a fan-out in slices
        may not have reached ``conn`` yet); the caller closes with it before its next await."""
        await self.hub.delivery.delivered()
        return self.last_cursor(conn)

    def state_for(self, conn: Subscriber, chain: str) -> ResumeState:
        """``conn``'s resume state, which now follows ``chain`` (the hub asks as it attaches)."""
        state = self.state(_ours(conn))
        if state.follow(chain):
            self.changed(conn)
        return state

    # -- records ----------------------------------------------------------------------------------

    def changed(self, conn: Subscriber) -> None:
        """``conn``'s subscriptions changed: its record is written again soon."""
        ours = _ours(conn)
        if ours.slots.get(_STATE) is None:
            # Nothing to write: it follows no log, or it ended and its record is kept already
            # (the subscriptions its end drops come after release()). Not held for the flusher
            # either: an ended connection is freed at once.
            return
        self._dirty.add(ours)
        self._wake.set()

    def _record(self, conn: WebSocketConnection, state: ResumeState) -> ResumeRecord:
        return ResumeRecord(
            api_key=conn.context.api_key,
            origin=conn.context.origin,
            owner=f"{self.process_id}:{conn.id}",
            feeds=tuple(state.feeds),
            since=tuple(state.since),
            subscriptions=tuple(
                SubscriptionRecord(s.id, s.chain, s.params, s.scope, s.method)
                for s in self.hub.subscriptions_of(conn)
            ),
        )

    async def _save(self, conn: WebSocketConnection, ttl: float) -> None:
        found = conn.slots.get(_STATE)
        if found is not None:
            await self._write(found.token, self._record(conn, found), ttl)

    async def _write(self, token: str, record: ResumeRecord, ttl: float) -> None:
        try:
            await self.store.save(token, record, ttl)
        except Exception as exc:  # a store outage must not fail the call that changed the record
            log.warning("could not save resume record %s…: %s", token[:6], exc)

    async def keep(self, sub: Subscription) -> None:
        """Write the record of ``sub``'s connection as it will be once ``sub`` is attached."""
        conn = _ours(sub.conn)
        state = self.state_for(conn, sub.chain)
        record = self._record(conn, state)
        record = msgspec.structs.replace(
            record,
            subscriptions=(
                *record.subscriptions,
                SubscriptionRecord(sub.id, sub.chain, sub.params, sub.scope, sub.method),
            ),
        )
        self._dirty.discard(conn)
        await self._write(state.token, record, LIVE_TTL)

    async def settle(self, conn: WebSocketConnection) -> None:
        """Write ``conn``'s record if it changed (before a call's answer leaves)."""
        if conn in self._dirty:
            self._dirty.discard(conn)
            await self._save(conn, LIVE_TTL)

    async def release(self, conn: WebSocketConnection) -> None:
        """``conn`` ended: keep its record (as it is now) for the resume window."""
        self._dirty.discard(conn)
        found = conn.slots.pop(_STATE)  # what ends its subscriptions next changes nothing
        if found is None or self._owners.get(found.token) is not conn:
            return
        del self._owners[found.token]
        await self._write(found.token, self._record(conn, found), self.window)

    async def serve_flusher(self) -> None:
        """Write the records that changed without a call (pruned by a session change, say)."""
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            await trio.sleep(_FLUSH_DELAY)
            dirty, self._dirty = self._dirty, set()
            for conn in dirty:
                await self._save(conn, LIVE_TTL)

    # -- after Redis lost its data -------------------------------------------------------------------

    async def restore_after_loss(self) -> Repair:
        """Write back the records of this process's open connections, and start the positions
        that are gone from their logs over at the logs' beginning (``0-0``): a cursor sent from
        now on names only entries that the logs hold again, while one sent before the loss names
        an entry gone, and its resume is told ``complete: false``."""
        repair = Repair()
        reset = 0
        for feed, position in self.positions.snapshot().items():
            if feed in self.family_logs or position == "0-0":
                continue  # in this process's memory: nothing was lost
            holds = (
                self.changes.holds(position)
                if feed == CHANGES and self.changes is not None
                else self.bus.holds(feed, position)
            )
            # No await between the check of the position and its reset: the reader may have
            # delivered an entry of the new log meanwhile, and that position stands.
            if not await holds and self.positions.get(feed) == position:
                self.positions.advance(feed, "0-0")
                reset += 1
        owners = list(self._owners.values())
        for conn in owners:
            await self._save(conn, LIVE_TTL)
        repair.repaired["resume records"] = len(owners)
        repair.repaired["log positions started over"] = reset
        repair.lost_uncounted.append(
            "the records of connections closed before the loss, and every cursor sent before "
            "it (their resumes say complete: false)"
        )
        return repair

    # -- resuming -----------------------------------------------------------------------------------

    async def resume(self, conn: WebSocketConnection, text: str) -> None:
        """Replay what ``conn``'s cursor ``text`` missed, attach its subscriptions, then send
        ``scopecast_resumed``; or, when the gap cannot be filled, say so at once."""
        try:
            replayed, complete = await self._resume(conn, text)
        except _Incomplete as exc:
            log.info("%r: cannot resume (%s); starting fresh", conn, exc)
            conn.send_message(resumed_message(0, False))
            return
        conn.send_message(resumed_message(replayed, complete))

    async def _resume(self, conn: WebSocketConnection, text: str) -> tuple[int, bool]:
        cursor = parse_cursor(text)
        if cursor is None:
            raise _Incomplete("malformed cursor")
        try:
            record = await self.store.load(cursor.token)
        except Exception as exc:
            raise _Incomplete(f"the resume store failed: {exc}") from exc
        if record is None:
            raise _Incomplete("unknown or expired cursor")
        if (record.api_key, record.origin) != (conn.context.api_key, conn.context.origin):
            raise _Incomplete("the cursor belongs to another dapp")
        if len(cursor.positions) > len(record.feeds):
            raise _Incomplete("the cursor names more logs than its connection followed")
        starts = {
            feed: cursor.positions[i] if i < len(cursor.positions) else record.since[i]
            for i, feed in enumerate(record.feeds)
        }
        state = ResumeState(self.positions, cursor.token, record.feeds, record.since)
        subs = self._parse_subscriptions(conn, record, state)
        state.pinned = dict(starts)
        batch = await self._read_round(state.pinned)
        if batch is None:
            raise _Incomplete("the logs no longer hold everything after the cursor")
        self._take_over(conn, state)
        replayed, complete = 0, False
        for _ in range(_MAX_ROUNDS):
            sent, subs = self._send_round(conn, state, record, subs, batch)
            replayed += sent
            # What this process delivered since the read, from memory: no await from here on, so
            # live delivery continues exactly from where the replay stops.
            tail = self._recent_round(state.pinned)
            if tail is not None:
                sent, subs = self._send_round(conn, state, record, subs, tail)
                replayed += sent
                complete = True
                break
            found = await self._read_round(state.pinned)
            if found is None:
                log.error("%r: the logs were trimmed during a resume; some entries are lost", conn)
                break
            batch = found
        else:
            log.error(
                "%r: a resume did not catch up with the live logs; some entries are lost", conn
            )
        state.pinned = None
        for sub in subs:
            self.hub.attach(sub)
        self.changed(conn)
        return replayed, complete

    def _parse_subscriptions(
        self, conn: WebSocketConnection, record: ResumeRecord, state: ResumeState
    ) -> list[Subscription]:
        subs: list[Subscription] = []
        for saved in record.subscriptions:
            if self.positions.get(saved.chain) is None:
                raise _Incomplete(f"this process does not serve {saved.chain}")
            try:
                params = msgspec.json.decode(saved.params)
                sub = self.hub.parse(
                    conn, saved.chain, saved.method, params, scope=saved.scope, sub_id=saved.id
                )
            except (RpcError, msgspec.DecodeError) as exc:
                raise _Incomplete(f"a saved subscription no longer parses: {exc}") from exc
            sub.resume = state
            subs.append(sub)
        return subs

    async def _read_round(self, pinned: dict[str, Position]) -> _Round | None:
        """Every feed's entries after its pinned position up to what this process delivered, read
        from the bus (None: a feed no longer holds them all)."""
        entries: list[tuple[str, Position, FeedEntry]] = []
        uptos: dict[str, Position] = {}
        for feed, after in pinned.items():
            upto = self.positions.get(feed)
            if upto is None or upto == after:
                continue
            found: list[tuple[Position, FeedEntry]] | None
            family_log = self.family_logs.get(feed)
            if family_log is not None:
                kept = family_log.read_range(after, upto)
                found = list(kept) if kept is not None else None
            elif feed == CHANGES:
                if self.changes is None:
                    continue
                changes = await self.changes.read_range(after, upto)
                found = list(changes) if changes is not None else None
            else:
                events = await self.bus.read_range(feed, after, upto)
                found = list(events) if events is not None else None
            if found is None:
                return None
            entries.extend((feed, position, entry) for position, entry in found)
            uptos[feed] = upto
        return _merged(entries, uptos)

    def _recent_round(self, pinned: dict[str, Position]) -> _Round | None:
        """The same from the entries this process holds in memory (None: it does not hold them
        all; another read is needed)."""
        entries: list[tuple[str, Position, FeedEntry]] = []
        uptos: dict[str, Position] = {}
        for feed, after in pinned.items():
            if feed == CHANGES and self.changes is None:
                continue  # no session service: nothing travels on that feed (as _read_round)
            found = self.positions.recent_after(feed, after)
            if found is None:
                return None
            entries.extend((feed, position, entry) for position, entry in found)
            if found:
                uptos[feed] = found[-1][0]
        return _merged(entries, uptos)

    def _send_round(
        self,
        conn: WebSocketConnection,
        state: ResumeState,
        record: ResumeRecord,
        subs: list[Subscription],
        batch: _Round,
    ) -> tuple[int, list[Subscription]]:
        """Send what ``subs`` (and the dapp's session) would have been sent for ``batch``; a
        session change ends the subscriptions of scopes it removed, from its place on."""
        assert state.pinned is not None
        entries, uptos = batch
        sent = 0
        for feed, position, entry in entries:
            state.pinned[feed] = position
            if isinstance(entry, SessionChange):
                if self.sessions is None:
                    continue
                messages, keep = self.sessions.replay_changes(
                    record.api_key, record.origin, [(position, entry)], record.owner
                )
                for _, message in messages:
                    conn.send_message(with_cursor(message, state.cursor()))
                    sent += 1
                if keep is not None:
                    subs = [
                        s for s in subs if s.scope is None or keep(s.scope, s.notification.decode())
                    ]
            else:
                for frame in self.hub.replay(subs, entry):
                    conn.send_frame(frame)
                    sent += 1
        state.pinned.update(uptos)
        return sent, subs

    def _take_over(self, conn: WebSocketConnection, state: ResumeState) -> None:
        old = self._owners.get(state.token)
        if old is not None and old is not conn:
            self.hub.drop_connection(old)
            old.close(CLOSE_RESUMED_ELSEWHERE, "resumed on another connection")
            self._dirty.discard(old)
            old.slots.pop(_STATE)
        self._owners[state.token] = conn
        conn.slots.set(_STATE, state)
