"""Client profiles: whose behaviour a connection's answers follow where SPEC and a wallet differ.

SPEC's answers are the default (``spec``). ``metamask`` follows MetaMask's extension and its
``@metamask/multichain-api-middleware``, so that MetaMask's own client libraries (the multichain
client, the Solana wallet-standard wallet) work unmodified. A WebSocket chooses one with
``?client=NAME`` in its URL; a key's ``[keys.NAME]`` table may set ``client`` for every request and
connection on it (the URL's choice wins). The differences are listed in the README ("Client
profiles").
"""

from __future__ import annotations

from typing import Final

SPEC: Final = "spec"
METAMASK: Final = "metamask"
PROFILES: Final = (SPEC, METAMASK)


def profile_named(name: str, where: str) -> str:
    """``name`` if it is a profile.

    Raises:
        ValueError: it is not, with a message naming ``where`` and the profiles there are.
    """
    if name not in PROFILES:
        known = ", ".join(PROFILES)
        raise ValueError(f"{where}: unknown client profile {name!r} (known: {known})")
    return name
