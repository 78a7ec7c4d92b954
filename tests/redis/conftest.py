"""Fixtures of the Redis tests: one throwaway redis-server for the session, a fresh key prefix per
test (so tests never see each other's keys), and an entered coredis client."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
import trio

from broker.redis import RedisClient, redis_client, wait_for_redis
from tests.support.redis_server import RedisServer, redis_server


@pytest.fixture(scope="session")
def redis() -> Iterator[RedisServer]:
    with redis_server() as server:
        yield server


@pytest.fixture
def prefix() -> str:
    return f"test-{uuid.uuid4().hex[:8]}"


@pytest.fixture
async def client(redis: RedisServer) -> AsyncIterator[RedisClient]:
    client = redis_client(redis.url)
    async with client:
        with trio.fail_after(10):
            await wait_for_redis(client, redis.url)
        yield client
