"""Sessions in Redis: one key per identity, holding :func:`~broker.sessions.encode_session` bytes.

Every web process sees the same sessions, and they outlive restarts. Each key expires with its
session (``PXAT`` = the session's expiry), so Redis forgets what callers would delete anyway.
:meth:`RedisSessionStore.modify` writes with a compare-and-set script: the write lands only if the key
still holds the bytes the change was computed from, else the change is computed again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, TypeVar

import msgspec

from broker.redis._client import DEFAULT_PREFIX, RedisClient
from broker.sessions import Identity, Session, SessionStore, decode_session, encode_session
from broker.sessions.store import Change, check_identity

T = TypeVar("T")

#: How many keys one SCAN step and one MGET cover when listing sessions.
LIST_BATCH: Final = 500
#: A change computed this many times without landing means something rewrites the session nonstop.
MODIFY_ATTEMPTS: Final = 100

# KEYS: session. ARGV: the bytes the change was computed from ('' = none), the new bytes
# ('' = delete), expiry (ms since the epoch). Returns 1 when written, 0 when the key holds other bytes.
_COMPARE_AND_SET = """
local current = redis.call('GET', KEYS[1])
if current == false then current = '' end
if current ~= ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('DEL', KEYS[1])
else redis.call('SET', KEYS[1], ARGV[2], 'PXAT', ARGV[3]) end
return 1
"""


class RedisSessionStore(SessionStore):
    """Sessions keyed ``<prefix>:session:["<api key>","<origin>"]``."""

    def __init__(self, client: RedisClient, *, prefix: str = DEFAULT_PREFIX) -> None:
        self.client = client
        self._prefix = f"{prefix}:session:"
        self._compare_and_set = client.register_script(_COMPARE_AND_SET)

    def key(self, identity: Identity) -> str:
        # JSON keeps any API key or origin unambiguous (both may contain ':') and readable.
        return self._prefix + msgspec.json.encode([identity.api_key, identity.origin]).decode()

    async def get(self, identity: Identity) -> Session | None:
        data = await self.client.get(self.key(identity))
        return None if data is None else decode_session(data)

    async def modify(self, identity: Identity, change: Change[T]) -> T:
        key = self.key(identity)
        for _ in range(MODIFY_ATTEMPTS):
            data = await self.client.get(key)
            new, result = change(None if data is None else decode_session(data))
            if new is not None:
                check_identity(new, identity)
            encoded = b"" if new is None else encode_session(new)
            if encoded == (data or b""):
                return result  # nothing to write
            expiry = 0 if new is None else _expiry_ms(new)
            written: object = await self._compare_and_set([key], [data or b"", encoded, expiry])
            if written == 1:
                return result
        raise RuntimeError(f"a session of {identity.origin} kept changing; gave up changing it")

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


def _expiry_ms(session: Session) -> int:
    return int(session.expiry.timestamp() * 1000)
