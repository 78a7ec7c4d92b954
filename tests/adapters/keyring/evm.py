"""A real EVM for the keyring tests: an eth-tester (py-evm) chain, a reader over it, tiny contracts.

The contracts are a few hand-assembled opcodes each, enough to give the chain real code at the
addresses the user-operation methods look at and to answer their ``eth_call``s.
"""

from __future__ import annotations

from typing import Any, Final

from eth_tester import EthereumTester, PyEVMBackend

from adapters.base import ChainReader
from adapters.keyring import DEV_MNEMONIC


def dev_chain() -> EthereumTester:
    """A fresh chain whose genesis funds the first ten accounts of the dev mnemonic."""
    backend = PyEVMBackend.from_mnemonic(DEV_MNEMONIC, num_accounts=10, hd_path="m/44'/60'/0'/0")
    return EthereumTester(backend)


def chain_id_of(tester: EthereumTester) -> int:
    return int(tester.backend.chain.chain_id)


def reader(tester: EthereumTester) -> ChainReader:
    """``read(method, params)`` answered by the chain, as a node would answer it."""

    async def read(method: str, params: list[Any]) -> Any:
        if method == "eth_getCode":
            return tester.get_code(params[0], params[1])
        if method == "eth_call":
            # A node defaults ``from``; eth-tester wants one that can pay for the call's gas.
            return tester.call({"from": tester.get_accounts()[-1], **params[0]}, params[1])
        raise AssertionError(f"unexpected read {method}")

    return read


def deployment(runtime: bytes) -> bytes:
    """Init code that returns ``runtime`` as the contract's code (CODECOPY the tail, RETURN it)."""
    assert len(runtime) < 256
    prefix = bytes([0x60, len(runtime), 0x80, 0x60, 0x0B, 0x60, 0x00, 0x39, 0x60, 0x00, 0xF3])
    return prefix + runtime


def answering(selector: bytes, word: bytes) -> bytes:
    """Runtime code that returns the 32-byte ``word`` when called with ``selector``, else reverts."""
    assert len(selector) == 4
    assert len(word) == 32
    return (
        bytes([0x60, 0x00, 0x35, 0x60, 0xE0, 0x1C, 0x63])  # calldata[0:4] as a number
        + selector
        # jump to 0x13 if equal, else revert
        + bytes([0x14, 0x60, 0x13, 0x57, 0x60, 0x00, 0x80, 0xFD, 0x5B])
        + bytes([0x7F])
        + word
        + bytes([0x60, 0x00, 0x52, 0x60, 0x20, 0x60, 0x00, 0xF3])  # return the word
    )


#: Runtime code that CREATE2s ``calldata[32:]`` with salt ``calldata[0:32]`` and returns the
#: new address: an on-chain check of counterfactual addresses.
CREATE2_DEPLOYER: Final = bytes.fromhex(
    "60203603"  # size = calldatasize - 32
    "806020600037"  # calldatacopy(0, 32, size)
    "60003590"  # salt = calldata[0:32], under size
    "60006000f5"  # create2(0, 0, size, salt)
    "60005260206000f3"  # return the address
)


def deploy(tester: EthereumTester, runtime: bytes) -> str:
    """Deploy ``runtime`` from the first account; the contract's lowercase address."""
    sender = tester.get_accounts()[0]
    tx_hash = tester.send_transaction(
        {"from": sender, "data": "0x" + deployment(runtime).hex(), "gas": 300_000}
    )
    receipt = tester.get_transaction_receipt(tx_hash)
    assert receipt["status"] == 1
    return str(receipt["contract_address"]).lower()
