"""What a config and a command line describe: the networks (their specs, and the chain adapters
they name), the account adapter, and the Redis of a deployment. The embedded dev networks are the
default when no network is configured."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from adapters.base import AccountAdapter, ChainAdapter, NetworkSpec
from adapters.registry import AdapterNotFound, load
from broker.config import Config, ConfigError, network_specs
from broker.networks import Network

DEV_NETWORK = "dev"
DEV_CHAIN = "eip155:1337"
SOLANA_NETWORK = "solana"
#: Adapters whose chain lives inside the process (never shared between processes).
EMBEDDED_ADAPTERS = frozenset({"devchain", "solana-dev"})
DEV_ADMIN_TOKEN = "dev"


@dataclass(frozen=True, kw_only=True)
class ServeOptions:
    """What a command line adds to a config file, or overrides in it (``scopecast serve``'s flags
    and environment, already read: this module reads no environment)."""

    host: str | None = None
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


def _dev_network(given: ServeOptions) -> NetworkSpec:
    options: dict[str, object] = {"block_time": given.block_time or 0.0}
    chain = DEV_CHAIN
    flags = [flag for flag in _chain_import_flags(given) if flag != "--state-dir"]
    if given.genesis is None and flags:  # said in flag terms; options would say it in TOML terms
        raise ConfigError(f"{', '.join(flags)}: only with --genesis")
    if given.state_dir is not None:
        if given.genesis is not None:
            raise ConfigError("--state-dir: keeps the dev chain, not an imported --genesis")
        options["state_dir"] = str(given.state_dir)
    if given.genesis is not None:
        try:
            genesis = json.loads(given.genesis.read_text())
            chain = f"eip155:{int(genesis['config']['chainId'])}"
        except OSError as exc:
            raise ConfigError(f"--genesis {given.genesis}: {exc.strerror}") from None
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(
                f"--genesis {given.genesis}: not a geth genesis file ({exc})"
            ) from None
        options["genesis"] = str(given.genesis)
        if given.chain_file is not None:
            options["chain_file"] = str(given.chain_file)
        if given.forkchoice is not None:
            options["forkchoice"] = str(given.forkchoice)
    return NetworkSpec(DEV_NETWORK, chain, "devchain", options)


def _solana_network(given: ServeOptions) -> NetworkSpec:
    """The Solana dev network served beside the dev chain when no network is configured."""
    from adapters.solana import dev_chain_id

    options: dict[str, object] = {"block_time": given.block_time or 0.0}
    return NetworkSpec(SOLANA_NETWORK, dev_chain_id(options), "solana-dev", options)


def build_network(spec: NetworkSpec) -> Network:
    """Build the chain adapter a network spec names."""
    try:
        cls = load(spec.adapter)
    except AdapterNotFound as exc:
        raise ConfigError(f"network {spec.name}: {exc}") from None
    if not issubclass(cls, ChainAdapter):
        raise ConfigError(f"network {spec.name}: adapter {spec.adapter!r} is not a chain adapter")
    adapter = cls.from_spec(spec)
    direct = spec.adapter in EMBEDDED_ADAPTERS
    return Network(spec.name, spec.chain, adapter, direct_signing=direct)


#: The embedded dev chain has no SimpleAccountFactory and no bundler: nothing ever runs a user
#: operation's initCode there. So that smart-account addresses are still deterministic per owner, the
#: dev keyring computes them with this stand-in proxy creation code (one STOP opcode: deploys no code).
#: On a real network the factory answers getAddress, or the operator configures the real proxy code.
DEV_PROXY_CREATION_CODE = "0x00"


def build_accounts(
    config: Config, specs: Sequence[NetworkSpec], keystore: Path | None
) -> AccountAdapter:
    """The account adapter ``[accounts]`` names (``adapter``, default the keyring)."""
    from adapters.keyring import DEV_MNEMONIC

    options = dict(config.accounts or {})
    name = options.pop("adapter", "keyring")
    chains = options.pop("chains", None)
    dev_chains = [s.chain for s in specs if s.adapter in EMBEDDED_ADAPTERS]
    if chains is None:
        chains = dev_chains
    if name == "keyring":
        if keystore is not None:
            options["keystore_dir"] = str(keystore)
        if not options.get("mnemonic") and not options.get("keystore_dir"):
            if not set(chains) <= set(dev_chains):
                raise ConfigError(
                    "[accounts]: the keyring needs a mnemonic or keystore_dir (or --keystore) for "
                    f"{', '.join(c for c in chains if c not in dev_chains)}; the public development "
                    "mnemonic serves only the embedded dev chain"
                )
            options["mnemonic"] = DEV_MNEMONIC
        if config.accounts is None:
            options["userop"] = {"proxy_creation_code": DEV_PROXY_CREATION_CODE}
    try:
        cls = load(name)
    except AdapterNotFound as exc:
        raise ConfigError(f"[accounts]: {exc}") from None
    if not issubclass(cls, AccountAdapter):
        raise ConfigError(f"[accounts]: adapter {name!r} is not an account adapter")
    try:
        return cls.from_options(chains, options)
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
        specs = [_dev_network(given), _solana_network(given)]
    elif given.block_time is not None:
        specs = [
            NetworkSpec(s.name, s.chain, s.adapter, {**s.options, "block_time": given.block_time})
            if s.adapter in EMBEDDED_ADAPTERS
            else s
            for s in specs
        ]
    return specs, default


def redis_url(options: ServeOptions, config: Config) -> str | None:
    """The Redis of a deployment: the options' (flag or ``REDIS_URL``), else the config's."""
    return options.redis_url or config.server.redis_url


def require_upstreams(specs: Sequence[NetworkSpec], what: str) -> None:
    # Chain state never lives in a web process or a worker: each would have a chain of its own.
    if not specs:
        raise ConfigError(
            f"{what}: configure upstream networks ([networks.*] upstreams) in --config"
        )
    for spec in specs:
        if spec.adapter in EMBEDDED_ADAPTERS:
            raise ConfigError(
                f"{what}: network {spec.name} is an embedded dev chain; with several processes "
                "every network is an upstream network (serve a dev chain with its own "
                "`scopecast serve` and list it in upstreams)"
            )
