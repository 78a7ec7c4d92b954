"""``[keys.NAME]`` tables made into :class:`KeyPolicy` objects, checked once at start-up.

``secret`` and ``jwt_public_key`` name where the value is (``env:VARIABLE`` or ``file:PATH``, a
relative path from the working directory), never the value itself: a config file is shared more
widely than a secret should be.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from broker.access._policy import MethodRule, OriginPattern, Rate
from broker.access._tokens import TokenKey
from broker.config import KeyConfig
from broker.sessions.client_profiles import profile_named
from schemas.errors import ConfigError


@dataclass(frozen=True, slots=True)
class KeyPolicy:
    """What one key may do: None everywhere is a key with no rules (the ``--api-key`` default)."""

    name: str
    origins: tuple[OriginPattern, ...] | None = None
    methods: MethodRule | None = None
    rate: Rate | None = None
    max_connections: int | None = None
    max_subscriptions: int | None = None
    secret: bytes | None = None
    token_key: TokenKey | None = None
    #: The client profile (:mod:`broker.sessions.client_profiles`) of the key's requests; None: SPEC's.
    client: str | None = None


def read_source(source: str, where: str) -> bytes:
    """The bytes ``env:VARIABLE`` or ``file:PATH`` names."""
    kind, _, name = source.partition(":")
    if kind == "env" and name:
        value = os.environ.get(name)
        if not value:
            raise ConfigError(f"{where}: the environment variable {name} is not set")
        return value.encode()
    if kind == "file" and name:
        try:
            return Path(name).read_bytes()
        except OSError as exc:
            raise ConfigError(f"{where}: {name}: {exc.strerror}") from None
    raise ConfigError(f"{where}: expected env:VARIABLE or file:PATH, not the value itself")


def _positive(value: float | None, where: str) -> None:
    if value is not None and not (value > 0 and math.isfinite(value)):
        raise ConfigError(f"{where}: must be positive")


def key_policy(name: str, table: KeyConfig) -> KeyPolicy:
    """The policy of ``[keys.NAME]`` (raises :class:`ConfigError` naming the setting)."""
    where = f"keys.{name}"
    for setting in ("requests_per_second", "burst", "max_connections", "max_subscriptions"):
        _positive(getattr(table, setting), f"{where}.{setting}")
    rate = None
    if table.requests_per_second is not None:
        burst = table.burst or max(1, math.ceil(table.requests_per_second))
        rate = Rate(table.requests_per_second, burst)
    elif table.burst is not None:
        raise ConfigError(f"{where}.burst: only with requests_per_second")
    secret = None
    if table.secret is not None:
        secret = read_source(table.secret, f"{where}.secret").strip()
    token_key = None
    if table.jwt_public_key is not None:
        at = f"{where}.jwt_public_key"
        token_key = TokenKey.from_pem(read_source(table.jwt_public_key, at), at)
    client = None
    if table.client is not None:
        try:
            client = profile_named(table.client, f"{where}.client")
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    return KeyPolicy(
        name,
        origins=None
        if table.origins is None
        else tuple(OriginPattern.parse(o) for o in table.origins),
        methods=None
        if table.methods is None
        else MethodRule(tuple(table.methods), f"{where}.methods"),
        rate=rate,
        max_connections=table.max_connections,
        max_subscriptions=table.max_subscriptions,
        secret=secret,
        token_key=token_key,
        client=client,
    )


def key_policies(tables: Mapping[str, KeyConfig]) -> dict[str, KeyPolicy]:
    """Every ``[keys.*]`` table's policy."""
    return {name: key_policy(name, table) for name, table in tables.items()}
