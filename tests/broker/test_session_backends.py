"""One session behaviour, two backends: a real broker with its sessions in memory, and the same
broker with ``--redis-url`` (sessions in a real redis-server, changes on its stream). Two dapp
connections of one identity share the session; operator updates, partial and full revocation and
expiry reach the other connection; ``scopecast_sessions`` is current at every step and counts only
the dapps connected here. And a Redis failure: the expiry checks it fails log one traceback, then a
line each, and one identity's failure does not keep another's session from expiring."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager
from datetime import timedelta
from typing import Any

import httpx
import pytest
import trio
import trio.testing

from broker.compose import ServeOptions
from broker.config import Config
from broker.redis import RedisSessionStore
from broker.sessions import Identity
from tests.redis.collect import Collector
from tests.support.inprocess import Dapp, RunningBroker, dapp, running_broker
from tests.support.redis_server import redis_command, redis_server

DEV = "eip155:1337"
SECOND = "eip155:1338"
ORIGIN = "https://dapp.example"
OTHER_ORIGIN = "https://other.example"
SCOPE = {"methods": ["eth_blockNumber", "eth_subscribe"], "notifications": ["eth_subscription"]}
TWO_CHAINS = Config(
    networks={
        "dev": {"chain": DEV, "adapter": "devchain", "default": True},
        "second": {"chain": SECOND, "adapter": "devchain"},
    }
)
#: Longer than any test: the periodic expiry check never runs unless a test shortens it.
NEVER = 3600.0


@pytest.fixture(params=["memory", "redis"])
def backend(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """The Redis URL of the backend (None: in memory)."""
    if request.param == "memory":
        yield None
    else:
        with redis_server() as server:  # a server per test: the broker uses the default prefix
            yield server.url


def serving(
    backend: str | None,
    *,
    expiry_check: float = NEVER,
    clock: trio.testing.MockClock | None = None,
) -> AbstractAsyncContextManager[RunningBroker]:
    """A broker of the two dev chains on ``backend``; with ``clock``, its sessions expire on
    trio's clock, which runs at real speed (Redis is a process of its own) and jumps when the
    test says."""
    return running_broker(
        ServeOptions(block_time=0, redis_url=backend),
        config=TWO_CHAINS,
        expiry_check=expiry_check,
        clock=clock,
        autojump=False,
    )


#: How long a session that is to expire during the test lives, until the test jumps the clock.
LIFETIME = 5.0


def expiring(node: RunningBroker) -> str:
    """The ``sessionProperties.expiry`` of a session that is to expire during the test: when the
    test jumps the clock :data:`LIFETIME` on.

    Granted in whole seconds, so at least 4 s from now: ample for ``wallet_createSession`` to
    finish (else it fails with 5302), even on a loaded machine.
    """
    return (node.now() + timedelta(seconds=LIFETIME)).isoformat()


async def sessions_gauge(node: RunningBroker) -> float:
    async with httpx.AsyncClient() as client:
        text = (await client.get(f"{node.base}/metrics")).text
    found = re.search(r"^scopecast_sessions (\S+)$", text, re.MULTILINE)
    assert found is not None, text
    return float(found.group(1))


async def session_changed(conn: Dapp) -> dict[str, Any]:
    """The scopes of the next notification, which must be ``wallet_sessionChanged``."""
    told = await conn.notification()
    assert told["method"] == "wallet_sessionChanged", told
    scopes: dict[str, Any] = told["params"]["sessionScopes"]
    return scopes


async def test_a_session_is_shared_updated_and_revoked(backend: str | None) -> None:
    with trio.fail_after(60):
        async with (
            serving(backend) as node,
            dapp(node.ws_url(), origin=ORIGIN) as a,
            dapp(node.ws_url(), origin=ORIGIN) as b,
        ):
            assert await sessions_gauge(node) == 0
            created = await a.result(
                "wallet_createSession", {"optionalScopes": {DEV: SCOPE, SECOND: SCOPE}}
            )
            scopes = created["sessionScopes"]
            assert set(scopes) == {DEV, SECOND}
            assert await session_changed(b) == scopes  # the other connection hears of it
            assert (await b.result("wallet_getSession", {}))["sessionScopes"] == scopes
            assert await sessions_gauge(node) == 1

            narrowed = {
                DEV: {"methods": ["eth_blockNumber"], "notifications": []},
                SECOND: {"methods": ["eth_blockNumber"], "notifications": []},
            }
            reply = await node.admin(
                "admin_updateSession",
                {"apiKey": "dev", "origin": ORIGIN, "sessionScopes": narrowed},
            )
            assert "error" not in reply, reply
            for conn in (a, b):  # the operator's change reaches every connection
                changed = await session_changed(conn)
                assert {chain: s["methods"] for chain, s in changed.items()} == {
                    DEV: ["eth_blockNumber"],
                    SECOND: ["eth_blockNumber"],
                }
            assert (await a.result("wallet_getSession", {}))["sessionScopes"] == changed

            assert await a.result("wallet_revokeSession", {"scopes": [SECOND]}) is True
            assert set(await session_changed(b)) == {DEV}
            assert set((await b.result("wallet_getSession", {}))["sessionScopes"]) == {DEV}
            assert await sessions_gauge(node) == 1

            assert await b.result("wallet_revokeSession", {}) is True
            # a's next notification is this one: it was not told of its own partial revocation.
            assert await session_changed(a) == {}
            assert (await a.result("wallet_getSession", {}))["sessionScopes"] == {}
            assert await sessions_gauge(node) == 0
            assert (await node.admin("admin_listSessions", {}))["result"] == []
            assert a.notifications == b.notifications == []


async def test_operator_update_of_a_missing_session_is_refused(backend: str | None) -> None:
    with trio.fail_after(60):
        async with serving(backend) as node:
            reply = await node.admin(
                "admin_updateSession", {"apiKey": "dev", "origin": ORIGIN, "sessionScopes": {}}
            )
            assert reply["error"]["code"] == -32602


async def test_only_the_sessions_of_dapps_connected_here_are_tracked(backend: str | None) -> None:
    # With Redis every process hears every change: each tracks (and ends at expiry) only the
    # sessions of its own dapps, which scopecast_sessions counts.
    with trio.fail_after(60):
        async with (
            serving(backend) as node,
            dapp(node.ws_url(), origin=ORIGIN) as a,
            dapp(node.ws_url(), origin=ORIGIN) as b,
        ):
            async with httpx.AsyncClient() as client:  # a dapp with no connection here
                reply = await client.post(
                    node.http_url(),
                    json={
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "wallet_createSession",
                        "params": {"optionalScopes": {DEV: SCOPE}},
                    },
                    headers={"Origin": OTHER_ORIGIN},
                )
            assert "error" not in reply.json(), reply.json()
            created = await a.result("wallet_createSession", {"optionalScopes": {DEV: SCOPE}})
            # Changes are heard in order: b hearing of a's change means the other was heard too.
            assert await session_changed(b) == created["sessionScopes"]
            assert await sessions_gauge(node) == 1
            assert len((await node.admin("admin_listSessions", {}))["result"]) == 2


async def test_expiry_ends_the_session_on_every_connection(
    backend: str | None, mock_clock: trio.testing.MockClock
) -> None:
    with trio.fail_after(60):
        async with (
            serving(backend, expiry_check=0.1, clock=mock_clock) as node,
            dapp(node.ws_url(), origin=ORIGIN) as a,
            dapp(node.ws_url(), origin=ORIGIN) as b,
        ):
            created = await a.result(
                "wallet_createSession",
                {
                    "optionalScopes": {DEV: SCOPE},
                    "sessionProperties": {"expiry": expiring(node)},
                },
            )
            assert await session_changed(b) == created["sessionScopes"]
            mock_clock.jump(LIFETIME)  # past the expiry: the next check ends the session
            assert await session_changed(a) == {}
            assert await session_changed(b) == {}
            assert (await b.result("wallet_getSession", {}))["sessionScopes"] == {}
            assert await sessions_gauge(node) == 0
            assert (await node.admin("admin_listSessions", {}))["result"] == []


class Records(logging.Handler):
    """The records of a logger, to wait on (logging happens in the test's trio thread)."""

    def __init__(self) -> None:
        super().__init__()
        self.collected: Collector[logging.LogRecord] = Collector()

    def emit(self, record: logging.LogRecord) -> None:
        self.collected(record)

    async def wait_for(self, text: str, count: int = 1) -> list[logging.LogRecord]:
        def matching() -> list[logging.LogRecord]:
            return [r for r in self.collected.items if text in r.getMessage()]

        await self.collected.wait_until(lambda _: len(matching()) >= count)
        return matching()


async def test_a_failing_session_store_logs_one_traceback_then_a_line_per_check(
    mock_clock: trio.testing.MockClock,
) -> None:
    logger = logging.getLogger("broker.sessions.service")
    records = Records()
    logger.addHandler(records)
    try:
        with redis_server() as redis, trio.fail_after(60):
            serve = serving(redis.url, expiry_check=0.05, clock=mock_clock)
            async with serve as node:
                assert node.broker.sessions is not None
                store = node.broker.sessions.store
                assert isinstance(store, RedisSessionStore)
                # Redis answers every lookup of this identity's session with an error (WRONGTYPE),
                # as a store outage would, but without stopping (coredis leaks a little on every
                # connection Redis refuses, which the warnings filter would report).
                key = store.key(Identity.of("dev", ORIGIN))
                assert await redis_command(redis.port, "LPUSH", key, "x") == b":1\r\n"
                async with (
                    dapp(node.ws_url(), origin=OTHER_ORIGIN) as other,
                    dapp(node.ws_url(), origin=ORIGIN) as a,
                ):
                    # A new identity connects: every check tries to look its session up, and
                    # fails; yet another identity's session expires and its end is announced.
                    await other.result(
                        "wallet_createSession",
                        {
                            "optionalScopes": {DEV: SCOPE},
                            "sessionProperties": {"expiry": expiring(node)},
                        },
                    )
                    mock_clock.jump(LIFETIME)  # past the expiry
                    failed = await records.wait_for("session expiry check failed", count=4)
                    assert await session_changed(other) == {}
                    assert (await other.result("wallet_getSession", {}))["sessionScopes"] == {}
                    assert await store.get(Identity.of("dev", OTHER_ORIGIN)) is None
                    assert await redis_command(redis.port, "DEL", key) == b":1\r\n"
                    await records.wait_for("session expiry checks work again")
                    assert (await a.result("wallet_getSession", {}))["sessionScopes"] == {}
    finally:
        logger.removeHandler(records)
    assert failed[0].exc_info  # the whole story once
    for record in failed[1:4]:
        assert not record.exc_info
        assert record.levelno == logging.WARNING
        message = record.getMessage()
        assert "\n" not in message
        assert "(WrongTypeError: Operation against a key holding the wrong kind" in message


SOLANA = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"
WITH_SOLANA = Config(
    networks={
        "dev": {"chain": DEV, "adapter": "devchain", "default": True},
        "solana": {
            "chain": SOLANA,
            "adapter": "solana-dev",
            "genesis_hash": "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d",
        },
    }
)


async def accounts_changed(conn: Dapp) -> list[str]:
    """The accounts of the next notification, which must be ``metamask_accountsChanged``."""
    told = await conn.notification()
    assert told["method"] == "wallet_notify", told
    assert told["params"]["scope"] == SOLANA
    assert told["params"]["notification"]["method"] == "metamask_accountsChanged"
    accounts: list[str] = told["params"]["notification"]["params"]
    return accounts


async def test_metamask_accounts_changed_follows_the_operator_and_expiry(
    backend: str | None, mock_clock: trio.testing.MockClock
) -> None:
    """``metamask_accountsChanged`` travels with the change (on the Redis stream too), for
    changes no connection asked for: the operator's revoke, and the session's expiry."""
    with trio.fail_after(60):
        async with (
            running_broker(
                ServeOptions(block_time=0, redis_url=backend),
                config=WITH_SOLANA,
                expiry_check=0.1,
                clock=mock_clock,
                autojump=False,
            ) as node,
            dapp(node.ws_url() + "?client=metamask", origin=ORIGIN) as a,
            dapp(node.ws_url(), origin=ORIGIN) as b,
        ):
            params = {
                "optionalScopes": {SOLANA: {"methods": [], "notifications": []}},
                "sessionProperties": {"solana_accountChanged_notifications": True},
            }
            created = await a.result("wallet_createSession", params)
            account = created["sessionScopes"][SOLANA]["accounts"][0].rsplit(":", 1)[1]
            assert await accounts_changed(a) == [account]
            assert set(await session_changed(b)) == {SOLANA}
            assert await accounts_changed(b) == [account]

            revoked = await node.admin("admin_revokeSession", {"apiKey": "dev", "origin": ORIGIN})
            assert "error" not in revoked, revoked
            for conn in (a, b):
                assert await session_changed(conn) == {}
                assert await accounts_changed(conn) == []

            await a.result(
                "wallet_createSession",
                {
                    **params,
                    "sessionProperties": {**params["sessionProperties"], "expiry": expiring(node)},
                },
            )
            assert await accounts_changed(a) == [account]
            assert set(await session_changed(b)) == {SOLANA}
            assert await accounts_changed(b) == [account]
            mock_clock.jump(LIFETIME)  # past the expiry: the next check ends the session
            for conn in (a, b):
                assert await session_changed(conn) == {}
                assert await accounts_changed(conn) == []
