"""The operator API's params: decoded once, mistakes named (plain calls)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from schemas.admin import (
    ParamsDecoder,
    RejectParams,
    approve_params,
    reject_params,
    revoke_session_params,
    update_session_params,
)
from schemas.errors import InvalidParams


def test_an_object_or_an_array_of_one_object() -> None:
    for raw in (b'{"id": "7"}', b'[{"id": "7"}]'):
        assert reject_params.decode(raw) == RejectParams(id="7")
    revoke = revoke_session_params.decode(b'{"apiKey": "k", "scopes": ["eip155:1"]}')
    assert (revoke.apiKey, revoke.origin, revoke.scopes) == ("k", "-", ["eip155:1"])
    approve = approve_params.decode(b'{"id": "3", "accounts": []}')
    assert approve.accounts == []
    assert approve.sessionScopes is None


@pytest.mark.parametrize(
    ("raw", "decoder", "named"),
    [
        (b'{"apiKey": 5, "sessionScopes": {}}', update_session_params, "$.apiKey"),
        (b'{"apiKey": "k"}', update_session_params, "sessionScopes"),
        (b'[{"apiKey": "k"}]', update_session_params, "sessionScopes"),
        (b'{"apiKey": "k", "scopes": "eip155:1"}', revoke_session_params, "$.scopes"),
        (b'{"apiKey": "k", "scopes": [1]}', revoke_session_params, "$.scopes[0]"),
        (b'{"id": "1", "accounts": "0xabc"}', approve_params, "$.accounts"),
        (b'{"id": "1", "accounts": ["0xabc", 7]}', approve_params, "$.accounts[1]"),
        (b"{}", reject_params, "`id`"),
        (b"null", reject_params, "`id`"),
        (b"[]", reject_params, "`id`"),
        (b'"text"', reject_params, "must be an object"),
        (b'[{"id": "1"}, {"id": "2"}]', reject_params, "must be an object"),
        (b"[1]", reject_params, "must be an object"),
        (b"{nope", reject_params, "not JSON"),
    ],
)
def test_a_mistake_is_invalid_params_naming_the_member(
    raw: bytes, decoder: ParamsDecoder[Any], named: str
) -> None:
    with pytest.raises(InvalidParams) as caught:
        decoder.decode(raw)
    assert named in str(caught.value)


def test_an_approval_id_may_be_the_number_an_operator_types() -> None:
    assert reject_params.decode(msgspec.Raw(b'{"id": 2}')).approval_id == "2"
    assert reject_params.decode(msgspec.Raw(b'{"id": "2"}')).approval_id == "2"
