"""The AccountAdapter surface: chains, methods, dispatch, and what a SigningRequest carries."""

from __future__ import annotations

from typing import Any

import pytest
from eth_tester import EthereumTester

from adapters.base import AccountAdapter, ChainReader, SigningRequest
from adapters.conformance import check_account_adapter
from adapters.keyring import DEV_MNEMONIC, METHODS, KeyringAdapter
from schemas.errors import InternalError, MethodNotFound, Unauthorized
from tests.adapters.keyring import evm
from tests.adapters.keyring.conftest import ACCOUNT_0, ACCOUNT_1
from tests.adapters.keyring.test_keys import secrets_of
from tests.adapters.keyring.test_typed_data import MAIL
from tests.adapters.keyring.test_user_operations import SAMPLE_OP


async def test_is_an_account_adapter(keyring: KeyringAdapter, scope: str) -> None:
    assert isinstance(keyring, AccountAdapter)
    assert KeyringAdapter.name == "keyring"
    assert list(keyring.chains()) == [scope, "eip155:1"]
    assert (
        keyring.methods(scope)
        == METHODS
        == {
            "personal_sign",
            "eth_signTransaction",
            "eth_signTypedData_v4",
            "eth_sign",
            "eth_signTypedData",
            "eth_prepareUserOperation",
            "eth_patchUserOperation",
            "eth_signUserOperation",
        }
    )
    assert keyring.methods("eip155:5") == frozenset()
    assert keyring.accounts(scope) == (ACCOUNT_0, ACCOUNT_1, keyring.accounts(scope)[2])


async def test_conformance(keyring: KeyringAdapter) -> None:
    check_account_adapter(keyring)


async def test_unknown_method(keyring: KeyringAdapter, scope: str) -> None:
    with pytest.raises(MethodNotFound, match="the method eth_foo does not exist/is not available"):
        keyring.prepare(scope, "eth_foo", [ACCOUNT_0, "0x00"], [ACCOUNT_0])


async def test_chain_not_served(keyring: KeyringAdapter) -> None:
    with pytest.raises(Unauthorized):
        keyring.prepare("eip155:5", "personal_sign", ["0x00", ACCOUNT_0], [ACCOUNT_0])


async def test_permitted_accounts_are_compared_lowercase(
    keyring: KeyringAdapter, scope: str
) -> None:
    checksummed = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
    request = keyring.prepare(scope, "personal_sign", ["0x00", ACCOUNT_0], [checksummed])
    assert request.account == ACCOUNT_0


async def test_execute_only_takes_its_own_requests(
    keyring: KeyringAdapter, scope: str, read: ChainReader
) -> None:
    forged = SigningRequest(scope, "personal_sign", ACCOUNT_0, {}, payload={"message": "0x00"})
    with pytest.raises(InternalError):
        await keyring.execute(forged, read)
    with pytest.raises(MethodNotFound):
        await keyring.execute(SigningRequest(scope, "eth_foo", ACCOUNT_0, {}, None), read)


async def test_no_signing_request_carries_key_material(
    keyring: KeyringAdapter, scope: str, tester: EthereumTester
) -> None:
    chain_id = hex(evm.chain_id_of(tester))
    tx = {
        "type": "0x2",
        "nonce": "0x0",
        "to": ACCOUNT_1,
        "from": ACCOUNT_0,
        "value": "0x1",
        "data": "0x",
        "gasLimit": "0x5208",
        "maxFeePerGas": "0x2",
        "maxPriorityFeePerGas": "0x1",
        "chainId": chain_id,
    }
    calls: list[tuple[str, str, list[Any]]] = [
        (scope, "personal_sign", ["0x00", ACCOUNT_0]),
        (scope, "eth_signTransaction", [tx]),
        ("eip155:1", "eth_signTypedData_v4", [ACCOUNT_0, MAIL]),
        (scope, "eth_prepareUserOperation", [{"to": ACCOUNT_1, "value": "0x0", "data": "0x"}]),
        (scope, "eth_patchUserOperation", [SAMPLE_OP]),
        (scope, "eth_signUserOperation", [SAMPLE_OP, "0x5ff137d4b0fdcd49dca30c7cf57e578a026d2789"]),
    ]
    text = "".join(
        repr(keyring.prepare(chain, method, params, [ACCOUNT_0])) for chain, method, params in calls
    )
    for secret in secrets_of(DEV_MNEMONIC, 3):
        assert secret.lower() not in text.lower()
