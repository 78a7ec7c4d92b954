"""What every account method works with: the keys, the smart-account settings, who may sign."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from typing import Any, TypeVar

from adapters.base import ChainReader, SigningRequest
from adapters.keyring._config import UserOpConfig
from adapters.keyring._keys import Keyring
from schemas.errors import InternalError, Unauthorized

P = TypeVar("P")


@dataclass(frozen=True, slots=True)
class Wallet:
    """The keyring's keys and settings, shared by the method handlers."""

    keyring: Keyring
    userop: UserOpConfig

    def signer(self, address: str, permitted: Collection[str]) -> str:
        """``address`` if the caller may use it and the keyring holds its key, else 4100."""
        if address not in permitted or not self.keyring.holds(address):
            raise Unauthorized()
        return address

    def owner(self, permitted: Collection[str]) -> str:
        """The smart-account owner for a session: its first permitted account the keyring holds.

        ``permitted`` keeps the session's order, so the owner is the account the dapp lists first.
        """
        for address in permitted:
            if self.keyring.holds(address):
                return address
        raise Unauthorized()


@dataclass(frozen=True, slots=True)
class Prepared:
    """A handler's reading of the params: who signs, what the operator sees, what to execute."""

    account: str | None
    summary: dict[str, Any]
    payload: Any


@dataclass(frozen=True, slots=True)
class Handler:
    """One account method: a sans-io ``prepare`` and an ``execute`` that may read the chain."""

    prepare: Callable[[Wallet, int, list[Any], list[str]], Prepared]
    execute: Callable[[Wallet, SigningRequest, ChainReader], Awaitable[Any]]


def payload_of(request: SigningRequest, kind: type[P]) -> P:
    """The request's payload, which this adapter's own ``prepare`` built as a ``kind``."""
    if not isinstance(request.payload, kind):
        raise InternalError(f"{request.method} request was not prepared by the keyring")
    return request.payload


def account_of(request: SigningRequest) -> str:
    """The signing account a prepared request names."""
    if request.account is None:
        raise InternalError(f"{request.method} request names no signing account")
    return request.account
