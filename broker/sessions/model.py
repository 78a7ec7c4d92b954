"""The values of the session layer: who a dapp is, what it asked for, what it was granted.

All of them are frozen msgspec Structs. Mappings inside them are typed read-only and are never
mutated after construction: every change builds a new value. A :class:`Session` encodes to bytes
with :func:`encode_session` and back with :func:`decode_session`; that is the form the stores keep.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec

from schemas.caip import (
    CreateSessionResult,
    GetSessionResult,
    ScopeObject,
    SessionChangedParams,
    SessionProperties,
)

#: The longest a session may live when the operator configures nothing else.
DEFAULT_MAX_EXPIRY = timedelta(days=7)

#: The CAIP-25 dialects: SPEC's and MetaMask's (``optionalScopes``, ``sessionScopes``,
#: ``sessionProperties``), and the 2025 text's (``scopes``, ``properties``).
LEGACY = "2022"
CURRENT = "2025"

#: The ``Origin`` stand-in for clients that send none (curl, server-side scripts).
NO_ORIGIN = "-"


class Identity(msgspec.Struct, frozen=True, gc=False):
    """Who a dapp is: its API key and the ``Origin`` of its connections (``-`` when absent).

    Untracked by the garbage collector (``gc=False``): it holds only strings, so it can be in
    no cycle.

    One identity has at most one session, shared by all of its connections.
    """

    api_key: str
    origin: str

    @classmethod
    def of(cls, api_key: str, origin_header: str | None) -> Identity:
        """The identity of a request, from its API key and its ``Origin`` header (or None)."""
        return cls(api_key, origin_header or NO_ORIGIN)


class SessionRequest(msgspec.Struct, frozen=True):
    """A validated ``wallet_createSession`` request, normalised.

    Attributes:
        scopes: One entry per chain key (``eip155:1``, ``wallet``, ``wallet:eip155``): required and
            optional scopes merged, namespace keys expanded by their ``references``. Requested
            ``accounts`` are the dapp's preselection, as CAIP-10 ids.
        expiry: The expiry the dapp asked for, in UTC, or None.
        global_config: ``sessionProperties.globalConfig``, ``{}`` when not given.
        scoped_properties: ``scopedProperties`` as given (validated, not interpreted).
    """

    scopes: Mapping[str, ScopeObject]
    expiry: datetime | None = None
    global_config: Mapping[str, Any] = msgspec.field(default_factory=dict)
    scoped_properties: Mapping[str, Mapping[str, Any]] = msgspec.field(default_factory=dict)
    #: The CAIP-25 dialect of the request: ``2022`` (optionalScopes/sessionProperties, as SPEC
    #: and MetaMask) or ``2025`` (scopes/properties); the session answers in it.
    dialect: str = LEGACY
    #: 2025 dialect: each namespace-keyed scope of the request and the chain keys it named, so
    #: that answers keep the request's structure (CAIP-25: respondents must not restructure).
    layout: Mapping[str, tuple[str, ...]] = msgspec.field(default_factory=dict)
    #: Scope keys that named no chain (a namespace key without references, such as a bare
    #: ``"1337"``): said in the 5100 a request of nothing else gets.
    chainless: tuple[str, ...] = ()

    def requested_addresses(self, chain: str) -> tuple[str, ...]:
        """The addresses the dapp preselected on ``chain`` (EVM ones lowercase)."""
        scope = self.scopes.get(chain)
        if scope is None:
            return ()
        return tuple(account.rpartition(":")[2] for account in scope.accounts)


class Session(msgspec.Struct, frozen=True):
    """A granted session: the scopes of one identity until ``expiry``.

    Attributes:
        identity: Whose session it is (the store key).
        scopes: Granted scopes by chain key, in the order the dapp asked for them.
        expiry: When the session ends (UTC, whole seconds).
        global_config: ``sessionProperties.globalConfig`` as returned to the dapp (in the 2025
            dialect: the other members of ``properties``).
        created_at: When it was granted (UTC).
        dialect: The CAIP-25 dialect it was requested in, and answers in.
        layout: 2025 dialect: the request's namespace-keyed scopes and their chain keys.
    """

    identity: Identity
    scopes: Mapping[str, ScopeObject]
    expiry: datetime
    global_config: Mapping[str, Any]
    created_at: datetime
    dialect: str = LEGACY
    layout: Mapping[str, tuple[str, ...]] = msgspec.field(default_factory=dict)
    #: Requested ``sessionProperties`` kept as they were given (the ``metamask`` profile keeps
    #: those MetaMask knows, :mod:`broker.sessions.metamask`), answered back beside the expiry.
    properties: Mapping[str, Any] = msgspec.field(default_factory=dict)


class ScopeUpdate(msgspec.Struct, frozen=True):
    """The outcome of a scope change.

    Attributes:
        session: The session after the change; None when no scope remains (the session is over
            and should be deleted from the store).
        changed: Whether the scopes differ from before: if so, every connection of the identity
            gets ``wallet_sessionChanged`` (see :func:`session_changed_params`).
        removed: Chain keys that were granted before and are not any more: their subscriptions end.
    """

    session: Session | None
    changed: bool
    removed: tuple[str, ...]


_session_encoder = msgspec.json.Encoder()
_session_decoder = msgspec.json.Decoder(Session)


def encode_session(session: Session) -> bytes:
    """The stored form of a session (JSON, so that it stays readable in ``redis-cli``).

    The same (frozen) session encoded twice in a row gives the same bytes object: a change is
    stored, then announced, and the memory store and the process's record of what it announced
    then keep one copy between them, not two (a few hundred bytes per dapp)."""
    global _last_encoded
    last = _last_encoded
    if last is not None and last[0] is session:
        return last[1]
    data = _session_encoder.encode(session)
    _last_encoded = (session, data)
    return data


_last_encoded: tuple[Session, bytes] | None = None


def decode_session(data: bytes) -> Session:
    """A session from its stored form.

    Raises:
        msgspec.DecodeError: ``data`` is not a stored session.
    """
    return _session_decoder.decode(data)


def as_utc(moment: datetime) -> datetime:
    """``moment`` in UTC.

    Raises:
        ValueError: ``moment`` is naive; the session layer never guesses a time zone for a clock.
    """
    if moment.tzinfo is None:
        raise ValueError("the clock must give timezone-aware datetimes")
    return moment.astimezone(UTC)


def is_expired(session: Session, now: datetime) -> bool:
    """Whether ``session`` is over at ``now``."""
    return as_utc(now) >= session.expiry


def format_expiry(expiry: datetime) -> str:
    """An expiry as the ISO 8601 UTC text of ``sessionProperties.expiry``."""
    return expiry.astimezone(UTC).isoformat(timespec="seconds")


def create_session_result(session: Session) -> CreateSessionResult:
    """The ``wallet_createSession`` result for a freshly granted session."""
    return CreateSessionResult(
        session_scopes=session.scopes,
        session_properties=SessionProperties(
            expiry=format_expiry(session.expiry), global_config=session.global_config
        ),
    )


def get_session_result(session: Session | None, now: datetime) -> GetSessionResult:
    """The ``wallet_getSession`` result: the scopes, or ``{}`` when no live session exists."""
    if session is None or is_expired(session, now):
        return GetSessionResult(session_scopes={})
    return GetSessionResult(session_scopes=session.scopes)


def session_changed_params(session: Session | None) -> SessionChangedParams:
    """The ``wallet_sessionChanged`` params after a change (``{}`` once the session is gone)."""
    return SessionChangedParams(session_scopes={} if session is None else session.scopes)
