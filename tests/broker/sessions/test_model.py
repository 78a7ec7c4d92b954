"""Identity, the stored form of a session, expiry and the getSession / sessionChanged shapes."""

from __future__ import annotations

from datetime import timedelta, timezone

import msgspec
import pytest

from broker.sessions import (
    Identity,
    decode_session,
    encode_session,
    get_session_result,
    is_expired,
    session_changed_params,
)
from broker.sessions.model import as_utc

from .helpers import NOW, make_session


@pytest.mark.parametrize(
    ("origin", "expected"), [(None, "-"), ("", "-"), ("https://a.b", "https://a.b")]
)
def test_identity_of_a_request(origin: str | None, expected: str) -> None:
    assert Identity.of("key", origin) == Identity("key", expected)


def test_identities_are_hashable_values() -> None:
    assert {Identity.of("k", "o"): 1}[Identity("k", "o")] == 1
    assert Identity("k", "o") != Identity("k", "-")


def test_session_round_trips_through_bytes() -> None:
    session = make_session()
    data = encode_session(session)
    assert isinstance(data, bytes)
    assert decode_session(data) == session
    assert msgspec.json.decode(data)["identity"] == {
        "api_key": "dev",
        "origin": "https://dapp.example",
    }


def test_sessions_are_frozen() -> None:
    session = make_session()
    with pytest.raises(AttributeError):
        session.expiry = NOW  # type: ignore[misc]


def test_decode_rejects_garbage() -> None:
    with pytest.raises(msgspec.DecodeError):
        decode_session(b"{}")
    with pytest.raises(msgspec.DecodeError):
        decode_session(b"not json")


def test_expiry_boundary() -> None:
    session = make_session(expiry=NOW)
    assert is_expired(session, NOW)
    assert is_expired(session, NOW + timedelta(seconds=1))
    assert not is_expired(session, NOW - timedelta(microseconds=1))
    tokyo = timezone(timedelta(hours=9))
    assert not is_expired(session, (NOW - timedelta(seconds=1)).astimezone(tokyo))


def test_as_utc() -> None:
    tokyo = timezone(timedelta(hours=9))
    assert as_utc(NOW.astimezone(tokyo)) == NOW
    assert as_utc(NOW.astimezone(tokyo)).utcoffset() == timedelta(0)
    with pytest.raises(ValueError, match="timezone-aware"):
        as_utc(NOW.replace(tzinfo=None))


def test_get_session_result() -> None:
    session = make_session()
    assert get_session_result(session, NOW).session_scopes == session.scopes
    empty = b'{"sessionScopes":{}}'
    assert msgspec.json.encode(get_session_result(None, NOW)) == empty
    assert msgspec.json.encode(get_session_result(session, session.expiry)) == empty


def test_session_changed_params() -> None:
    session = make_session()
    assert session_changed_params(session).session_scopes == session.scopes
    assert session_changed_params(None).session_scopes == {}
