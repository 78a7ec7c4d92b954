"""The Solana dev chain's options: a ``[networks.<name>]`` table with ``adapter = "solana-dev"``,
typed and checked (an unknown key such as ``slot_tme`` is an error, not silently ignored)."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import msgspec
from solders.pubkey import Pubkey

from adapters._base58 import b58decode, b58encode
from adapters._ed25519 import DEV_ACCOUNTS, DEV_MNEMONIC

LAMPORTS_PER_SOL: Final = 1_000_000_000
DEFAULT_GENESIS_SEED: Final = "scopecast solana-dev"


class ProgramFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A program loaded at start (``programs = [{ id = "...", path = "..." }]``), as
    ``solana-test-validator --bpf-program`` loads one: an SBF ``.so`` under the upgradeable
    loader at ``id``."""

    id: str
    #: The ``.so`` file (a relative path is from the working directory).
    path: str

    def __post_init__(self) -> None:
        try:
            Pubkey.from_string(self.id)
        except ValueError:
            raise ValueError(f"program id `{self.id}` is not a base58 address") from None
        if not Path(self.path).is_file():
            raise ValueError(f"program file `{self.path}` does not exist")


class SolanaDevOptions(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The settings of one Solana dev network (README "Solana")."""

    #: Seconds between slots (with demo SOL transfers); 0 puts each accepted transaction in a new
    #: slot at once, and slots otherwise advance only on ``scopecast_advanceSlots``.
    block_time: float = 0.0
    mnemonic: str = DEV_MNEMONIC
    #: How many accounts of the mnemonic (at ``m/44'/501'/i'/0'``) are funded.
    accounts: int = DEV_ACCOUNTS
    #: Lamports each dev account starts with (default 1,000 SOL).
    lamports: int = 1_000 * LAMPORTS_PER_SOL
    #: What the genesis hash (and so the chain's CAIP-2 id) is made from: give each Solana dev
    #: network of one config a seed of its own.
    genesis_seed: str = DEFAULT_GENESIS_SEED
    #: A genesis hash (base58, 32 bytes) the chain claims instead of the seed's, as anvil's
    #: ``--chain-id`` lets a dev chain claim chain id 1: a local chain served under a real
    #: cluster's CAIP-2 id (mainnet's ``5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d``, say), for
    #: clients that only ask for that cluster.
    genesis_hash: str | None = None
    #: Programs loaded at start (they do not change the genesis hash).
    programs: tuple[ProgramFile, ...] = ()

    def __post_init__(self) -> None:
        if self.genesis_hash is not None:
            try:
                claimed = b58decode(self.genesis_hash)
            except ValueError as exc:
                raise ValueError(f"`genesis_hash`: {exc}") from None
            if len(claimed) != 32 or b58encode(claimed) != self.genesis_hash:
                raise ValueError("`genesis_hash` must be a 32-byte hash in base58")
            if self.genesis_seed != DEFAULT_GENESIS_SEED:
                raise ValueError("give `genesis_hash` or `genesis_seed`, not both")
        if self.block_time < 0:
            raise ValueError("`block_time` must not be negative")
        if not 0 <= self.accounts <= 1000:
            raise ValueError("`accounts` must be 0 to 1000")
        if not 0 <= self.lamports < 2**63:
            raise ValueError("`lamports` must be 0 to 2^63 - 1")
