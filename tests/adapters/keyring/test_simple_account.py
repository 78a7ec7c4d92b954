"""SimpleAccount v0.6 encodings and the contract-address arithmetic behind counterfactual senders."""

from __future__ import annotations

import pytest
from eth_abi.abi import encode
from eth_tester import EthereumTester
from eth_utils.crypto import keccak

from adapters.base import ChainReader
from adapters.keyring import SIMPLE_ACCOUNT_FACTORY_V06
from adapters.keyring._evm import create2_address, create_address, selector
from adapters.keyring._simple_account import (
    Call,
    counterfactual_address,
    decode_calls,
    encode_calls,
    init_code,
)
from tests.adapters.keyring import evm
from tests.adapters.keyring.conftest import ACCOUNT_0, ACCOUNT_1


def test_selectors() -> None:
    # Well-known selectors (4byte directory) of the v0.6 contracts' functions.
    assert selector("execute(address,uint256,bytes)").hex() == "b61d27f6"
    assert selector("executeBatch(address[],bytes[])").hex() == "18dfb3c7"
    assert selector("createAccount(address,uint256)").hex() == "5fbfb9cf"
    assert selector("getAddress(address,uint256)").hex() == "8cb84e18"
    assert selector("transfer(address,uint256)").hex() == "a9059cbb"


def test_single_call_is_execute() -> None:
    call = Call(ACCOUNT_1, 5, bytes.fromhex("a9059cbb"))
    data = encode_calls([call])
    expected = bytes.fromhex("b61d27f6") + encode(
        ["address", "uint256", "bytes"], [ACCOUNT_1, 5, call.data]
    )
    assert data == expected
    assert decode_calls(data) == [call]


def test_several_calls_are_execute_batch_without_value() -> None:
    calls = [Call(ACCOUNT_0, 0, b"\x01\x02"), Call(ACCOUNT_1, 0, b"")]
    data = encode_calls(calls)
    assert data[:4].hex() == "18dfb3c7"
    assert data[4:] == encode(
        ["address[]", "bytes[]"], [[ACCOUNT_0, ACCOUNT_1], [b"\x01\x02", b""]]
    )
    assert decode_calls(data) == calls
    with pytest.raises(ValueError, match="cannot send value"):
        encode_calls([Call(ACCOUNT_0, 1, b""), Call(ACCOUNT_1, 0, b"")])


@pytest.mark.parametrize(
    "data", [b"", b"\xde\xad\xbe\xef", bytes.fromhex("b61d27f6") + b"\x00" * 5]
)
def test_other_call_data_is_not_decoded(data: bytes) -> None:
    assert decode_calls(data) is None


def test_init_code_is_factory_then_create_account() -> None:
    code = init_code(SIMPLE_ACCOUNT_FACTORY_V06, ACCOUNT_0, 7)
    assert code[:20].hex() == SIMPLE_ACCOUNT_FACTORY_V06[2:]
    assert code[20:] == bytes.fromhex("5fbfb9cf") + encode(["address", "uint256"], [ACCOUNT_0, 7])


# The seven worked examples of EIP-1014 (eips.ethereum.org/EIPS/eip-1014#examples).
ZERO = "0x" + "00" * 20
CAFE = bytes.fromhex("00" * 28 + "cafebabe")


@pytest.mark.parametrize(
    ("deployer", "salt", "code", "expected"),
    [
        (ZERO, bytes(32), "00", "0x4D1A2e2bB4F88F0250f26Ffff098B0b30B26BF38"),
        (
            "0xdeadbeef00000000000000000000000000000000",
            bytes(32),
            "00",
            "0xB928f69Bb1D91Cd65274e3c79d8986362984fDA3",
        ),
        (
            "0xdeadbeef00000000000000000000000000000000",
            bytes.fromhex("000000000000000000000000feed000000000000000000000000000000000000"),
            "00",
            "0xD04116cDd17beBE565EB2422F2497E06cC1C9833",
        ),
        (ZERO, bytes(32), "deadbeef", "0x70f2b2914A2a4b783FaEFb75f459A580616Fcb5e"),
        (
            "0x00000000000000000000000000000000deadbeef",
            CAFE,
            "deadbeef",
            "0x60f3f640a8508fC6a86d45DF051962668E1e8AC7",
        ),
        (
            "0x00000000000000000000000000000000deadbeef",
            CAFE,
            "deadbeef" * 11,
            "0x1d8bfDC5D46DC4f61D6b6115972536eBE6A8854C",
        ),
        (ZERO, bytes(32), "", "0xE33C0C7F7df4809055C3ebA6c09CFe4BaF1BD9e0"),
    ],
)
def test_create2_eip1014_examples(deployer: str, salt: bytes, code: str, expected: str) -> None:
    assert create2_address(deployer, salt, keccak(bytes.fromhex(code))) == expected.lower()


def test_default_implementation_is_the_factorys_first_create() -> None:
    # The SimpleAccount v0.6 implementation behind the canonical factory, as published with it
    # (e.g. permissionless/viem fork setups pin 0x8ABB13360b87Be5EEb1B98647A016adD927a136c).
    assert (
        create_address(SIMPLE_ACCOUNT_FACTORY_V06, 1)
        == "0x8abb13360b87be5eeb1b98647a016add927a136c"
    )


def test_create_address_matches_the_chain(tester: EthereumTester) -> None:
    deployer = tester.get_accounts()[0]
    nonce = tester.get_nonce(deployer)
    deployed = evm.deploy(tester, b"\x00")
    assert create_address(deployer, nonce) == deployed


async def test_counterfactual_address_matches_a_real_create2(
    tester: EthereumTester, read: ChainReader
) -> None:
    """A CREATE2 on py-evm lands where counterfactual_address says the factory's proxy will."""
    deployer = evm.deploy(tester, evm.CREATE2_DEPLOYER)
    proxy_code = evm.deployment(b"\x00")  # stands in for ERC1967Proxy: any init code will do
    implementation = "0x" + "42" * 20
    salt = 9
    initialize = bytes.fromhex("c4d66de8") + encode(["address"], [ACCOUNT_0])  # initialize(address)
    proxy_init_code = proxy_code + encode(["address", "bytes"], [implementation, initialize])
    calldata = "0x" + (salt.to_bytes(32, "big") + proxy_init_code).hex()
    result = await read("eth_call", [{"to": deployer, "data": calldata}, "latest"])
    on_chain = "0x" + result[-40:]
    assert on_chain == counterfactual_address(deployer, ACCOUNT_0, salt, proxy_code, implementation)
    assert on_chain != counterfactual_address(deployer, ACCOUNT_1, salt, proxy_code, implementation)
