"""Support filtering (5100/5101/5102) and granting a session."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest

from broker.sessions import (
    DEFAULT_MAX_EXPIRY,
    ChainSupport,
    Session,
    SessionRequest,
    apply_support,
    create_session_result,
    grant,
    parse_create_session,
)
from broker.sessions.grant import SupportLookup
from broker.sessions.scopes import parse_scopes
from schemas.errors import (
    InvalidSessionProperties,
    MethodsUnsupported,
    NetworksUnsupported,
    NotificationsNotSupported,
    RpcError,
    UserRejected,
)

from .helpers import ADDRESS, ADDRESS_LOWER, DEV, NOW, OTHER_ADDRESS, SUPPORTED, scope

SERVED = list(SUPPORTED)


def request_of(params: dict[str, Any]) -> SessionRequest:
    return parse_create_session(params, now=NOW)


def granted(
    params: dict[str, Any],
    *,
    accounts: Mapping[str, Sequence[str]] | None = None,
    supported: SupportLookup = SUPPORTED,
    now: datetime = NOW,
    **kwargs: Any,
) -> Session:
    return grant(
        request_of(params),
        identity=DEV,
        supported=supported,
        accounts=accounts or {},
        now=now,
        **kwargs,
    )


DEV_SCOPE = {"methods": ["eth_call", "eth_sendTransaction"], "notifications": ["eth_subscription"]}


# --- apply_support ---------------------------------------------------------------------------


def test_unserved_chains_are_dropped_and_names_intersected() -> None:
    offer = apply_support(
        request_of(
            {
                "optionalScopes": {
                    "eip155:999": DEV_SCOPE,
                    "eip155:1337": {**DEV_SCOPE, "accounts": [f"eip155:1337:{ADDRESS}"]},
                }
            }
        ),
        SUPPORTED,
    )
    assert offer.scopes == {
        "eip155:1337": scope(
            ("eth_call",), ("eth_subscription",), (f"eip155:1337:{ADDRESS_LOWER}",)
        )
    }


def test_apply_support_leaves_the_request_unchanged_and_is_idempotent() -> None:
    request = request_of({"optionalScopes": {"eip155:1337": DEV_SCOPE, "eip155:5": DEV_SCOPE}})
    before = msgspec.structs.asdict(request)
    offer = apply_support(request, SUPPORTED)
    assert msgspec.structs.asdict(request) == before
    assert apply_support(offer, SUPPORTED) == offer


def test_a_callable_lookup_works_like_a_mapping() -> None:
    request = request_of({"optionalScopes": {"eip155:1337": DEV_SCOPE, "eip155:5": DEV_SCOPE}})
    assert apply_support(request, SUPPORTED.get) == apply_support(request, SUPPORTED)


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"optionalScopes": {"eip155:5": DEV_SCOPE}},
        {"optionalScopes": {"eip155": DEV_SCOPE}},  # no references: no chain at all
        {"optionalScopes": {"wallet": DEV_SCOPE}},
    ],
)
def test_no_served_chain_is_5100(params: dict[str, Any]) -> None:
    request = request_of(params)
    with pytest.raises(NetworksUnsupported) as caught:
        apply_support(request, SUPPORTED)
    assert caught.value.code == 5100
    assert caught.value.message == "Requested networks are not supported"


def test_no_served_method_is_5101() -> None:
    request = request_of(
        {"optionalScopes": {"eip155:1": {"methods": ["x", "y"], "notifications": []}}}
    )
    with pytest.raises(MethodsUnsupported) as caught:
        apply_support(request, SUPPORTED)
    assert caught.value.code == 5101


def test_no_served_notification_is_5102() -> None:
    request = request_of({"optionalScopes": {"eip155:1": {"methods": [], "notifications": ["z"]}}})
    with pytest.raises(NotificationsNotSupported) as caught:
        apply_support(request, SUPPORTED)
    assert caught.value.code == 5102


def test_methods_are_checked_before_notifications() -> None:
    request = request_of(
        {"optionalScopes": {"eip155:1": {"methods": ["x"], "notifications": ["z"]}}}
    )
    with pytest.raises(MethodsUnsupported):
        apply_support(request, SUPPORTED)


def test_one_served_name_anywhere_is_enough() -> None:
    offer = apply_support(
        request_of(
            {
                "optionalScopes": {
                    "eip155:1": {"methods": ["x"], "notifications": ["z"]},
                    "eip155:1337": {
                        "methods": ["eth_getLogs"],
                        "notifications": ["eth_subscription"],
                    },
                }
            }
        ),
        SUPPORTED,
    )
    assert offer.scopes["eip155:1"] == scope()
    assert offer.scopes["eip155:1337"] == scope(("eth_getLogs",), ("eth_subscription",))


def test_names_requested_only_on_dropped_chains_do_not_count() -> None:
    offer = apply_support(
        request_of(
            {
                "optionalScopes": {
                    "eip155:5": {"methods": ["x"], "notifications": ["z"]},
                    "eip155:1": {"methods": [], "notifications": []},
                }
            }
        ),
        SUPPORTED,
    )
    assert offer.scopes == {"eip155:1": scope()}


# --- grant -------------------------------------------------------------------------------------


def test_grant_builds_the_session() -> None:
    session = granted(
        {
            "optionalScopes": {"eip155:1337": DEV_SCOPE, "eip155:1": DEV_SCOPE},
            "sessionProperties": {"globalConfig": {"a": 1}},
        },
        accounts={"eip155:1337": [ADDRESS, OTHER_ADDRESS, ADDRESS_LOWER]},
    )
    assert session == Session(
        identity=DEV,
        scopes={
            "eip155:1337": scope(
                ("eth_call",),
                ("eth_subscription",),
                (f"eip155:1337:{ADDRESS_LOWER}", f"eip155:1337:{OTHER_ADDRESS}"),
            ),
            "eip155:1": scope(("eth_call",), ("eth_subscription",), ()),
        },
        expiry=NOW + DEFAULT_MAX_EXPIRY,
        global_config={"a": 1},
        created_at=NOW,
    )


def test_grant_never_exceeds_support_even_without_an_offer() -> None:
    session = granted({"optionalScopes": {"eip155:1": DEV_SCOPE, "eip155:9": DEV_SCOPE}})
    assert session.scopes == {"eip155:1": scope(("eth_call",), ("eth_subscription",))}


def test_grant_raises_support_errors() -> None:
    with pytest.raises(NetworksUnsupported):
        granted({"optionalScopes": {"eip155:9": DEV_SCOPE}})


def test_requested_accounts_are_not_granted_unless_chosen() -> None:
    session = granted(
        {"optionalScopes": {"eip155:1337": {**DEV_SCOPE, "accounts": [f"eip155:1337:{ADDRESS}"]}}}
    )
    assert session.scopes["eip155:1337"].accounts == ()


def test_accounts_for_unrequested_chains_are_ignored() -> None:
    session = granted(
        {"optionalScopes": {"eip155:1": DEV_SCOPE}}, accounts={"eip155:1337": [ADDRESS]}
    )
    assert session.scopes["eip155:1"].accounts == ()


@pytest.mark.parametrize("address", ["0x12", "not an address", ADDRESS + "00"])
def test_bad_policy_accounts_are_a_shell_bug(address: str) -> None:
    with pytest.raises(ValueError, match="not a"):
        granted({"optionalScopes": {"eip155:1": DEV_SCOPE}}, accounts={"eip155:1": [address]})


def test_the_wallet_scope_holds_no_accounts() -> None:
    wallet = {"wallet": ChainSupport(frozenset({"wallet_scanQRCode"}), frozenset())}
    params = {"optionalScopes": {"wallet": {"methods": ["wallet_scanQRCode"], "notifications": []}}}
    assert granted(params, supported=wallet).scopes == {"wallet": scope(("wallet_scanQRCode",))}
    with pytest.raises(ValueError, match="cannot hold accounts"):
        granted(params, supported=wallet, accounts={"wallet": [ADDRESS]})


def test_keep_narrows_the_granted_scopes() -> None:
    session = granted(
        {"optionalScopes": {"eip155:1337": DEV_SCOPE, "eip155:1": DEV_SCOPE}},
        keep=parse_scopes({"eip155:1": DEV_SCOPE, "eip155:42": DEV_SCOPE}, field="sessionScopes"),
    )
    assert list(session.scopes) == ["eip155:1"]


def test_keep_narrows_methods_and_notifications_and_never_widens() -> None:
    # personal_sign is served but was not requested: the operator cannot add it
    requested = {"methods": ["eth_call", "eth_getLogs"], "notifications": ["eth_subscription"]}
    limit = {"methods": ["eth_getLogs", "personal_sign"], "notifications": []}
    session = granted(
        {"optionalScopes": {"eip155:1337": requested}},
        keep=parse_scopes({"eip155:1337": limit}, field="sessionScopes"),
    )
    assert session.scopes["eip155:1337"].methods == ("eth_getLogs",)
    assert session.scopes["eip155:1337"].notifications == ()


def test_keeping_nothing_is_a_rejection() -> None:
    with pytest.raises(UserRejected) as caught:
        granted({"optionalScopes": {"eip155:1": DEV_SCOPE}}, keep={})
    assert caught.value.code == 4001


# --- expiry ------------------------------------------------------------------------------------


def test_expiry_defaults_to_the_maximum() -> None:
    session = granted({"optionalScopes": {"eip155:1": DEV_SCOPE}}, max_expiry=timedelta(hours=2))
    assert session.expiry == NOW + timedelta(hours=2)


def test_an_earlier_requested_expiry_is_kept() -> None:
    session = granted(
        {
            "optionalScopes": {"eip155:1": DEV_SCOPE},
            "sessionProperties": {"expiry": "2025-01-02T00:00:00+00:00"},
        }
    )
    assert session.expiry == datetime(2025, 1, 2, tzinfo=UTC)


def test_a_later_requested_expiry_is_capped() -> None:
    session = granted(
        {
            "optionalScopes": {"eip155:1": DEV_SCOPE},
            "sessionProperties": {"expiry": "2030-01-01T00:00:00Z"},
        }
    )
    assert session.expiry == NOW + timedelta(days=7)
    result = create_session_result(session)
    assert result.session_properties.expiry == "2025-01-08T12:00:00+00:00"


def test_expiry_is_whole_seconds() -> None:
    session = granted(
        {"optionalScopes": {"eip155:1": DEV_SCOPE}},
        now=NOW + timedelta(microseconds=750_000),
    )
    assert session.expiry == NOW + DEFAULT_MAX_EXPIRY
    assert session.created_at == NOW + timedelta(microseconds=750_000)


def test_an_expiry_that_passed_during_approval_is_5302() -> None:
    request = request_of(
        {
            "optionalScopes": {"eip155:1": DEV_SCOPE},
            "sessionProperties": {"expiry": "2025-01-01T12:01:00Z"},
        }
    )
    with pytest.raises(InvalidSessionProperties) as caught:
        grant(
            request, identity=DEV, supported=SUPPORTED, accounts={}, now=NOW + timedelta(minutes=5)
        )
    assert caught.value.code == 5302


@pytest.mark.parametrize("max_expiry", [timedelta(0), timedelta(seconds=-1)])
def test_max_expiry_must_be_positive(max_expiry: timedelta) -> None:
    with pytest.raises(ValueError, match="max_expiry"):
        granted({"optionalScopes": {"eip155:1": DEV_SCOPE}}, max_expiry=max_expiry)


def test_grant_needs_an_aware_clock() -> None:
    request = request_of({"optionalScopes": {"eip155:1": DEV_SCOPE}})
    with pytest.raises(ValueError, match="timezone-aware"):
        grant(request, identity=DEV, supported=SUPPORTED, accounts={}, now=datetime(2025, 1, 1))


# --- the wire result ---------------------------------------------------------------------------


def test_create_session_result_on_the_wire() -> None:
    session = granted(
        {
            "requiredScopes": {"eip155:1337": {**DEV_SCOPE, "methods": ["personal_sign"]}},
            "optionalScopes": {"eip155:1337": DEV_SCOPE},
            "sessionProperties": {"expiry": "2025-01-01T18:30:00.9+01:00"},
        },
        accounts={"eip155:1337": [ADDRESS]},
    )
    assert msgspec.json.decode(msgspec.json.encode(create_session_result(session))) == {
        "sessionScopes": {
            "eip155:1337": {
                "methods": ["personal_sign", "eth_call"],
                "notifications": ["eth_subscription"],
                "accounts": [f"eip155:1337:{ADDRESS_LOWER}"],
            }
        },
        "sessionProperties": {"expiry": "2025-01-01T17:30:00+00:00", "globalConfig": {}},
    }


@pytest.mark.parametrize(
    ("params", "data"),
    [
        ({}, {"reason": "no scope was requested", "supported": SERVED}),
        (
            {"optionalScopes": {"eip155": DEV_SCOPE}},
            {
                "reason": "no scope names a chain: 'eip155' is a namespace without references: "
                "write 'eip155:<reference>' or add references",
                "supported": SERVED,
            },
        ),
        (
            # a bare reference, as dapps write chain ids, is not mistaken for "nothing requested"
            {"optionalScopes": {"1337": DEV_SCOPE}},
            {
                "reason": "no scope names a chain: '1337' reads as a namespace; a chain is "
                "written with one, e.g. 'eip155:1337'",
                "supported": SERVED,
            },
        ),
        (
            {"optionalScopes": {"eip155:5": DEV_SCOPE, "eip155:7": DEV_SCOPE}},
            {"unsupported": ["eip155:5", "eip155:7"], "supported": SERVED},
        ),
        (
            {"optionalScopes": {"eip155:1": {"methods": ["x", "y"], "notifications": []}}},
            {"unsupported": ["x", "y"]},
        ),
        (
            {"optionalScopes": {"eip155:1": {"methods": [], "notifications": ["z"]}}},
            {"unsupported": ["z"]},
        ),
    ],
)
def test_unsupported_requests_say_what_is_not_served_in_data(
    params: dict[str, Any], data: dict[str, Any]
) -> None:
    with pytest.raises(RpcError) as caught:
        apply_support(request_of(params), SUPPORTED)
    assert caught.value.data == data


def test_a_5101_on_a_chain_without_signing_accounts_says_so() -> None:
    """A web process on upstream networks holds no keys unless [accounts] gives some."""
    keyless = {
        "eip155:1": ChainSupport(
            methods=frozenset({"eth_call"}), notifications=frozenset(), signing=False
        )
    }
    request = request_of(
        {"optionalScopes": {"eip155:1": {"methods": ["personal_sign"], "notifications": []}}}
    )
    with pytest.raises(RpcError) as caught:
        apply_support(request, keyless)
    assert caught.value.code == 5101
    assert caught.value.data == {
        "unsupported": ["personal_sign"],
        "reason": "the wallet holds no signing accounts on eip155:1, so no signing method is "
        "offered there (the server's [accounts] configures them)",
    }


def test_a_5100_names_the_chains_served_by_a_lookup_function() -> None:
    request = request_of({"optionalScopes": {"eip155:5": DEV_SCOPE}})
    with pytest.raises(RpcError) as caught:
        apply_support(request, SUPPORTED.get, served=["eip155:1337"])
    assert caught.value.data == {"unsupported": ["eip155:5"], "supported": ["eip155:1337"]}
