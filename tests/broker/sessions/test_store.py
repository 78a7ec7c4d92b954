"""The in-memory session store."""

from __future__ import annotations

import msgspec
import trio.testing

from broker.sessions import Identity, MemorySessionStore, SessionStore

from .helpers import DEV, make_session, scope


async def test_get_of_an_unknown_identity() -> None:
    assert await MemorySessionStore().get(DEV) is None


async def test_put_get_delete() -> None:
    store: SessionStore = MemorySessionStore()
    session = make_session()
    await store.put(session)
    assert await store.get(DEV) == session
    assert await store.delete(DEV)
    assert await store.get(DEV) is None
    assert not await store.delete(DEV)


async def test_put_replaces() -> None:
    store = MemorySessionStore()
    await store.put(make_session())
    newer = make_session({"eip155:5": scope()})
    await store.put(newer)
    assert await store.get(DEV) == newer
    assert await store.list_sessions() == [newer]


async def test_identities_differ_by_origin() -> None:
    store = MemorySessionStore()
    session = make_session()
    other = msgspec.structs.replace(session, identity=Identity.of(DEV.api_key, None))
    await store.put(session)
    await store.put(other)
    assert await store.get(Identity.of("dev", None)) == other
    assert await store.get(DEV) == session
    assert sorted(s.identity.origin for s in await store.list_sessions()) == [
        "-",
        "https://dapp.example",
    ]


async def test_returned_sessions_are_copies() -> None:
    store = MemorySessionStore()
    await store.put(make_session())
    first = await store.get(DEV)
    assert first is not None
    first.scopes.clear()  # type: ignore[attr-defined]
    assert await store.get(DEV) == make_session()


async def test_every_operation_is_a_checkpoint() -> None:
    store = MemorySessionStore()
    with trio.testing.assert_checkpoints():
        await store.put(make_session())
    with trio.testing.assert_checkpoints():
        await store.get(DEV)
    with trio.testing.assert_checkpoints():
        await store.list_sessions()
    with trio.testing.assert_checkpoints():
        await store.delete(DEV)
