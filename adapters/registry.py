"""Finding adapters: the entry-point group ``scopecast.adapters``.

A third-party package plugs in a chain or account adapter by declaring, in its own pyproject::

    [project.entry-points."scopecast.adapters"]
    mychain = "my_package.adapter:MyChainAdapter"

and the broker builds it for every network whose ``adapter`` setting names ``mychain``.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Final

from adapters.base import AccountAdapter, ChainAdapter

GROUP: Final = "scopecast.adapters"


class AdapterNotFound(LookupError):
    """No installed adapter has the requested name."""


def available() -> list[str]:
    """Names of the installed adapters."""
    return sorted(ep.name for ep in entry_points(group=GROUP))


def load(name: str) -> type[ChainAdapter] | type[AccountAdapter]:
    """The adapter class registered under ``name``."""
    for ep in entry_points(group=GROUP, name=name):
        cls = ep.load()
        if not (isinstance(cls, type) and issubclass(cls, ChainAdapter | AccountAdapter)):
            raise TypeError(f"entry point {name!r} is not a ChainAdapter or AccountAdapter")
        return cls
    raise AdapterNotFound(
        f"no adapter named {name!r}; installed: {', '.join(available()) or 'none'}"
    )
