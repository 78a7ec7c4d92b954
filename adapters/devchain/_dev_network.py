"""The network ``scopecast serve`` serves by default: the dev chain, or the chain of a geth genesis
file (``--genesis``, with ``--chain-file`` and ``--forkchoice``); ``--state-dir`` keeps the dev
chain on disk."""

from __future__ import annotations

import json
from typing import Final

from adapters.base import DevOptions, NetworkSpec
from schemas.errors import ConfigError

DEV_NETWORK: Final = "dev"
DEV_CHAIN: Final = "eip155:1337"


def dev_network(given: DevOptions) -> NetworkSpec:
    """The ``devchain`` network of ``scopecast serve`` without configured networks."""
    options: dict[str, object] = {"block_time": given.block_time or 0.0}
    chain = DEV_CHAIN
    flags = [
        flag
        for flag, value in (("--chain-file", given.chain_file), ("--forkchoice", given.forkchoice))
        if value is not None
    ]
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
