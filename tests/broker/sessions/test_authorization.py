"""wallet_invokeMethod params and authorisation, notification and account checks."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import msgspec
import pytest

from broker.sessions import (
    InvokeRequest,
    authorize_invoke,
    is_notification_granted,
    parse_invoke_method,
    permitted_addresses,
)
from schemas.errors import InvalidParams, Unauthorized

from .helpers import ADDRESS_LOWER, NOW, assert_rejected, make_session, scope

UNAUTHORIZED = "The requested account and/or method has not been authorized by the user."


def invoke(scope_key: str, method: str, params: Any = None) -> InvokeRequest:
    request: dict[str, Any] = {"method": method}
    if params is not None:
        request["params"] = params
    return parse_invoke_method({"scope": scope_key, "request": request})


# --- parse_invoke_method -----------------------------------------------------------------------


def test_parse_invoke_method() -> None:
    params = {
        "scope": "eip155:1337",
        "request": {"method": "eth_call", "params": [{"to": "0x0"}, "latest"]},
        "sessionId": "ignored",
    }
    assert parse_invoke_method(params) == InvokeRequest(
        scope="eip155:1337", method="eth_call", params=[{"to": "0x0"}, "latest"]
    )


def test_inner_params_default_to_an_empty_array_and_may_be_an_object() -> None:
    assert invoke("eip155:1", "eth_blockNumber").params == []
    assert invoke("eip155:1", "m", {"a": 1}).params == {"a": 1}
    assert invoke("wallet", "wallet_scanQRCode").scope == "wallet"


@pytest.mark.parametrize(
    ("params", "match"),
    [
        (None, "wallet_invokeMethod params must be an object"),
        ([], "wallet_invokeMethod params must be an object"),
        ({"request": {"method": "m"}}, "scope must be a CAIP-2 chain id"),
        ({"scope": 1, "request": {"method": "m"}}, "scope must be a CAIP-2 chain id"),
        ({"scope": "eip155", "request": {"method": "m"}}, "scope must be a CAIP-2 chain id"),
        ({"scope": "eip155:01", "request": {"method": "m"}}, "scope must be a CAIP-2 chain id"),
        ({"scope": "eip155:1"}, "request must be an object"),
        ({"scope": "eip155:1", "request": ["m"]}, "request must be an object"),
        ({"scope": "eip155:1", "request": {}}, "request.method must be a non-empty string"),
        ({"scope": "eip155:1", "request": {"method": ""}}, "request.method must be a non-empty"),
        ({"scope": "eip155:1", "request": {"method": 1}}, "request.method must be a non-empty"),
        (
            {"scope": "eip155:1", "request": {"method": "m", "params": None}},
            "request.params must be an array or an object",
        ),
        (
            {"scope": "eip155:1", "request": {"method": "m", "params": "x"}},
            "request.params must be an array or an object",
        ),
    ],
)
def test_malformed_invoke_params(params: Any, match: str) -> None:
    assert_rejected(InvalidParams, parse_invoke_method, params, code=-32602, match=match)


# --- authorize_invoke --------------------------------------------------------------------------


def test_a_granted_method_is_authorised() -> None:
    session = make_session()
    assert (
        authorize_invoke(session, invoke("eip155:1337", "personal_sign"), now=NOW)
        == (session.scopes["eip155:1337"])
    )


@pytest.mark.parametrize(
    ("scope_key", "method"),
    [
        ("eip155:5", "eth_call"),  # scope not granted
        ("eip155:1", "personal_sign"),  # granted on another scope only
        ("eip155:1337", "eth_sendTransaction"),  # never granted
    ],
)
def test_ungranted_calls_are_4100(scope_key: str, method: str) -> None:
    with pytest.raises(Unauthorized) as caught:
        authorize_invoke(make_session(), invoke(scope_key, method), now=NOW)
    assert caught.value.code == 4100
    assert caught.value.message == UNAUTHORIZED


def test_no_session_is_4100() -> None:
    with pytest.raises(Unauthorized):
        authorize_invoke(None, invoke("eip155:1337", "eth_call"), now=NOW)


def test_an_expired_session_is_4100() -> None:
    session = make_session(expiry=NOW)
    with pytest.raises(Unauthorized):
        authorize_invoke(session, invoke("eip155:1337", "eth_call"), now=NOW)
    earlier = NOW - timedelta(seconds=1)
    assert authorize_invoke(session, invoke("eip155:1337", "eth_call"), now=earlier)


def test_the_wallet_scope_is_authorised_like_any_other() -> None:
    session = make_session({"wallet": scope(("wallet_scanQRCode",))})
    assert authorize_invoke(session, invoke("wallet", "wallet_scanQRCode"), now=NOW)


# --- notifications and accounts ---------------------------------------------------------------


def test_notification_granted() -> None:
    session = make_session()
    assert is_notification_granted(session, "eip155:1337", "eth_subscription", now=NOW)
    assert not is_notification_granted(session, "eip155:1", "eth_subscription", now=NOW)
    assert not is_notification_granted(session, "eip155:5", "eth_subscription", now=NOW)
    assert not is_notification_granted(session, "eip155:1337", "other", now=NOW)
    assert not is_notification_granted(None, "eip155:1337", "eth_subscription", now=NOW)
    assert not is_notification_granted(
        session, "eip155:1337", "eth_subscription", now=NOW + timedelta(days=2)
    )


def test_permitted_addresses() -> None:
    session = make_session()
    assert permitted_addresses(session, "eip155:1337", now=NOW) == (ADDRESS_LOWER,)
    assert permitted_addresses(session, "eip155:1", now=NOW) == ()
    assert permitted_addresses(session, "eip155:5", now=NOW) == ()
    assert permitted_addresses(None, "eip155:1337", now=NOW) == ()
    assert permitted_addresses(session, "eip155:1337", now=NOW + timedelta(days=2)) == ()


def test_a_refused_invoke_says_why_in_data() -> None:
    from broker.sessions import InvokeRequest

    session = make_session()
    cases = [
        (None, "eip155:1337", "eth_call", "no session: call wallet_createSession first"),
        (
            session,
            "eip155:5",
            "eth_call",
            "scope eip155:5 is not granted (granted: eip155:1337, eip155:1)",
        ),
        (session, "eip155:1", "personal_sign", "method personal_sign is not granted on eip155:1"),
    ]
    for current, key, method, reason in cases:
        with pytest.raises(Unauthorized) as caught:
            authorize_invoke(current, InvokeRequest(key, method, []), now=NOW)
        assert caught.value.code == 4100
        assert caught.value.data == {"reason": reason}


def test_invoke_params_are_read_from_their_json_as_they_arrive() -> None:
    raw = b'{"scope":"eip155:1","request":{"method":"eth_call","params":{"a":1}}}'
    assert parse_invoke_method(msgspec.Raw(raw)) == InvokeRequest(
        scope="eip155:1", method="eth_call", params={"a": 1}
    )
    for bad, match in (
        (b'{"scope":"eip155:1","request":{"method":""}}', r"request\.method must be a non-empty"),
        (b'{"scope":"eip155","request":{"method":"m"}}', "scope must be a CAIP-2 chain id"),
        (b"[]", "wallet_invokeMethod params must be an object"),
    ):
        with pytest.raises(InvalidParams, match=match):
            parse_invoke_method(msgspec.Raw(bad))
