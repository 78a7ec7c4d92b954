"""Sessions in Redis: one key per identity, holding :func:`~broker.sessions.encode_session` bytes.

Every web process sees the same sessions, and they outlive restarts. Each key expires with its
session (``PXAT`` = the session's expiry), so Redis forgets what callers would delete anyway.
:meth:`RedisSessionStore.modify` writes with a compare-and-set script: the write lands only if the key
still holds the bytes the change was computed from, else the change is computed again.

Data loss (see :mod:`broker.redis._epoch`): the store tells its observer the bytes of every session
it reads or writes (the session service keeps those of the dapps connected here, to write them back
after a loss: :meth:`RedisSessionStore.restore`); a read that finds nothing where the observer
remembers a session checks the epoch (or waits for the repair under way) and reads again, so that
a dapp asking in the second after a loss gets its session, not ``{}``. Where the primary has a
replica, a write waits for it (``WAIT 1``) so that a failover does not undo it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Final, TypeVar

import msgspec
from coredis import PureToken
from coredis.exceptions import ReplicationError

from broker.redis._client import DEFAULT_PREFIX, RedisClient
from broker.redis._epoch import EpochWatch
from broker.sessions import Identity, Session, SessionStore, decode_session, encode_session
from broker.sessions.store import Change, check_identity

T = TypeVar("T")

log = logging.getLogger(__name__)

#: How long a session write waits for a replica to have it (``WAIT 1``) before it goes on
#: without (the write stands on the primary; a failover within this time may undo it).
REPLICA_WAIT_MS: Final = 200

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

    def __init__(
        self,
        client: RedisClient,
        *,
        prefix: str = DEFAULT_PREFIX,
        epoch: EpochWatch | None = None,
    ) -> None:
        """``epoch``: checked when a read finds a session gone that the observer remembers, and
        whose replica count decides whether writes wait for a replica (None: neither)."""
        self.client = client
        self.epoch = epoch
        self._prefix = f"{prefix}:session:"
        self._compare_and_set = client.register_script(_COMPARE_AND_SET)
        self._observer: Callable[[Identity, bytes | None], None] | None = None
        self._recall: Callable[[Identity], bytes | None] | None = None
        self._slow_replica_said = False

    def observe(
        self,
        observer: Callable[[Identity, bytes | None], None],
        recall: Callable[[Identity], bytes | None],
    ) -> None:
        """Tell ``observer`` the bytes of every session read or written (None: none stored);
        ``recall(identity)``: the bytes it keeps of a session (None: none)."""
        self._observer = observer
        self._recall = recall

    async def _read(self, identity: Identity, key: str) -> bytes | None:
        data = await self.client.get(key)
        if (
            data is None
            and self.epoch is not None
            and self._recall is not None
            and self._recall(identity) is not None
        ):
            # Read again whatever the check says: False may mean that it waited for another
            # caller's repair (the periodic check's, right after a restart), which wrote it back.
            await self.epoch.check()
            data = await self.client.get(key)
        if self._observer is not None:
            self._observer(identity, data)
        return data

    async def restore(self, session: Session, data: bytes) -> bool:
        # NX: another process may have restored it first, or the dapp made a new one meanwhile.
        return bool(
            await self.client.set(
                self.key(session.identity), data, condition=PureToken.NX, pxat=_expiry_ms(session)
            )
        )

    def key(self, identity: Identity) -> str:
        # JSON keeps any API key or origin unambiguous (both may contain ':') and readable.
        return self._prefix + msgspec.json.encode([identity.api_key, identity.origin]).decode()

    async def get(self, identity: Identity) -> Session | None:
        data = await self._read(identity, self.key(identity))
        return None if data is None else decode_session(data)

    async def modify(self, identity: Identity, change: Change[T]) -> T:
        key = self.key(identity)
        for _ in range(MODIFY_ATTEMPTS):
            data = await self._read(identity, key)
            new, result = change(None if data is None else decode_session(data))
            if new is not None:
                check_identity(new, identity)
            encoded = b"" if new is None else encode_session(new)
            if encoded == (data or b""):
                return result  # nothing to write
            expiry = 0 if new is None else _expiry_ms(new)
            if await self._write(key, data or b"", encoded, expiry):
                if self._observer is not None:
                    self._observer(identity, encoded or None)
                return result
        raise RuntimeError(f"a session of {identity.origin} kept changing; gave up changing it")

    async def _write(self, key: str, expected: bytes, encoded: bytes, expiry: int) -> bool:
        """The compare-and-set; with a replica, waiting for it to have the write."""
        arguments: list[bytes | int] = [expected, encoded, expiry]
        if self.epoch is None or not self.epoch.replicas:
            return bool(await self._compare_and_set([key], arguments) == 1)
        try:
            # WAIT must follow the write on its own connection: coredis sends it right after.
            with self.client.ensure_replication(1, REPLICA_WAIT_MS):
                return bool(await self._compare_and_set([key], arguments) == 1)
        except ReplicationError:
            if not self._slow_replica_said:
                log.warning(
                    "a session write was not on a replica within %d ms: a failover now could "
                    "undo it (said once)",
                    REPLICA_WAIT_MS,
                )
                self._slow_replica_said = True
            # The script's own answer went with the error: whether the key holds our bytes says it.
            return await self.client.get(key) == (encoded or None)

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
