"""The operator API's params: decoded once, mistakes named (plain calls)."""

from __future__ import annotations

import pytest

from schemas.admin import (
    ApproveParams,
    RejectParams,
    RevokeSessionParams,
    UpdateSessionParams,
    decode_params,
)
from schemas.errors import InvalidParams


def test_an_object_or_an_array_of_one_object() -> None:
    for raw in (b'{"id": "7"}', b'[{"id": "7"}]'):
        assert decode_params(raw, RejectParams) == RejectParams(id="7")
    revoke = decode_params(b'{"apiKey": "k", "scopes": ["eip155:1"]}', RevokeSessionParams)
    assert (revoke.apiKey, revoke.origin, revoke.scopes) == ("k", "-", ["eip155:1"])
    approve = decode_params(b'{"id": "3", "accounts": []}', ApproveParams)
    assert approve.accounts == []
    assert approve.sessionScopes is None


@pytest.mark.parametrize(
    ("raw", "kind", "named"),
    [
        (b'{"apiKey": 5, "sessionScopes": {}}', UpdateSessionParams, "$.apiKey"),
        (b'{"apiKey": "k"}', UpdateSessionParams, "sessionScopes"),
        (b'{"apiKey": "k", "scopes": "eip155:1"}', RevokeSessionParams, "$.scopes"),
        (b'{"apiKey": "k", "scopes": [1]}', RevokeSessionParams, "$.scopes[0]"),
        (b'{"id": "1", "accounts": "0xabc"}', ApproveParams, "$.accounts"),
        (b"{}", RejectParams, "`id`"),
        (b'"text"', RejectParams, "must be an object"),
        (b"{nope", RejectParams, "not JSON"),
    ],
)
def test_a_mistake_is_invalid_params_naming_the_member(
    raw: bytes, kind: type[RejectParams], named: str
) -> None:
    with pytest.raises(InvalidParams) as caught:
        decode_params(raw, kind)
    assert named in str(caught.value)
