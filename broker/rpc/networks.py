"""The configured networks: name, CAIP-2 chain id and the chain adapter serving it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from adapters.base import AccountAdapter, ChainAdapter


@dataclass(frozen=True, slots=True)
class Network:
    """One network the broker serves."""

    name: str
    chain: str
    adapter: ChainAdapter
    #: Whether account methods may be called directly (outside a session) on this network: the
    #: embedded dev chain allows it, as a dev node would; real networks never do.
    direct_signing: bool = False
    #: Seconds a call to the adapter may take before it is cancelled (-32603): the network's
    #: ``call_timeout`` setting.
    call_timeout: float = 60.0


class Networks:
    """Lookup of networks by name and chain id, and of account adapters by chain id."""

    def __init__(
        self,
        networks: Sequence[Network],
        *,
        default: str | None = None,
        accounts: Sequence[AccountAdapter] = (),
    ) -> None:
        if not networks:
            raise ValueError("at least one network must be configured")
        self._by_name = {n.name: n for n in networks}
        self._by_chain = {n.chain: n for n in networks}
        if len(self._by_name) != len(networks) or len(self._by_chain) != len(networks):
            raise ValueError("network names and chain ids must be unique")
        self.default = self._by_name[default] if default else networks[0]
        self._accounts: dict[str, AccountAdapter] = {}
        for adapter in accounts:
            for chain in adapter.chains():
                self._accounts.setdefault(chain, adapter)

    def __iter__(self) -> Iterator[Network]:
        return iter(self._by_name.values())

    def by_name(self, name: str | None) -> Network | None:
        """The named network, the default one for None."""
        return self.default if name is None else self._by_name.get(name)

    def by_chain(self, chain: str) -> Network | None:
        return self._by_chain.get(chain)

    def accounts_for(self, chain: str) -> AccountAdapter | None:
        """The account adapter holding accounts on ``chain``, if any."""
        return self._accounts.get(chain)

    def chain_adapters(self) -> list[ChainAdapter]:
        """Every chain adapter once, though several networks may share one."""
        return list({id(network.adapter): network.adapter for network in self}.values())

    def account_adapters(self) -> list[AccountAdapter]:
        return list(dict.fromkeys(self._accounts.values()))

    def methods(self, chain: str) -> frozenset[str]:
        """Every method callable on ``chain``: its chain adapter's (with its family's subscribe
        methods) and its account adapter's."""
        network = self._by_chain.get(chain)
        found = network.adapter.methods(chain) if network else frozenset()
        family = network.adapter.subscription_family(chain) if network else None
        if family is not None:
            found = found | frozenset(family.methods) | family.unsubscribe_methods()
        accounts = self._accounts.get(chain)
        return found | accounts.methods(chain) if accounts else found

    def notifications(self, chain: str) -> frozenset[str]:
        network = self._by_chain.get(chain)
        return network.adapter.notifications(chain) if network else frozenset()
