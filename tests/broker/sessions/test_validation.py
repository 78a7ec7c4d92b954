"""wallet_createSession params: structure, merging, expansion, scoped and session properties."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import msgspec
import pytest

from broker.sessions import SessionRequest, parse_create_session
from schemas.errors import (
    InvalidParams,
    InvalidScopedProperties,
    InvalidSessionProperties,
    RpcError,
    ScopedPropertiesInsideScope,
)

from .helpers import ADDRESS, ADDRESS_LOWER, NOW, OTHER_ADDRESS, assert_rejected, scope

EVM = {"methods": ["eth_call"], "notifications": ["eth_subscription"]}


def parse(params: Any) -> SessionRequest:
    return parse_create_session(params, now=NOW)


def rejected(error: type[RpcError], params: Any, code: int, match: str | None = None) -> RpcError:
    return assert_rejected(error, parse, params, code=code, match=match)


# --- params and scopes objects ---------------------------------------------------------------


@pytest.mark.parametrize("params", [None, [], ["x"], "x", 1, True])
def test_params_must_be_an_object(params: Any) -> None:
    rejected(InvalidParams, params, -32602, "params must be an object")


def test_empty_params_request_nothing() -> None:
    request = parse({})
    assert request == SessionRequest(scopes={})
    assert request.expiry is None


def test_unknown_params_members_are_ignored() -> None:
    request = parse({"sessionId": "0xdead", "optionalScopes": {"eip155:1": EVM}})
    assert list(request.scopes) == ["eip155:1"]


@pytest.mark.parametrize("field", ["optionalScopes", "requiredScopes"])
@pytest.mark.parametrize("value", [None, [], "eip155:1", 1])
def test_scopes_must_be_an_object(field: str, value: Any) -> None:
    rejected(InvalidParams, {field: value}, -32602, f"{field} must be an object")


def test_empty_scopes_objects_request_nothing() -> None:
    assert parse({"optionalScopes": {}, "requiredScopes": {}}).scopes == {}


# --- scope keys ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    ["EIP155:1", "eip155:", "eip155:01", "eip155:0x1", "ab", "eip155:1:0xab", "", "wallet:Eip155"],
)
def test_bad_scope_key(key: str) -> None:
    rejected(
        InvalidParams,
        {"optionalScopes": {key: EVM}},
        -32602,
        f"optionalScopes[{key!r}]: scope key is neither a CAIP-2 chain id nor a namespace",
    )


def test_wallet_scope_keys() -> None:
    request = parse(
        {
            "optionalScopes": {
                "wallet": {"methods": ["wallet_scanQRCode"], "notifications": []},
                "wallet:eip155": {"methods": ["wallet_addEthereumChain"], "notifications": []},
            }
        }
    )
    assert request.scopes == {
        "wallet": scope(("wallet_scanQRCode",)),
        "wallet:eip155": scope(("wallet_addEthereumChain",)),
    }


def test_wallet_references_name_namespaces() -> None:
    request = parse(
        {
            "optionalScopes": {
                "wallet": {"references": ["eip155"], "methods": ["m"], "notifications": []}
            }
        }
    )
    assert list(request.scopes) == ["wallet:eip155"]
    rejected(
        InvalidParams,
        {
            "optionalScopes": {
                "wallet": {"references": ["Eip155"], "methods": [], "notifications": []}
            }
        },
        -32602,
        "references must be an array of wallet chain references",
    )


# --- scope objects ---------------------------------------------------------------------------


@pytest.mark.parametrize("value", [None, [], "x", 1])
def test_scope_must_be_an_object(value: Any) -> None:
    rejected(
        InvalidParams,
        {"optionalScopes": {"eip155:1": value}},
        -32602,
        "optionalScopes['eip155:1']: scope must be an object",
    )


@pytest.mark.parametrize("name", ["methods", "notifications"])
def test_methods_and_notifications_are_required(name: str) -> None:
    body = {key: value for key, value in EVM.items() if key != name}
    rejected(
        InvalidParams,
        {"requiredScopes": {"eip155:1": body}},
        -32602,
        f"requiredScopes['eip155:1']: {name} is required",
    )


@pytest.mark.parametrize("name", ["methods", "notifications"])
@pytest.mark.parametrize("value", [None, "eth_call", {}, [1], [""], ["  "], ["ok", None]])
def test_methods_and_notifications_are_arrays_of_names(name: str, value: Any) -> None:
    rejected(
        InvalidParams,
        {"optionalScopes": {"eip155:1": {**EVM, name: value}}},
        -32602,
        f"optionalScopes['eip155:1']: {name} must be an array of non-empty strings",
    )


def test_empty_methods_and_notifications_are_allowed() -> None:
    request = parse({"optionalScopes": {"eip155:1": {"methods": [], "notifications": []}}})
    assert request.scopes == {"eip155:1": scope()}


def test_duplicate_names_are_dropped() -> None:
    request = parse(
        {"optionalScopes": {"eip155:1": {"methods": ["a", "b", "a"], "notifications": ["n", "n"]}}}
    )
    assert request.scopes["eip155:1"] == scope(("a", "b"), ("n",))


def test_rpc_documents_and_endpoints_are_kept() -> None:
    documents = ["https://example.com/openrpc.json"]
    endpoints = ["https://rpc.example.com", "wss://rpc.example.com/ws"]
    request = parse(
        {
            "optionalScopes": {
                "eip155": {
                    **EVM,
                    "references": ["1", "10"],
                    "rpcDocuments": documents,
                    "rpcEndpoints": endpoints,
                }
            }
        }
    )
    for chain in ("eip155:1", "eip155:10"):
        assert request.scopes[chain].rpc_documents == tuple(documents)
        assert request.scopes[chain].rpc_endpoints == tuple(endpoints)
    encoded = msgspec.json.decode(msgspec.json.encode(request.scopes["eip155:1"]))
    assert encoded["rpcDocuments"] == documents
    assert encoded["rpcEndpoints"] == endpoints
    plain = parse({"optionalScopes": {"eip155:1": EVM}}).scopes["eip155:1"]
    assert "rpcDocuments" not in msgspec.json.decode(msgspec.json.encode(plain))


@pytest.mark.parametrize("value", ["https://x", [1], ["not a url"], [""]])
@pytest.mark.parametrize("name", ["rpcDocuments", "rpcEndpoints"])
def test_rpc_documents_and_endpoints_must_be_arrays_of_urls(name: str, value: Any) -> None:
    rejected(
        InvalidParams,
        {"optionalScopes": {"eip155:1": {**EVM, name: value}}},
        -32602,
        f"optionalScopes['eip155:1']: {name} must be an array of URLs",
    )


@pytest.mark.parametrize("name", ["chains", "foo"])
def test_unknown_scope_property(name: str) -> None:
    rejected(
        InvalidParams,
        {"optionalScopes": {"eip155:1": {**EVM, name: []}}},
        -32602,
        f"optionalScopes['eip155:1']: unsupported scope property {name!r}",
    )


# --- scopedProperties inside a scope: 5301 wins ------------------------------------------------


def test_scoped_properties_inside_a_scope() -> None:
    rejected(
        ScopedPropertiesInsideScope,
        {"optionalScopes": {"eip155:1": {**EVM, "scopedProperties": {}}}},
        5301,
        "optionalScopes['eip155:1']: scopedProperties can only be outside of sessionScopes",
    )


def test_scoped_properties_inside_wins_over_unknown_property_in_same_scope() -> None:
    rejected(
        ScopedPropertiesInsideScope,
        {"optionalScopes": {"eip155:1": {"foo": 1, "scopedProperties": {}}}},
        5301,
    )


def test_scoped_properties_inside_wins_over_faults_elsewhere() -> None:
    params = {
        "requiredScopes": {"eip155:1": {"foo": 1}, "bad key!": EVM},
        "optionalScopes": {"eip155:2": {**EVM, "scopedProperties": {"x": {}}}},
        "scopedProperties": [],
        "sessionProperties": {},
    }
    rejected(ScopedPropertiesInsideScope, params, 5301)


# --- references --------------------------------------------------------------------------------


def test_references_expand_a_namespace() -> None:
    request = parse({"optionalScopes": {"eip155": {**EVM, "references": ["1", "137", "1"]}}})
    assert list(request.scopes) == ["eip155:1", "eip155:137"]
    assert request.scopes["eip155:137"] == scope(("eth_call",), ("eth_subscription",))


def test_references_on_a_chain_key() -> None:
    rejected(
        InvalidParams,
        {"optionalScopes": {"eip155:1": {**EVM, "references": ["1"]}}},
        -32602,
        "optionalScopes['eip155:1']: references are not allowed on a key that names a chain",
    )


@pytest.mark.parametrize("references", [None, "1", [1], [""], ["0x1"], ["01"], ["a" * 33]])
def test_references_must_be_valid(references: Any) -> None:
    rejected(
        InvalidParams,
        {"optionalScopes": {"eip155": {**EVM, "references": references}}},
        -32602,
        "optionalScopes['eip155']: references must be an array of eip155 chain references",
    )


def test_other_namespaces_take_any_caip2_reference() -> None:
    request = parse(
        {"optionalScopes": {"cosmos": {**EVM, "references": ["cosmoshub-3", "iov_main"]}}}
    )
    assert list(request.scopes) == ["cosmos:cosmoshub-3", "cosmos:iov_main"]


@pytest.mark.parametrize("body", [EVM, {**EVM, "references": []}])
def test_namespace_without_references_authorises_no_chain(body: dict[str, Any]) -> None:
    assert parse({"optionalScopes": {"eip155": body}}).scopes == {}


# --- merging -----------------------------------------------------------------------------------


def test_required_and_optional_are_merged_by_union() -> None:
    request = parse(
        {
            "requiredScopes": {"eip155:1": {"methods": ["a", "b"], "notifications": ["n1"]}},
            "optionalScopes": {
                "eip155:1": {
                    "methods": ["b", "c"],
                    "notifications": ["n2"],
                    "accounts": [f"eip155:1:{ADDRESS}"],
                },
                "eip155:2": {"methods": ["d"], "notifications": []},
            },
        }
    )
    assert request.scopes == {
        "eip155:1": scope(("a", "b", "c"), ("n1", "n2"), (f"eip155:1:{ADDRESS_LOWER}",)),
        "eip155:2": scope(("d",)),
    }


def test_expanded_references_merge_with_an_explicit_chain_key() -> None:
    request = parse(
        {
            "optionalScopes": {
                "eip155:1": {"methods": ["a"], "notifications": []},
                "eip155": {"references": ["1", "5"], "methods": ["b"], "notifications": ["n"]},
            },
            "requiredScopes": {
                "eip155": {"references": ["5"], "methods": ["c"], "notifications": []}
            },
        }
    )
    assert request.scopes == {
        "eip155:5": scope(("c", "b"), ("n",)),
        "eip155:1": scope(("a", "b"), ("n",)),
    }


# --- accounts ----------------------------------------------------------------------------------


def test_accounts_are_normalised_and_deduplicated() -> None:
    request = parse(
        {
            "optionalScopes": {
                "eip155:1": {
                    **EVM,
                    "accounts": [f"eip155:1:{ADDRESS}", f"eip155:1:{ADDRESS_LOWER}"],
                }
            }
        }
    )
    assert request.scopes["eip155:1"].accounts == (f"eip155:1:{ADDRESS_LOWER}",)
    assert request.requested_addresses("eip155:1") == (ADDRESS_LOWER,)
    assert request.requested_addresses("eip155:2") == ()


def test_accounts_follow_their_reference_on_expansion() -> None:
    request = parse(
        {
            "optionalScopes": {
                "eip155": {
                    **EVM,
                    "references": ["1", "10"],
                    "accounts": [f"eip155:10:{ADDRESS}", f"eip155:1:{OTHER_ADDRESS}"],
                }
            }
        }
    )
    assert request.scopes["eip155:1"].accounts == (f"eip155:1:{OTHER_ADDRESS}",)
    assert request.scopes["eip155:10"].accounts == (f"eip155:10:{ADDRESS_LOWER}",)


@pytest.mark.parametrize("accounts", [None, "x", {}, [1]])
def test_accounts_must_be_an_array_of_strings(accounts: Any) -> None:
    rejected(
        InvalidParams,
        {"optionalScopes": {"eip155:1": {**EVM, "accounts": accounts}}},
        -32602,
        "optionalScopes['eip155:1']: accounts must be an array of CAIP-10 account ids",
    )


@pytest.mark.parametrize(
    "account", [ADDRESS, "eip155:1", "eip155:1:0x12", f"eip155:1:{ADDRESS}:x", "eip155:1:"]
)
def test_accounts_must_be_caip10(account: str) -> None:
    rejected(
        InvalidParams,
        {"optionalScopes": {"eip155:1": {**EVM, "accounts": [account]}}},
        -32602,
        "optionalScopes['eip155:1']: not a",
    )


@pytest.mark.parametrize(
    ("key", "body", "account"),
    [
        ("eip155:1", EVM, f"eip155:2:{ADDRESS}"),
        ("eip155:1", EVM, "cosmos:1:abc"),
        ("eip155", {**EVM, "references": ["1"]}, f"eip155:2:{ADDRESS}"),
        ("eip155", EVM, f"eip155:1:{ADDRESS}"),
        ("wallet", {"methods": [], "notifications": []}, f"eip155:1:{ADDRESS}"),
        ("wallet:eip155", {"methods": [], "notifications": []}, f"eip155:1:{ADDRESS}"),
    ],
)
def test_accounts_must_be_on_the_scope_chain(key: str, body: dict[str, Any], account: str) -> None:
    rejected(
        InvalidParams,
        {"optionalScopes": {key: {**body, "accounts": [account]}}},
        -32602,
        f"optionalScopes[{key!r}]: account {account!r} is not on a chain of this scope",
    )


def test_wallet_eip155_accounts() -> None:
    request = parse(
        {
            "optionalScopes": {
                "wallet:eip155": {
                    "methods": [],
                    "notifications": [],
                    "accounts": [f"wallet:eip155:{ADDRESS}"],
                }
            }
        }
    )
    assert request.requested_addresses("wallet:eip155") == (ADDRESS_LOWER,)


# --- scopedProperties: 5300 --------------------------------------------------------------------


def test_scoped_properties_are_kept() -> None:
    params = {
        "optionalScopes": {"eip155": {**EVM, "references": ["1"]}, "eip155:5": EVM},
        "scopedProperties": {"eip155": {"a": 1}, "eip155:1": {"b": [2]}, "eip155:5": {}},
    }
    request = parse(params)
    assert request.scoped_properties == params["scopedProperties"]
    params["scopedProperties"]["eip155:1"]["b"].append(3)
    assert request.scoped_properties["eip155:1"] == {"b": [2]}


@pytest.mark.parametrize("value", [None, [], "x", 1])
def test_scoped_properties_must_be_an_object(value: Any) -> None:
    rejected(
        InvalidScopedProperties,
        {"optionalScopes": {"eip155:1": EVM}, "scopedProperties": value},
        5300,
        "scopedProperties must be an object",
    )


def test_empty_scoped_properties_are_an_object_of_objects() -> None:
    request = parse({"optionalScopes": {"eip155:1": EVM}, "scopedProperties": {}})
    assert request.scoped_properties == {}


@pytest.mark.parametrize("value", [None, [], "x", 1])
def test_scoped_properties_values_must_be_objects(value: Any) -> None:
    rejected(
        InvalidScopedProperties,
        {"optionalScopes": {"eip155:1": EVM}, "scopedProperties": {"eip155:1": value}},
        5300,
        "scopedProperties['eip155:1'] must be an object",
    )


@pytest.mark.parametrize("key", ["eip155:2", "eip155", "wallet", "nonsense"])
def test_scoped_properties_keys_must_be_requested(key: str) -> None:
    rejected(
        InvalidScopedProperties,
        {"requiredScopes": {"eip155:1": EVM}, "scopedProperties": {key: {}}},
        5300,
        f"scopedProperties[{key!r}]: not a requested scope",
    )


def test_malformed_scopes_are_reported_before_scoped_properties() -> None:
    rejected(
        InvalidParams,
        {"optionalScopes": {"eip155:1": {"methods": []}}, "scopedProperties": []},
        -32602,
    )


# --- sessionProperties: 5302 -------------------------------------------------------------------


@pytest.mark.parametrize("value", [None, [], "x", 1, {}])
def test_session_properties_must_be_a_non_empty_object(value: Any) -> None:
    rejected(
        InvalidSessionProperties,
        {"sessionProperties": value},
        5302,
        "sessionProperties must be a non-empty object",
    )


@pytest.mark.parametrize(
    "expiry", [None, 1735732800, "", "tomorrow", "2025-13-01T00:00:00Z", "2025", ["2026-01-01"]]
)
def test_expiry_must_be_iso8601(expiry: Any) -> None:
    rejected(
        InvalidSessionProperties,
        {"sessionProperties": {"expiry": expiry}},
        5302,
        "sessionProperties.expiry must be an ISO 8601 timestamp",
    )


@pytest.mark.parametrize("expiry", ["9999-12-31T23:59:59-23:59", "0001-01-01T00:00:00+23:59"])
def test_an_expiry_beyond_the_representable_range_is_5302_not_an_internal_error(
    expiry: str,
) -> None:
    rejected(
        InvalidSessionProperties,
        {"sessionProperties": {"expiry": expiry}},
        5302,
        "sessionProperties.expiry is outside the representable range",
    )


@pytest.mark.parametrize(
    "expiry",
    ["2025-01-01T12:00:00Z", "2025-01-01T11:59:59Z", "2024-06-01", "2025-01-01T13:00:00+02:00"],
)
def test_expiry_must_be_in_the_future(expiry: str) -> None:
    rejected(
        InvalidSessionProperties,
        {"sessionProperties": {"expiry": expiry}},
        5302,
        "sessionProperties.expiry must be in the future",
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2025-01-02T00:00:00Z", datetime(2025, 1, 2, tzinfo=UTC)),
        ("2025-01-02T02:00:00+02:00", datetime(2025, 1, 2, tzinfo=UTC)),
        ("2025-01-02T00:00:00", datetime(2025, 1, 2, tzinfo=UTC)),  # no offset: UTC
        ("2025-01-01T12:00:00.5Z", datetime(2025, 1, 1, 12, 0, 0, 500000, tzinfo=UTC)),
    ],
)
def test_expiry_is_read_as_utc(text: str, expected: datetime) -> None:
    request = parse({"sessionProperties": {"expiry": text}})
    assert request.expiry == expected
    assert request.expiry is not None
    assert request.expiry.utcoffset() == timedelta(0)


@pytest.mark.parametrize("value", [None, [], "x", 1, True])
def test_global_config_must_be_an_object(value: Any) -> None:
    rejected(
        InvalidSessionProperties,
        {"sessionProperties": {"globalConfig": value}},
        5302,
        "sessionProperties.globalConfig must be an object",
    )


def test_session_properties_keep_global_config_and_drop_the_rest() -> None:
    params: dict[str, Any] = {
        "sessionProperties": {"globalConfig": {"theme": ["dark"]}, "caip154-mandatory": "true"}
    }
    request = parse(params)
    assert request.global_config == {"theme": ["dark"]}
    assert request.expiry is None
    params["sessionProperties"]["globalConfig"]["theme"].append("x")
    assert request.global_config == {"theme": ["dark"]}


def test_scope_faults_are_reported_before_session_properties() -> None:
    rejected(
        InvalidParams,
        {"optionalScopes": {"eip155:1": {"methods": []}}, "sessionProperties": {}},
        -32602,
    )


def test_scoped_properties_are_reported_before_session_properties() -> None:
    rejected(
        InvalidScopedProperties,
        {"optionalScopes": {"eip155:1": EVM}, "scopedProperties": [], "sessionProperties": {}},
        5300,
    )


def test_now_must_be_timezone_aware() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        parse_create_session({}, now=datetime(2025, 1, 1))


def test_now_in_another_zone_is_the_same_moment() -> None:
    paris = timezone(timedelta(hours=1))
    request = parse_create_session(
        {"sessionProperties": {"expiry": "2025-01-01T12:00:01Z"}}, now=NOW.astimezone(paris)
    )
    assert request.expiry == NOW + timedelta(seconds=1)


def test_params_are_read_from_their_json_as_they_arrive() -> None:
    params = {"optionalScopes": {"eip155:1": EVM}, "sessionProperties": {"globalConfig": {}}}
    raw = msgspec.Raw(msgspec.json.encode(params))
    assert parse(raw) == parse(params)
    with pytest.raises(InvalidParams, match="wallet_createSession params must be an object"):
        parse(msgspec.Raw(b"null"))
    with pytest.raises(InvalidSessionProperties, match=r"sessionProperties\.expiry must be an ISO"):
        parse(msgspec.Raw(b'{"sessionProperties":{"expiry":1}}'))
