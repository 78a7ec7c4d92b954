"""Sessions in Redis: one key per identity, holding :func:`~broker.sessions.encode_session` bytes.

Every web process sees the same sessions, and they outlive restarts. Each key expires with its
session (``PXAT`` = the session's expiry), so Redis forgets what callers would delete anyway.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import msgspec

from broker.redis_bus import DEFAULT_PREFIX, RedisClient
from broker.sessions import Identity, Session, SessionStore, decode_session, encode_session

#: How many keys one SCAN step and one MGET cover when listing sessions.
LIST_BATCH: Final = 500


class RedisSessionStore(SessionStore):
    """Sessions keyed ``<prefix>:session:["<api key>","<origin>"]``."""

    def __init__(self, client: RedisClient, *, prefix: str = DEFAULT_PREFIX) -> None:
        self.client = client
        self._prefix = f"{prefix}:session:"

    def key(self, identity: Identity) -> str:
        # JSON keeps any API key or origin unambiguous (both may contain ':') and readable.
        return self._prefix + msgspec.json.encode([identity.api_key, identity.origin]).decode()

    async def get(self, identity: Identity) -> Session | None:
        data = await self.client.get(self.key(identity))
        return None if data is None else decode_session(data)

    async def put(self, session: Session) -> None:
        expiry_ms = int(session.expiry.timestamp() * 1000)
        await self.client.set(self.key(session.identity), encode_session(session), pxat=expiry_ms)

    async def delete(self, identity: Identity) -> bool:
        return await self.client.delete([self.key(identity)]) > 0

    async def list_sessions(self) -> Sequence[Session]:
        sessions: list[Session] = []
        batch: list[bytes] = []
        async for key in self.client.scan_iter(match=self._prefix + "*", count=LIST_BATCH):
            batch.append(key)
            if len(batch) == LIST_BATCH:
                sessions.extend(await self._load(batch))
                batch = []
        sessions.extend(await self._load(batch))
        return sessions

    async def _load(self, keys: list[bytes]) -> list[Session]:
        if not keys:
            return []
        # A key may expire between SCAN and MGET: skip what is gone.
        return [decode_session(data) for data in await self.client.mget(keys) if data is not None]
