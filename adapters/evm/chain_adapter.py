"""What every EVM chain adapter shares beyond :class:`~adapters.base.ChainAdapter`: its methods
described for ``rpc.discover`` and its answers' lifetimes for the response cache."""

from __future__ import annotations

from adapters.base import ChainAdapter, Lifetime, MethodDocs
from adapters.evm import cache_rules
from adapters.evm.openrpc import evm_docs


class EvmChainAdapter(ChainAdapter):
    """A chain adapter for ``eip155`` chains: subclass it instead of ``ChainAdapter``."""

    def method_docs(self, chain: str) -> MethodDocs:
        return evm_docs(self.methods(chain))

    def answer_lifetime(self, chain: str, method: str, params: bytes, head: int) -> Lifetime:
        return cache_rules.lifetime(method, params, head)

    def answer_kept(self, chain: str, lifetime: Lifetime, answer: bytes) -> Lifetime:
        return cache_rules.kept(lifetime, answer)
