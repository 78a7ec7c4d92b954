"""What a config and a command line describe: the networks (their specs, and the chain adapters
they name), the account adapter, and the Redis of a deployment. When no network is configured,
the installed adapters' development networks are the default (:meth:`ChainAdapter.dev_network`):
this module names no adapter but the account adapter's default, the keyring."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from adapters.base import AccountAdapter, ChainAdapter, DevOptions, NetworkSpec
from adapters.registry import AdapterNotFound, available, load
from broker.config import Config, ConfigError, network_specs, url_port_error
from broker.rpc.networks import Network

DEV_ADMIN_TOKEN = "dev"
#: Seconds a chain adapter's call may take (a network's ``call_timeout``, README "Configuration").
DEFAULT_CALL_TIMEOUT = 60.0


@dataclass(frozen=True, kw_only=True)
class ServeOptions:
    """What a command line adds to a config file, or overrides in it (``scopecast serve``'s flags
    and environment, already read: this module reads no environment)."""

    host: str | None = None
    port: int | None = None
    api_keys: Sequence[str] = ()
    admin_token: str | None = None
    approval: Literal["auto", "manual"] | None = None
    role: Literal["all", "web"] = "all"
    redis_url: str | None = None
    block_time: float | None = None
    keystore: Path | None = None
    genesis: Path | None = None
    chain_file: Path | None = None
    forkchoice: Path | None = None
    state_dir: Path | None = None


def _chain_import_flags(options: ServeOptions) -> list[str]:
    """The dev chain import flags given (``--genesis``, ``--chain-file``, ``--forkchoice``)."""
    flags = (
        ("--genesis", options.genesis),
        ("--chain-file", options.chain_file),
        ("--forkchoice", options.forkchoice),
        ("--state-dir", options.state_dir),
    )
    return [flag for flag, value in flags if value]


def _chain_adapter_class(name: str) -> type[ChainAdapter] | None:
    """The chain adapter class installed as ``name`` (None: none is)."""
    try:
        cls = load(name)
    except AdapterNotFound:
        return None
    return cls if issubclass(cls, ChainAdapter) else None


def _embedded(spec: NetworkSpec) -> bool:
    """Whether the network's chain lives inside the process (its adapter says so)."""
    cls = _chain_adapter_class(spec.adapter)
    return cls is not None and cls.embedded


def dev_networks(given: ServeOptions) -> list[NetworkSpec]:
    """The development networks of the installed chain adapters, in the order of their names
    (the first is the default network): served when no network is configured."""
    options = DevOptions(
        block_time=given.block_time,
        genesis=given.genesis,
        chain_file=given.chain_file,
        forkchoice=given.forkchoice,
        state_dir=given.state_dir,
    )
    specs = []
    for name in available():
        cls = _chain_adapter_class(name)
        spec = cls.dev_network(options) if cls is not None else None
        if spec is not None:
            specs.append(spec)
    return specs


def build_network(spec: NetworkSpec) -> Network:
    """Build the chain adapter a network spec names (its options but the broker's own,
    ``call_timeout``, are the adapter's)."""
    options = dict(spec.options)
    call_timeout = options.pop("call_timeout", DEFAULT_CALL_TIMEOUT)
    if isinstance(call_timeout, bool) or not isinstance(call_timeout, int | float):
        raise ConfigError(f"networks.{spec.name}: `call_timeout` must be a number of seconds")
    if not 0 < call_timeout < math.inf:
        raise ConfigError(f"networks.{spec.name}: `call_timeout` must be above 0 (seconds)")
    spec = replace(spec, options=options)
    try:
        cls = load(spec.adapter)
    except AdapterNotFound as exc:
        raise ConfigError(f"network {spec.name}: {exc}") from None
    if not issubclass(cls, ChainAdapter):
        raise ConfigError(f"network {spec.name}: adapter {spec.adapter!r} is not a chain adapter")
    try:
        adapter = cls.from_spec(spec)
    except ConfigError:
        raise
    except ValueError as exc:  # the SDK's contract for bad options (ConfigError passes as is)
        raise ConfigError(f"networks.{spec.name} ({spec.adapter} adapter): {exc}") from None
    return Network(
        spec.name,
        spec.chain,
        adapter,
        direct_signing=cls.embedded,
        call_timeout=float(call_timeout),
    )


def build_accounts(
    config: Config, specs: Sequence[NetworkSpec], keystore: Path | None
) -> AccountAdapter:
    """The account adapter ``[accounts]`` names (``adapter``, default the keyring), for the
    chains it names (default: the embedded development chains), its options completed with the
    adapter's development defaults (:meth:`AccountAdapter.complete_options`)."""
    options = dict(config.accounts or {})
    name = options.pop("adapter", "keyring")
    chains = options.pop("chains", None)
    dev_chains = [s.chain for s in specs if _embedded(s)]
    if chains is None:
        chains = dev_chains
    if keystore is not None:
        options["keystore_dir"] = str(keystore)
    try:
        cls = load(name)
    except AdapterNotFound as exc:
        raise ConfigError(f"[accounts]: {exc}") from None
    if not issubclass(cls, AccountAdapter):
        raise ConfigError(f"[accounts]: adapter {name!r} is not an account adapter")
    try:
        completed = cls.complete_options(
            chains, options, dev_chains=dev_chains, configured=config.accounts is not None
        )
        return cls.from_options(chains, completed)
    except ValueError as exc:
        raise ConfigError(f"[accounts]: {exc}") from None


def specs_to_serve(config: Config, given: ServeOptions) -> tuple[list[NetworkSpec], str | None]:
    """The networks to serve (the config's, else the embedded dev networks) and the default one's
    name (None: the first), with the options' dev chain flags and block time applied."""
    specs, default = network_specs(config)
    flags = _chain_import_flags(given)
    if specs and flags:
        # They describe the embedded dev chain, which the config's networks replace.
        raise ConfigError(
            f"{', '.join(flags)}: only for the embedded dev chain, and "
            "--config has [networks.*]; set genesis, chain_file, forkchoice and state_dir in the devchain "
            "network's table instead"
        )
    if not specs:
        specs = dev_networks(given)
    elif given.block_time is not None:
        specs = [
            NetworkSpec(s.name, s.chain, s.adapter, {**s.options, "block_time": given.block_time})
            if _embedded(s)
            else s
            for s in specs
        ]
    return specs, default


def redis_url(options: ServeOptions, config: Config) -> str | None:
    """The Redis of a deployment: the options' (flag or ``REDIS_URL``), else the config's."""
    url = options.redis_url or config.server.redis_url
    mistake = None if url is None else url_port_error(url, "the Redis URL")
    if mistake is not None:
        raise ConfigError(mistake)
    return url


def require_upstreams(specs: Sequence[NetworkSpec], what: str) -> None:
    # Chain state never lives in a web process or a worker: each would have a chain of its own.
    if not specs:
        raise ConfigError(
            f"{what}: configure upstream networks ([networks.*] upstreams) in --config"
        )
    for spec in specs:
        if _embedded(spec):
            raise ConfigError(
                f"{what}: network {spec.name} is an embedded dev chain; with several processes "
                "every network is an upstream network (serve a dev chain with its own "
                "`scopecast serve` and list it in upstreams)"
            )
