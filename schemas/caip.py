"""CAIP identifiers and the CAIP-25 session shapes on the wire.

CAIP-2 chain ids (``namespace:reference``), CAIP-10 account ids (``chain_id:address``) and the
CAIP-217 scope object as a granted session carries it, plus the results of ``wallet_createSession``
and ``wallet_getSession`` and the params of ``wallet_sessionChanged``.

Every pattern is matched against the whole string with :func:`re.fullmatch`: a ``$`` anchor would
accept a trailing newline, and a partial match would accept ``eip155:1:extra`` as a chain id.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

import msgspec

NAMESPACE_PATTERN = r"[-a-z0-9]{3,8}"
REFERENCE_PATTERN = r"[-_a-zA-Z0-9]{1,32}"
ADDRESS_PATTERN = r"[-.%a-zA-Z0-9]{1,128}"

#: The namespace of EVM chains; its profile narrows references and addresses (see below).
EIP155 = "eip155"
#: The CAIP "wallet scope" namespace: ``wallet`` alone names wallet functions of no chain,
#: ``wallet:<namespace>`` wallet functions of one ecosystem (``wallet:eip155``).
WALLET = "wallet"
#: The namespace of Solana clusters (the reference is the genesis hash's first 32 characters).
SOLANA = "solana"
_WALLET_EIP155 = f"{WALLET}:{EIP155}"

_NAMESPACE = re.compile(NAMESPACE_PATTERN)
_REFERENCE = re.compile(REFERENCE_PATTERN)
_ADDRESS = re.compile(ADDRESS_PATTERN)
_CHAIN_ID = re.compile(f"(?P<namespace>{NAMESPACE_PATTERN}):(?P<reference>{REFERENCE_PATTERN})")
_ACCOUNT_ID = re.compile(
    f"(?P<namespace>{NAMESPACE_PATTERN}):(?P<reference>{REFERENCE_PATTERN}):(?P<address>{ADDRESS_PATTERN})"
)
# The eip155 profile of CAIP-2: the decimal EIP-155 chain id, no leading zeros.
_EIP155_REFERENCE = re.compile(r"0|[1-9][0-9]*")
_EIP155_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")


class ChainId(NamedTuple):
    """A parsed CAIP-2 chain id."""

    namespace: str
    reference: str

    def __str__(self) -> str:
        return f"{self.namespace}:{self.reference}"


class AccountId(NamedTuple):
    """A parsed CAIP-10 account id."""

    chain: ChainId
    address: str

    def __str__(self) -> str:
        return f"{self.chain}:{self.address}"


def is_namespace(text: object) -> bool:
    """Whether ``text`` is a CAIP-2 namespace (``eip155``, ``wallet``)."""
    return isinstance(text, str) and _NAMESPACE.fullmatch(text) is not None


def is_reference(text: object, namespace: str | None = None) -> bool:
    """Whether ``text`` is a CAIP-2 reference, under ``namespace``'s profile when one is known.

    Args:
        text: The candidate reference.
        namespace: The namespace the reference belongs to; ``eip155`` requires a decimal chain id
            and ``wallet`` a namespace (``wallet:eip155``).
    """
    if not isinstance(text, str) or _REFERENCE.fullmatch(text) is None:
        return False
    if namespace == EIP155:
        return _EIP155_REFERENCE.fullmatch(text) is not None
    if namespace == WALLET:
        return is_namespace(text)
    return True


def is_chain_id(text: object) -> bool:
    """Whether ``text`` is a CAIP-2 chain id whose reference fits its namespace's profile."""
    if not isinstance(text, str):
        return False
    match = _CHAIN_ID.fullmatch(text)
    return match is not None and is_reference(match["reference"], match["namespace"])


def parse_chain_id(text: str) -> ChainId:
    """Split a CAIP-2 chain id.

    Raises:
        ValueError: ``text`` is not a chain id (or breaks its namespace's profile).
    """
    match = _CHAIN_ID.fullmatch(text)
    if match is None or not is_reference(match["reference"], match["namespace"]):
        raise ValueError(f"not a CAIP-2 chain id: {text!r}")
    return ChainId(match["namespace"], match["reference"])


