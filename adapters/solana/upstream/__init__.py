"""The Solana upstream adapter (``solana-upstream``): Solana RPC nodes behind the broker, with
failover, and Solana's PubSub served over their slots and blocks. Configured per network
(``[networks.<name>]`` with a ``solana:`` chain and ``upstreams = [...]``); every setting is
described in the README, "Solana upstream nodes"."""

from ._adapter import NoUsableSolanaUpstream as NoUsableSolanaUpstream
from ._adapter import SolanaUpstreamAdapter as SolanaUpstreamAdapter
from ._options import READ_METHODS as READ_METHODS
from ._options import WRITE_METHODS as WRITE_METHODS
from ._options import SolanaUpstreamOptions as SolanaUpstreamOptions
