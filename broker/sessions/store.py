"""Where sessions live between requests: one per identity.

:class:`SessionStore` is the interface; :class:`MemorySessionStore` is the single-process backend.
Backends keep the bytes of :func:`~broker.sessions.model.encode_session`, so every backend stores
exactly what a Redis one would. A store does not look at expiry: callers check it with
:func:`~broker.sessions.model.is_expired` and delete what is over.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import trio

from broker.sessions.model import Identity, Session, decode_session, encode_session


class SessionStore(ABC):
    """Sessions by identity."""

    @abstractmethod
    async def get(self, identity: Identity) -> Session | None:
        """The session of ``identity``, or None."""

    @abstractmethod
    async def put(self, session: Session) -> None:
        """Store ``session`` under its identity, replacing any earlier one."""

    @abstractmethod
    async def delete(self, identity: Identity) -> bool:
        """Forget the session of ``identity``; whether there was one."""

    @abstractmethod
    async def list_sessions(self) -> Sequence[Session]:
        """Every stored session (for the operator's admin API), in no particular order."""


class MemorySessionStore(SessionStore):
    """Sessions in a dict of this process: the backend when no Redis is configured."""

    def __init__(self) -> None:
        self._sessions: dict[Identity, bytes] = {}

    async def get(self, identity: Identity) -> Session | None:
        await trio.lowlevel.checkpoint()
        data = self._sessions.get(identity)
        return None if data is None else decode_session(data)

    async def put(self, session: Session) -> None:
        await trio.lowlevel.checkpoint()
        self._sessions[session.identity] = encode_session(session)

    async def delete(self, identity: Identity) -> bool:
        await trio.lowlevel.checkpoint()
        return self._sessions.pop(identity, None) is not None

    async def list_sessions(self) -> Sequence[Session]:
        await trio.lowlevel.checkpoint()
        return [decode_session(data) for data in self._sessions.values()]
