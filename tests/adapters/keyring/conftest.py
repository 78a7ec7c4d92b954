from __future__ import annotations

import pytest
from eth_tester import EthereumTester

from adapters.base import ChainReader
from adapters.keyring import DEV_MNEMONIC, KeyringAdapter
from tests.adapters.keyring import evm

#: The first two accounts of the dev mnemonic (hardhat/anvil's well-known accounts 0 and 1).
ACCOUNT_0 = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"
ACCOUNT_1 = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"


@pytest.fixture
def tester() -> EthereumTester:
    return evm.dev_chain()


@pytest.fixture
def scope(tester: EthereumTester) -> str:
    return f"eip155:{evm.chain_id_of(tester)}"


@pytest.fixture
def read(tester: EthereumTester) -> ChainReader:
    return evm.reader(tester)


@pytest.fixture
async def keyring(scope: str) -> KeyringAdapter:
    adapter = KeyringAdapter([scope, "eip155:1"], mnemonic=DEV_MNEMONIC, count=3)
    await adapter.start()
    return adapter
