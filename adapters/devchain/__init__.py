"""The embedded dev chain adapter (py-evm), registered as the ``devchain`` entry point."""

from .adapter import DevChainAdapter as DevChainAdapter

__all__ = ["DevChainAdapter"]
