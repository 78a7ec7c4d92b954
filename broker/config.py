"""Settings: a TOML file (``--config``) decoded with msgspec into typed structs; CLI flags override it.

Shape (every key optional but ``chain`` of a network)::

    [server]
    host = "127.0.0.1"          # --host
    port = 8545                 # --port
    api_keys = ["k1"]           # --api-key, SCOPECAST_API_KEYS
    approval = "auto"           # --approval: auto | manual
    approval_timeout = 300      # seconds a parked request waits for the operator
    admin_token = "..."         # --admin-token, SCOPECAST_ADMIN_TOKEN
    redis_url = "redis://..."   # --redis-url, REDIS_URL; or redis+sentinel://H:P,H:P/MASTER[/DB]
    max_session_expiry = 604800 # seconds (7 days)
    max_body_bytes = 5242880    # HTTP request body (413 past it)
    write_timeout = 30          # seconds an HTTP reply may take to be read (then dropped)
    max_message_bytes = 1048576 # WebSocket message (close 1009 past it)
    outbox_limit_bytes = 4194304  # unsent bytes per connection (close 4008 past it)
    max_inflight = 64           # concurrent calls per WebSocket connection
    ping_interval = 30          # seconds; no pong by the next ping: close 4009
    shutdown_grace = 10         # seconds connections get to drain on SIGTERM
    resume_window = 300         # seconds a dropped WebSocket can resume (0: no cursors)
    limits_when_redis_down = "open"  # or "closed": the keys' limits while Redis is unreachable
    token_grace = 30            # seconds a WebSocket outlives its token's exp (then close 4011)

    [keys.dapp1]                # an API key's own rules and limits (README "Keys and limits")
    origins = ["https://app.example.com", "https://*.example.org"]
    requests_per_second = 50
    burst = 100
    max_connections = 500
    max_subscriptions = 100
    methods = ["eth_*", "wallet_*"]
    secret = "env:DAPP1_SECRET"
    jwt_public_key = "file:keys/dapp1.pem"

    [networks.mainnet]
    chain = "eip155:1"
    default = true
    call_timeout = 60           # seconds a call to the chain adapter may take (then -32603)
    upstreams = [{ http = "https://node-a.example/rpc", ws = "wss://node-a.example/ws" }]

    [networks.dev]
    chain = "eip155:1337"
    adapter = "devchain"
    block_time = 2

    [accounts]                  # the keyring account adapter
    chains = ["eip155:1337"]    # default: the dev chain networks
    mnemonic = "..."            # or keystore_dir = "DIR" with passphrase_env
    count = 10
    [accounts.userop]           # ERC-4337 settings (entry_point, factory, bundler_url, paymaster...)

Every key of a network table other than ``chain``, ``default``, ``adapter`` and ``call_timeout``
(the broker's, read by :func:`broker.compose.build_network`) is passed to the adapter as its
options; an adapter decodes and validates its own options.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any, Final, Literal, get_args, get_origin
from urllib.parse import urlsplit

import msgspec

from adapters.base import NetworkSpec
from schemas.errors import ConfigError as ConfigError

#: What a TCP port can be (0: any free one). Python's socket layer takes a port modulo 65536, so
#: 70000 would quietly serve on 4464: every port setting is checked against this range first.
PORT_RANGE: Final = range(0, 65536)


def port_error(port: object, setting: str) -> str | None:
    """Why ``port`` cannot be the TCP port of ``setting`` (None: it can)."""
    if isinstance(port, bool) or not isinstance(port, int) or port not in PORT_RANGE:
        return f"{setting}: port {port!r} is outside the range 0..65535"
    return None


def url_port_error(url: str, setting: str) -> str | None:
    """Why a port of ``url`` cannot be had (None: it has none, or valid ones). A
    ``redis+sentinel://`` URL names several ``host:port`` pairs, comma-separated: each is checked."""
    parts = urlsplit(url)
    hosts = parts.netloc.rpartition("@")[2].split(",")
    for host in hosts:
        each = urlsplit(f"//{host}")
        try:
            each.port  # noqa: B018 - urllib checks the port when it is read
        except ValueError:
            # Only the host is shown: a URL may carry a password or an API key.
            where = f"{parts.scheme}://{each.hostname or ''}"
            return f"{setting}: the port in {where}:... is outside the range 0..65535 (or not a number)"
    return None


class ServerConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    host: str = "127.0.0.1"
    port: int = 8545
    api_keys: list[str] = msgspec.field(default_factory=list)
    approval: Literal["auto", "manual"] = "auto"
    approval_timeout: float = 300.0
    admin_token: str | None = None
    redis_url: str | None = None
    max_session_expiry: float = 7 * 24 * 3600.0
    stream_maxlen: int = 100_000
    # Limits (README "Limits"): bytes, seconds, counts.
    max_body_bytes: int = 5 * 1024 * 1024
    body_timeout: float = 30.0
    write_timeout: float = 30.0
    max_message_bytes: int = 1024 * 1024
    outbox_limit_bytes: int = 4 * 1024 * 1024
    max_inflight: int = 64
    ping_interval: float = 30.0
    shutdown_grace: float = 10.0
    response_cache_bytes: int = 64 * 1024 * 1024
    resume_window: float = 300.0
    # Keys and limits (README "Keys and limits").
    limits_when_redis_down: Literal["open", "closed"] = "open"
    token_grace: float = 30.0
    # Webhooks (README "Webhooks"): seconds, counts.
    webhook_retry_for: float = 24 * 3600.0
    webhook_timeout: float = 10.0
    webhook_backoff_initial: float = 1.0
    webhook_backoff_max: float = 300.0
    webhook_backlog: int = 10_000


class KeyConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """``[keys.NAME]``: the settings of the API key NAME (README "Keys and limits")."""

    origins: list[str] | None = None
    requests_per_second: float | None = None
    burst: int | None = None
    max_connections: int | None = None
    max_subscriptions: int | None = None
    methods: list[str] | None = None
    secret: str | None = None
    jwt_public_key: str | None = None
    #: The client profile of every request and connection on the key (``spec``, ``metamask``).
    client: str | None = None


class Config(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    server: ServerConfig = msgspec.field(default_factory=ServerConfig)
    networks: dict[str, dict[str, Any]] = msgspec.field(default_factory=dict)
    keys: dict[str, KeyConfig] = msgspec.field(default_factory=dict)
    #: The keyring account adapter's options (``chains`` = the chains it holds accounts for;
    #: default: the dev chain networks) — see adapters/keyring.
    accounts: dict[str, Any] | None = None


def load_config(path: Path | None) -> Config:
    """Read and type-check a TOML config file (an empty config when ``path`` is None)."""
    if path is None:
        return Config()
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    try:
        config = msgspec.convert(data, Config)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{path}: {_with_choices(exc)}") from exc
    mistake = port_error(config.server.port, "[server] port")
    if mistake is None and config.server.redis_url is not None:
        mistake = url_port_error(config.server.redis_url, "[server] redis_url")
    if mistake is not None:
        raise ConfigError(f"{path}: {mistake}")
    return config


def _with_choices(exc: msgspec.ValidationError) -> str:
    """msgspec's message, with the valid values when the setting takes one of a few."""
    text = str(exc)
    where = _INVALID_ENUM.match(text)
    if where is None:
        return text
    kind: Any = Config
    for name in where.group(1).split("."):
        members = {f.encode_name: f.type for f in msgspec.structs.fields(kind)}
        kind = members.get(name)
        if kind is None or not (isinstance(kind, type) and issubclass(kind, msgspec.Struct)):
            break
    if get_origin(kind) is not Literal:
        return text
    return f"{text} (choose from {', '.join(repr(choice) for choice in get_args(kind))})"


_INVALID_ENUM: Final = re.compile(r"Invalid enum value .* - at `\$\.([\w.]+)`\Z")


def network_specs(config: Config) -> tuple[list[NetworkSpec], str | None]:
    """The networks of a config, and the name of the default one (None: the first)."""
    specs: list[NetworkSpec] = []
    default: str | None = None
    for name, table in config.networks.items():
        options = dict(table)
        chain = options.pop("chain", None)
        if not isinstance(chain, str):
            raise ConfigError(
                f"networks.{name}: `chain` (a CAIP-2 id such as eip155:1) is required"
            )
        is_default = options.pop("default", False)
        adapter = options.pop("adapter", None)
        if adapter is None:
            if "upstreams" not in options:
                adapter = "devchain"
            else:
                adapter = "solana-upstream" if chain.startswith("solana:") else "upstream"
        if not isinstance(adapter, str):
            raise ConfigError(f"networks.{name}: `adapter` must be a string")
        if is_default is True:
            if default is not None:
                raise ConfigError(
                    f"networks.{name}: only one network can be the default ({default} is)"
                )
            default = name
        specs.append(NetworkSpec(name, chain, adapter, options))
    return specs, default


def env_list(name: str) -> list[str]:
    """A comma-separated environment variable as a list (empty when unset)."""
    return [item.strip() for item in os.environ.get(name, "").split(",") if item.strip()]