def is_evm(chain: str) -> bool:
    """Whether ``chain`` (CAIP-2) is of the EVM family: the ``eip155`` namespace. The one rule:
    the adapters, the conformance checks and the broker's EVM profile all ask it."""
    return chain.startswith(f"{EIP155}:")


def is_solana(chain: str) -> bool:
    """Whether ``chain`` (CAIP-2) is a Solana cluster: the ``solana`` namespace."""
    return chain.startswith(f"{SOLANA}:")


def _has_evm_accounts(chain: str) -> bool:
    # An EVM chain's, and the wallet scope of the EVM ecosystem's (``wallet:eip155``).
    return is_evm(chain) or chain == _WALLET_EIP155


def normalize_address(chain: str, address: str) -> str:
    """Check an account address against ``chain``'s profile and return its canonical form.

    EVM addresses must be ``0x`` and 40 hex digits and are lowercased, because they are
    case-insensitive (the mixed case is only a checksum). Other addresses are case-sensitive and
    are kept as given.

    Raises:
        ValueError: the address does not fit CAIP-10 or the chain's profile.
    """
    if _ADDRESS.fullmatch(address) is None:
        raise ValueError(f"not a CAIP-10 account address: {address!r}")
    if _has_evm_accounts(chain):
        if _EIP155_ADDRESS.fullmatch(address) is None:
            raise ValueError(f"not an EVM address: {address!r}")
        return address.lower()
    return address


def parse_account_id(text: str) -> AccountId:
    """Split a CAIP-10 account id, normalising the address as :func:`normalize_address` does.

    Raises:
        ValueError: ``text`` is not an account id, or its address breaks the chain's profile.
    """
    match = _ACCOUNT_ID.fullmatch(text)
    if match is None or not is_reference(match["reference"], match["namespace"]):
        raise ValueError(f"not a CAIP-10 account id: {text!r}")
    chain = ChainId(match["namespace"], match["reference"])
    return AccountId(chain, normalize_address(str(chain), match["address"]))


class ScopeObject(msgspec.Struct, frozen=True, omit_defaults=True):
    """A CAIP-217 scope in normalised form: what a dapp may call, hear and use on one chain.

    ``accounts`` are CAIP-10 ids of the scope's own chain (EVM addresses lowercase). A granted
    scope always carries all three arrays, possibly empty; ``rpcDocuments`` and ``rpcEndpoints``
    (CAIP-217's optional URLs of OpenRPC documents and of RPC endpoints the dapp prefers) only when
    requested. Unknown fields are ignored on decoding, so that a stored session written by a newer
    version still reads.
    """

    methods: tuple[str, ...]
    notifications: tuple[str, ...]
    accounts: tuple[str, ...]
    rpc_documents: tuple[str, ...] = msgspec.field(default=(), name="rpcDocuments")
    rpc_endpoints: tuple[str, ...] = msgspec.field(default=(), name="rpcEndpoints")


class SessionProperties(msgspec.Struct, frozen=True, rename="camel"):
    """The ``sessionProperties`` a wallet returns: when the session ends and its free-form config."""

    expiry: str
    global_config: Mapping[str, Any]


class CreateSessionResult(msgspec.Struct, frozen=True, rename="camel"):
    """The result of ``wallet_createSession``."""

    session_scopes: Mapping[str, ScopeObject]
    session_properties: SessionProperties


class GetSessionResult(msgspec.Struct, frozen=True, rename="camel"):
    """The result of ``wallet_getSession`` (``sessionScopes`` is ``{}`` without a session)."""

    session_scopes: Mapping[str, ScopeObject]


class SessionChangedParams(msgspec.Struct, frozen=True, rename="camel"):
    """The params of ``wallet_sessionChanged``: the complete scopes after the change."""

    session_scopes: Mapping[str, ScopeObject]
