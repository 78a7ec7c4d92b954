"""Scope updates by the operator, revocation, and diffs between sessions."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from broker.sessions import (
    ScopeUpdate,
    diff_sessions,
    parse_revoke_session,
    revoke_scopes,
    session_changed_params,
    update_scopes,
)
from schemas.errors import InvalidParams, ScopedPropertiesInsideScope

from .helpers import ADDRESS, ADDRESS_LOWER, SUPPORTED, assert_rejected, make_session, scope

# --- wallet_revokeSession params ------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "scopes"),
    [
        ({}, None),
        ([], None),
        (["ignored"], None),
        ({"scopes": None}, None),
        ({"scopes": ["eip155:1"], "sessionId": "x"}, ["eip155:1"]),
        ({"scopes": []}, []),
    ],
)
def test_revoke_params_name_some_scopes_or_all(params: Any, scopes: list[str] | None) -> None:
    assert parse_revoke_session(params) == scopes
    assert parse_revoke_session(msgspec.Raw(msgspec.json.encode(params))) == scopes


@pytest.mark.parametrize(
    ("params", "match"),
    [
        (None, "params must be an object"),
        ("all", "params must be an object"),
        ({"scopes": "eip155:1"}, "scopes must be an array of scope strings"),
        ({"scopes": ["eip155:1", 1]}, "scopes must be an array of scope strings"),
    ],
)
def test_malformed_revoke_params(params: Any, match: str) -> None:
    assert_rejected(InvalidParams, parse_revoke_session, params, code=-32602, match=match)


# --- revoke_scopes -----------------------------------------------------------------------------


def test_revoke_all() -> None:
    session = make_session()
    update = revoke_scopes(session, None)
    assert update == ScopeUpdate(session=None, changed=True, removed=("eip155:1337", "eip155:1"))
    assert msgspec.json.encode(session_changed_params(update.session)) == b'{"sessionScopes":{}}'


def test_revoke_some() -> None:
    session = make_session()
    update = revoke_scopes(session, ["eip155:1", "eip155:5"])
    assert update.changed
    assert update.removed == ("eip155:1",)
    assert update.session is not None
    assert list(update.session.scopes) == ["eip155:1337"]
    assert update.session.expiry == session.expiry
    assert update.session.identity == session.identity
    assert list(session.scopes) == ["eip155:1337", "eip155:1"]  # the old value is untouched


@pytest.mark.parametrize("scopes", [[], ["eip155:5"]])
def test_revoking_nothing_granted_changes_nothing(scopes: list[str]) -> None:
    session = make_session()
    assert revoke_scopes(session, scopes) == ScopeUpdate(session=session, changed=False, removed=())


def test_revoking_the_last_scopes_ends_the_session() -> None:
    update = revoke_scopes(make_session(), ["eip155:1", "eip155:1337"])
    assert update.session is None
    assert update.removed == ("eip155:1337", "eip155:1")


def test_revoke_without_a_session() -> None:
    assert revoke_scopes(None, None) == ScopeUpdate(session=None, changed=False, removed=())


# --- update_scopes -----------------------------------------------------------------------------


def test_update_replaces_the_scopes() -> None:
    session = make_session()
    update = update_scopes(
        session,
        {
            "eip155:1337": {
                "methods": ["eth_call"],
                "notifications": [],
                "accounts": [f"eip155:1337:{ADDRESS}"],
            },
            "eip155": {"references": ["10"], "methods": ["eth_call"], "notifications": []},
        },
    )
    assert update.changed
    assert update.removed == ("eip155:1",)
    assert update.session is not None
    assert update.session.scopes == {
        "eip155:1337": scope(("eth_call",), (), (f"eip155:1337:{ADDRESS_LOWER}",)),
        "eip155:10": scope(("eth_call",)),
    }
    assert update.session.expiry == session.expiry
    params = msgspec.json.decode(msgspec.json.encode(session_changed_params(update.session)))
    assert list(params["sessionScopes"]) == ["eip155:1337", "eip155:10"]


def test_an_identical_update_changes_nothing() -> None:
    session = make_session()
    scopes = {
        key: {
            "methods": list(s.methods),
            "notifications": list(s.notifications),
            "accounts": list(s.accounts),
        }
        for key, s in session.scopes.items()
    }
    update = update_scopes(session, scopes)
    assert not update.changed
    assert update.removed == ()


def test_narrowing_methods_is_a_change_without_removal() -> None:
    session = make_session()
    update = update_scopes(
        session,
        {
            "eip155:1337": {"methods": ["eth_call"], "notifications": ["eth_subscription"]},
            "eip155:1": {"methods": ["eth_call"], "notifications": []},
        },
    )
    assert update.changed
    assert update.removed == ()


def test_an_empty_update_ends_the_session() -> None:
    update = update_scopes(make_session(), {})
    assert update == ScopeUpdate(session=None, changed=True, removed=("eip155:1337", "eip155:1"))


def test_update_with_support_drops_what_is_not_served() -> None:
    update = update_scopes(
        make_session(),
        {
            "eip155:1": {"methods": ["eth_call", "eth_sign"], "notifications": ["x"]},
            "eip155:9": {"methods": ["eth_call"], "notifications": []},
        },
        supported=SUPPORTED,
    )
    assert update.session is not None
    assert update.session.scopes == {"eip155:1": scope(("eth_call",))}
    assert update.removed == ("eip155:1337",)


@pytest.mark.parametrize(
    "new_scopes",
    [
        None,
        [],
        {"bad key": {"methods": [], "notifications": []}},
        {"eip155:1": {"methods": []}},
        {"eip155:1": {"methods": [], "notifications": [], "accounts": [f"eip155:2:{ADDRESS}"]}},
    ],
)
def test_a_malformed_update_is_rejected(new_scopes: Any) -> None:
    session = make_session()
    assert_rejected(InvalidParams, lambda v: update_scopes(session, v), new_scopes, code=-32602)
    assert session == make_session()


def test_scoped_properties_in_an_update_is_5301() -> None:
    assert_rejected(
        ScopedPropertiesInsideScope,
        lambda v: update_scopes(make_session(), v),
        {"eip155:1": {"methods": [], "notifications": [], "scopedProperties": {}, "x": 1}},
        code=5301,
    )


# --- diff_sessions -----------------------------------------------------------------------------


def test_diff_for_a_replacing_create_session() -> None:
    old = make_session()
    new = make_session({"eip155:1": scope(("eth_call",)), "eip155:5": scope()})
    assert diff_sessions(old, new) == ScopeUpdate(
        session=new, changed=True, removed=("eip155:1337",)
    )
    assert diff_sessions(None, new) == ScopeUpdate(session=new, changed=True, removed=())
    assert diff_sessions(old, old) == ScopeUpdate(session=old, changed=False, removed=())
