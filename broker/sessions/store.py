"""Where sessions live between requests: one per identity.

:class:`SessionStore` is the interface; :class:`MemorySessionStore` is the single-process backend.
Backends keep the bytes of :func:`~broker.sessions.model.encode_session`, so every backend stores
exactly what a Redis one would. A store does not look at expiry: callers check it with
:func:`~broker.sessions.model.is_expired` and delete what is over. A change that depends on the
current session goes through :meth:`SessionStore.modify`, so that two processes changing one session
at once do not lose either change.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TypeVar

import trio

from broker.sessions.model import Identity, Session, decode_session, encode_session

T = TypeVar("T")

#: What :meth:`SessionStore.modify` makes of the current session: the new one (None: delete it),
#: and a result for the caller.
Change = Callable[[Session | None], tuple[Session | None, T]]


class SessionStore(ABC):
    """Sessions by identity."""

    @abstractmethod
    async def get(self, identity: Identity) -> Session | None:
        """The session of ``identity``, or None."""

    @abstractmethod
    async def list_sessions(self) -> Sequence[Session]:
        """Every stored session (for the operator's admin API), in no particular order."""

    @abstractmethod
    async def modify(self, identity: Identity, change: Change[T]) -> T:
        """Replace the session of ``identity`` with what ``change`` makes of it, atomically.

        ``change(current)`` returns the new session (None deletes it) and the result to return. No
        other write to the session comes between the read and the write: when one does, ``change``
        is called again with the newer session, so it must have no side effects. An exception it
        raises propagates and nothing is written.
        """

    async def put(self, session: Session) -> None:
        """Store ``session`` under its identity, replacing any earlier one (a :meth:`modify`)."""
        await self.modify(session.identity, lambda current: (session, None))

    async def delete(self, identity: Identity) -> bool:
        """Forget the session of ``identity``; whether there was one (a :meth:`modify`)."""
        return await self.modify(identity, lambda current: (None, current is not None))

    def observe(
        self,
        observer: Callable[[Identity, bytes | None], None],
        recall: Callable[[Identity], bytes | None],
    ) -> None:
        """Tell ``observer`` the stored bytes of every session read or written (None: none);
        ``recall``: what the observer kept of one. Only a store that can lose its data (Redis)
        uses them; this one ignores them."""
        del observer, recall

    async def restore(self, session: Session, data: bytes) -> bool:
        """Write back ``session`` (stored as ``data``) lost with the store's data, unless one is
        stored meanwhile; whether it was written."""

        def put_back(current: Session | None) -> tuple[Session | None, bool]:
            return (current, False) if current is not None else (session, True)

        return await self.modify(session.identity, put_back)


class MemorySessionStore(SessionStore):
    """Sessions in a dict of this process: the backend when no Redis is configured."""

    def __init__(self) -> None:
        self._sessions: dict[Identity, bytes] = {}

    async def get(self, identity: Identity) -> Session | None:
        await trio.lowlevel.checkpoint()
        data = self._sessions.get(identity)
        return None if data is None else decode_session(data)

    async def list_sessions(self) -> Sequence[Session]:
        await trio.lowlevel.checkpoint()
        return [decode_session(data) for data in self._sessions.values()]

    async def modify(self, identity: Identity, change: Change[T]) -> T:
        await trio.lowlevel.checkpoint()
        data = self._sessions.get(identity)
        new, result = change(None if data is None else decode_session(data))
        # No checkpoint between the read and the write: no other task comes in between.
        if new is None:
            self._sessions.pop(identity, None)
        else:
            check_identity(new, identity)
            self._sessions[identity] = encode_session(new)
        return result


def check_identity(session: Session, identity: Identity) -> None:
    """A change must keep the session under its identity."""
    if session.identity != identity:
        raise ValueError("a session change may not move the session to another identity")
