"""Resume cursors (sans-io): what a notification's ``cursor`` member says, and how it is read back.

A cursor is ``<token>.<position>[.<position>...]``: the connection's resume token (24 hex digits),
then one position per log the connection follows, in the order it began following them (the
session changes first). Positions are opaque strings of the bus (Redis stream ids, or a memory
log's ``m<epoch>-<n>``).
"""

from __future__ import annotations

import itertools
import re
import secrets
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from broker.events.chain_events import HubEvent
from broker.events.session_changes import SessionChange

FeedEntry = HubEvent | SessionChange
"""What a feed delivers: a chain's event, or a session change (on :data:`CHANGES`)."""

CHANGES: Final = "changes"
"""The feed name of the session changes log (chain feeds are named by their CAIP-2 id)."""

MAX_FEEDS: Final = 32
#: Distinct lists of feeds shared as one tuple each (:meth:`FeedPositions.key`).
MAX_FEED_KEYS: Final = 4096
#: Entries a process keeps of what it delivered last on each log (see :class:`FeedPositions`),
#: at most, and for at most :data:`RECENT_SECONDS`.
RECENT_ENTRIES: Final = 1024
#: How long a delivered entry is kept for a resume's last stretch. A resume needs what came since
#: its last read of the log, a few milliseconds ago; an older gap costs it one more read. With
#: no time bound the 1,024 entries of a chain held up to 17 minutes of whole blocks at one block
#: a second: the soak's web processes grew 40 KB a second until the deques were full.
RECENT_SECONDS: Final = 30.0
#: A resume token's length (hex digits): every connection's cursor starts the same length.
TOKEN_LENGTH: Final = 24
_TOKEN: Final = re.compile(r"\A[0-9a-f]{24}\Z")
_POSITION: Final = re.compile(r"\A(?:m[0-9a-f]{1,16}-[0-9]{1,20}|[0-9]{1,20}-[0-9]{1,20})\Z")


