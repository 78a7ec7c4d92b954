"""The 2025 CAIP-25 dialect, read and answered; tested on the examples of the CAIP-25 text.

The request examples are CAIP-25's own (ChainAgnostic/CAIPs, CAIPs/caip-25.md, revision of
2025-08-07), with the expiry moved into the future of the tests' clock.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from broker.sessions import ChainSupport, Session, grant, parse_create_session
from broker.sessions.dialects import changed_params, create_result, get_result
from broker.sessions.model import CURRENT, LEGACY
from schemas.errors import InvalidParams, InvalidSessionProperties

from .helpers import DEV, NOW, assert_rejected

EXPIRY = "2025-01-02T12:00:00+00:00"
EVM_CHAINS = ["1", "10", "130", "324", "2741", "8453", "42161", "59144", "534352", "747474"]
EXAMPLE_1 = {
    "scopes": {
        "eip155": {
            "chains": EVM_CHAINS,
            "methods": ["eth_sendTransaction", "personal_sign"],
            "notifications": ["accountsChanged", "chainChanged"],
        }
    },
    "properties": {"expiry": EXPIRY},
}
EXAMPLE_2 = {
    "scopes": {
        "eip155": {
            "chains": ["1", "10", "324", "8453", "42161"],
            "methods": [
                "eth_sendTransaction",
                "personal_sign",
                "wallet_grantPermissions",
                "wallet_getAssets",
                "wallet_sendCalls",
            ],
            "notifications": ["accountsChanged", "chainChanged"],
        },
        "solana": {
            "chains": ["5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", "4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z"],
            "methods": [
                "solana_signMessage",
                "solana_signTransaction",
                "solana_signAndSendTransaction",
            ],
            "notifications": [],
        },
    },
    "properties": {"expiry": EXPIRY},
}
ACCOUNT = "0xab16a96d359ec26a11e2c2b3d8f8b8942d5bfcdb"
OTHER = "0x0495766cd136138fc492dd499b8dc87a92d6685b"
SOLANA_ACCOUNT = "6LmSRCiu3z6NCSpF19oz1pHXkYkN4jWbj9K1nVELpDkT"


def parse(params: Any) -> Any:
    return parse_create_session(params, now=NOW)


def everything(chains: list[str], methods: list[str], notifications: list[str]) -> Any:
    support = ChainSupport(methods=frozenset(methods), notifications=frozenset(notifications))
    return {chain: support for chain in chains}


def granted(params: Any, accounts: dict[str, list[str]]) -> Session:
    request = parse(params)
    methods = [m for s in request.scopes.values() for m in s.methods]
    notifications = [n for s in request.scopes.values() for n in s.notifications]
    supported = everything(list(request.scopes), methods, notifications)
    return grant(request, identity=DEV, supported=supported, accounts=accounts, now=NOW)


def test_example_1_reads_as_ten_chains_with_the_namespace_layout_kept() -> None:
    request = parse(EXAMPLE_1)
    assert request.dialect == CURRENT
    assert list(request.scopes) == [f"eip155:{c}" for c in EVM_CHAINS]
    assert request.layout == {"eip155": tuple(f"eip155:{c}" for c in EVM_CHAINS)}
    assert request.expiry is not None
    assert request.expiry.isoformat() == EXPIRY


def test_example_1_is_answered_in_one_namespace_scope_with_bare_accounts() -> None:
    session = granted(EXAMPLE_1, {f"eip155:{c}": [ACCOUNT] for c in EVM_CHAINS})
    result = msgspec.to_builtins(create_result(session))
    assert result == {
        "scopes": {
            "eip155": {
                "chains": EVM_CHAINS,
                "accounts": [ACCOUNT],
                "methods": ["eth_sendTransaction", "personal_sign"],
                "notifications": ["accountsChanged", "chainChanged"],
            }
        },
        "properties": {"expiry": EXPIRY},
    }


def test_example_2_splits_chains_whose_grants_differ_and_keeps_solana_case() -> None:
    accounts = {
        "eip155:1": [ACCOUNT],
        "eip155:10": [ACCOUNT],
        "eip155:324": [ACCOUNT],
        "eip155:8453": [ACCOUNT],
        "eip155:42161": [ACCOUNT, OTHER],  # another account: its own scope, as in the example
        "solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z": [SOLANA_ACCOUNT],
    }
    session = granted(EXAMPLE_2, accounts)
    scopes = msgspec.to_builtins(create_result(session))["scopes"]
    assert list(scopes) == [
        "eip155",
        "eip155:42161",
        "solana",
        "solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z",
    ]
    assert scopes["eip155"]["chains"] == ["1", "10", "324", "8453"]
    assert scopes["eip155"]["accounts"] == [ACCOUNT]
    assert scopes["eip155:42161"]["accounts"] == [ACCOUNT, OTHER]
    assert "chains" not in scopes["eip155:42161"]
    assert scopes["solana"] == {
        "chains": ["5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"],
        "accounts": [],
        "methods": EXAMPLE_2["scopes"]["solana"]["methods"],  # type: ignore[index]
        "notifications": [],
    }
    # base58 keeps its case
    assert scopes["solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z"]["accounts"] == [SOLANA_ACCOUNT]


def test_chain_keyed_scopes_and_bare_or_caip10_accounts_are_read() -> None:
    request = parse(
        {
            "scopes": {
                "eip155:1337": {
                    "methods": ["eth_call"],
                    "notifications": [],
                    "accounts": [ACCOUNT, f"eip155:1337:{OTHER}"],
                },
                "eip155": {"chains": ["eip155:1", "10"], "methods": [], "notifications": []},
            }
        }
    )
    assert request.scopes["eip155:1337"].accounts == (
        f"eip155:1337:{ACCOUNT}",
        f"eip155:1337:{OTHER}",
    )
    assert list(request.scopes) == ["eip155:1337", "eip155:1", "eip155:10"]


def test_other_properties_are_kept_and_answered() -> None:
    params = {**EXAMPLE_1, "properties": {"expiry": EXPIRY, "caip154-mandatory": "true"}}
    session = granted(params, {})
    assert create_result(session)["properties"] == {
        "expiry": EXPIRY,
        "caip154-mandatory": "true",
    }


def test_get_session_and_session_changed_answer_in_the_session_dialect() -> None:
    current = granted(EXAMPLE_1, {})
    legacy = granted(
        {"optionalScopes": {"eip155:1": {"methods": ["eth_call"], "notifications": []}}}, {}
    )
    assert legacy.dialect == LEGACY
    assert set(msgspec.to_builtins(get_result(current, NOW, LEGACY))) == {"scopes", "properties"}
    assert set(msgspec.to_builtins(get_result(legacy, NOW, CURRENT))) == {"sessionScopes"}
    assert get_result(None, NOW, CURRENT) == {"scopes": {}}
    assert msgspec.to_builtins(get_result(None, NOW, LEGACY)) == {"sessionScopes": {}}
    assert set(changed_params(current, LEGACY)) == {"scopes"}
    assert changed_params(None, CURRENT) == {"scopes": {}}
    assert msgspec.to_builtins(changed_params(None, LEGACY)) == {"sessionScopes": {}}


def test_a_session_stored_by_an_older_version_reads_as_the_2022_dialect() -> None:
    stored = msgspec.json.encode(granted(EXAMPLE_1, {}))
    old = msgspec.json.decode(stored, type=dict[str, Any])
    del old["dialect"], old["layout"]
    session = msgspec.json.decode(msgspec.json.encode(old), type=Session)
    assert session.dialect == LEGACY


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"optionalScopes": {}, "scopes": {}}, "optionalScopes"),
        ({"scopes": {}, "sessionProperties": {"expiry": EXPIRY}}, "sessionProperties"),
        ({"requiredScopes": {}, "properties": {}}, "requiredScopes"),
        ({"scopedProperties": {}, "capabilities": {}}, "scopedProperties"),
    ],
)
def test_mixing_the_dialects_is_32602_naming_the_conflict(params: Any, named: str) -> None:
    error = assert_rejected(InvalidParams, parse, params, code=-32602, match="mix two CAIP-25")
    assert named in error.message


@pytest.mark.parametrize(
    ("params", "code", "match"),
    [
        ({"scopes": {}}, -32602, "scopes must be an object holding one or more scopes"),
        ({"scopes": []}, -32602, "scopes must be an object"),
        ({"properties": {}}, -32602, "scopes must be an object"),
        (
            {"scopes": {"eip155:1": {"chains": ["1"], "methods": [], "notifications": []}}},
            -32602,
            "chains are allowed on a namespace key only",
        ),
        (
            {"scopes": {"eip155": {"chains": "1", "methods": [], "notifications": []}}},
            -32602,
            "chains must be an array",
        ),
        (
            # about `chains`, as written: never the 2022 form's `references`
            {"scopes": {"eip155": {"chains": ["0x539"], "methods": [], "notifications": []}}},
            -32602,
            "scopes['eip155']: chains: '0x539' is not a chain reference of eip155 (eip155 "
            "references are decimal: write '1337')",
        ),
        (
            {"scopes": {"eip155:1": {"methods": "x", "notifications": []}}},
            -32602,
            "scopes['eip155:1']: methods must be an array",
        ),
        ({**EXAMPLE_1, "properties": []}, 5302, "properties must be an object"),
        ({**EXAMPLE_1, "properties": {"expiry": "soon"}}, 5302, "properties.expiry must be"),
    ],
)
def test_2025_requests_are_checked_under_their_own_names(
    params: Any, code: int, match: str
) -> None:
    error_type = InvalidSessionProperties if code == 5302 else InvalidParams
    assert_rejected(error_type, parse, params, code=code, match=match)


def test_the_dialect_and_layout_survive_the_stored_form() -> None:
    from broker.sessions.model import decode_session, encode_session

    session = granted(EXAMPLE_1, {})
    stored = decode_session(encode_session(session))
    assert stored.dialect == CURRENT
    assert stored.layout == session.layout
    assert create_result(stored) == create_result(session)


def test_creating_the_session_again_in_the_other_dialect_is_a_change() -> None:
    from broker.sessions import diff_sessions

    current = granted(EXAMPLE_1, {})
    legacy = msgspec.structs.replace(current, dialect=LEGACY, layout={})
    assert diff_sessions(legacy, current).changed
    assert diff_sessions(current, legacy).changed
    assert not diff_sessions(current, current).changed
