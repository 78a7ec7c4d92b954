"""The Solana dev chain adapter (``solders.litesvm``), registered as the ``solana-dev`` entry
point."""

from .adapter import SOLANA_NETWORK as SOLANA_NETWORK
from .adapter import SolanaDevAdapter as SolanaDevAdapter
from .adapter import dev_chain_id as dev_chain_id
from .adapter import solana_chain_id as solana_chain_id

__all__ = ["SOLANA_NETWORK", "SolanaDevAdapter", "dev_chain_id", "solana_chain_id"]