def new_token() -> str:
    return secrets.token_hex(TOKEN_LENGTH // 2)


@dataclass(frozen=True, slots=True)
class Cursor:
    token: str
    positions: tuple[str, ...]


def format_cursor(token: str, positions: Sequence[str]) -> str:
    return ".".join((token, *positions))


def parse_cursor(text: str) -> Cursor | None:
    """The cursor ``text`` spells, or None when it is malformed."""
    if len(text) > 2048:
        return None
    token, *positions = text.split(".")
    if not _TOKEN.match(token) or not positions or len(positions) > MAX_FEEDS:
        return None
    if not all(_POSITION.match(p) for p in positions):
        return None
    return Cursor(token, tuple(positions))


class FeedPositions:
    """The position this process delivered last on each log (feed), the entries it delivered most
    recently on each, and a version that changes with every advance, so cursors built from it are
    rebuilt only when stale.

    The recent entries let a resume fill the last stretch of its gap without awaiting a read, so
    live delivery takes over exactly where the replay stops however fast entries arrive."""

    __slots__ = (
        "_clock",
        "_joined",
        "_joined_version",
        "_keys",
        "_positions",
        "_recent",
        "recent_limit",
        "recent_seconds",
        "version",
    )

    def __init__(
        self,
        *,
        recent: int = RECENT_ENTRIES,
        recent_seconds: float = RECENT_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._positions: dict[str, str] = {}
        # each feed's recent entries: (position, entry, when it was delivered)
        self._recent: dict[str, deque[tuple[str, FeedEntry, float]]] = {}
        self.recent_limit = recent
        self.recent_seconds = recent_seconds
        self._clock = clock
        self.version = 0
        self._joined: dict[tuple[str, ...], bytes] = {}
        self._joined_version = 0
        self._keys: dict[tuple[str, ...], tuple[str, ...]] = {}

    def advance(self, feed: str, position: str, entry: FeedEntry | None = None) -> None:
        """``entry`` was delivered at ``position`` on ``feed`` (None: only the position is known,
        as when a reader starts)."""
        self._positions[feed] = position
        # Stales every cursor joined() built before: a frame written after this advance must name
        # the new position, or a resume from it would replay this entry a second time.
        self.version += 1
        recent = self._recent.get(feed)
        if recent is None:
            recent = self._recent[feed] = deque(maxlen=self.recent_limit)
        if entry is None:
            recent.clear()  # what came before is not known to follow on from it
        else:
            now = self._clock()
            recent.append((position, entry, now))
            oldest = now - self.recent_seconds
            while recent[0][2] < oldest:
                recent.popleft()

    def get(self, feed: str) -> str | None:
        return self._positions.get(feed)

    def snapshot(self) -> dict[str, str]:
        return dict(self._positions)

    def key(self, feeds: Sequence[str]) -> tuple[str, ...]:
        """``feeds`` as one tuple shared by every connection that follows the same feeds (so the
        fan-out tells them apart by identity), up to :data:`MAX_FEED_KEYS` distinct ones."""
        key = tuple(feeds)
        found = self._keys.get(key)
        if found is None:
            if len(self._keys) >= MAX_FEED_KEYS:
                return key
            found = self._keys[key] = key
        return found

    def joined(self, feeds: tuple[str, ...]) -> bytes | None:
        """The positions of ``feeds`` as a cursor spells them (``a.b.c``), built once per advance
        for every connection that follows the same feeds (None: a feed has no position yet)."""
        if self._joined_version != self.version:
            self._joined.clear()
            self._joined_version = self.version
        found = self._joined.get(feeds)
        if found is None:
            try:
                found = ".".join([self._positions[feed] for feed in feeds]).encode()
            except KeyError:
                return None
            self._joined[feeds] = found
        return found

    def recent_after(self, feed: str, position: str) -> list[tuple[str, FeedEntry]] | None:
        """The entries delivered on ``feed`` after ``position``, oldest first, when this process
        still holds them all (None: it does not)."""
        if self._positions.get(feed) == position:
            return []
        recent = self._recent.get(feed)
        if not recent:
            return None
        found = [i for i, (p, _, _) in enumerate(recent) if p == position]
        if not found:
            return None
        return [(p, entry) for p, entry, _ in itertools.islice(recent, found[-1] + 1, None)]


def position_order(position: str) -> tuple[int, int]:
    """Where ``position`` falls in time, comparable across the logs of one bus: Redis stream ids
    (``<ms>-<seq>``, from the one server's clock) or memory positions (``m<epoch>-<n>``, numbered
    by one counter per process)."""
    head, _, tail = position.rpartition("-")
    if head.startswith("m"):
        return (int(tail), 0)
    return (int(head), int(tail))


class ResumeState:
    """One connection's resume token and the feeds it follows; builds its current cursor.

    While a resume replays missed entries, ``pinned`` holds the replay's positions (they win over
    the live ones, which are ahead)."""

    __slots__ = ("_live", "feeds", "feeds_key", "pinned", "prefix", "since", "token")

    def __init__(
        self,
        live: FeedPositions,
        token: str,
        feeds: Sequence[str] = (),
        since: Sequence[str] = (),
    ) -> None:
        if len(token) != TOKEN_LENGTH:  # the fan-out sizes frames by it
            raise ValueError(f"a resume token is {TOKEN_LENGTH} hex digits, not {token!r}")
        self._live = live
        self.token = token
        #: ``<token>.``: what the cursor starts with.
        self.prefix = f"{token}.".encode()
        # Tuples, replaced as feeds are followed (rarely): the feeds are :attr:`feeds_key`
        # itself, one tuple shared by every connection that follows the same feeds, and neither
        # is a container the garbage collector tracks (lists were two per connection).
        self.feeds: tuple[str, ...] = live.key(feeds)
        self.feeds_key = self.feeds
        self.since: tuple[str, ...] = tuple(since)
        self.pinned: dict[str, str] | None = None

    def follow(self, feed: str) -> bool:
        """Start following ``feed`` (from the live position); False when already followed."""
        if feed in self.feeds:
            return False
        self.feeds = self.feeds_key = self._live.key((*self.feeds, feed))
        self.since = (*self.since, self._live.get(feed) or "0-0")
        return True

    def shared_positions(self) -> bytes | None:
        """The cursor's positions when they are those of every connection that follows the same
        feeds (:attr:`feeds_key`): None while a replay pins them, or a feed has no position."""
        return None if self.pinned is not None else self._live.joined(self.feeds_key)

    def positions(self) -> bytes:
        """The cursor's positions (after :attr:`prefix`): shared with every connection that
        follows the same feeds, unless a replay pins them."""
        found = self.shared_positions()
        if found is not None:
            return found
        pinned = self.pinned or {}
        return ".".join(
            pinned.get(feed) or self._live.get(feed) or self.since[i]
            for i, feed in enumerate(self.feeds)
        ).encode()

    def cursor(self) -> bytes:
        """The cursor as of what this process has delivered (or the replay has, while pinned)."""
        return self.prefix + self.positions()


def with_cursor(message: bytes, cursor: bytes) -> bytes:
    """A notification (whose ``params`` is an object) with ``"cursor"`` added to its params."""
    return message[:-2] + b',"cursor":"' + cursor + b'"}}'
