"""The dev chain adapter's options: a ``[networks.<name>]`` table with ``adapter = "devchain"``,
typed and checked (an unknown key such as ``block_tme`` is an error, not silently ignored)."""

from __future__ import annotations

import msgspec

from .accounts import DEFAULT_ACCOUNTS, DEFAULT_MNEMONIC


class DevChainOptions(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The settings of one dev chain network (README "The embedded dev chain")."""

    #: Seconds between mined blocks (with demo traffic); 0 mines on demand only.
    block_time: float = 0.0
    mnemonic: str = DEFAULT_MNEMONIC
    #: How many accounts of the mnemonic are funded.
    accounts: int = DEFAULT_ACCOUNTS
    #: A geth genesis file to start from instead of the dev genesis.
    genesis: str | None = None
    #: RLP-encoded blocks to import after the genesis.
    chain_file: str | None = None
    #: A forkchoice request naming the head, safe and finalized blocks.
    forkchoice: str | None = None
    #: A folder keeping the dev chain (its blocks and state): a restart continues the same chain.
    state_dir: str | None = None

    def __post_init__(self) -> None:
        if self.block_time < 0:
            raise ValueError("`block_time` must not be negative")
        if self.accounts < 0:
            raise ValueError("`accounts` must not be negative")
        if self.genesis is None and (self.chain_file is not None or self.forkchoice is not None):
            raise ValueError("the `chain_file` and `forkchoice` options need a `genesis`")
        if self.genesis is not None and self.state_dir is not None:
            raise ValueError("`state_dir` keeps the dev chain; an imported `genesis` has none")
