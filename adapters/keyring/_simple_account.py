"""SimpleAccount and SimpleAccountFactory of account-abstraction v0.6, at the ABI level.

v0.6's SimpleAccount has ``execute(address dest, uint256 value, bytes func)`` and
``executeBatch(address[] dest, bytes[] func)``; the batch form sends no value (the ``uint256[]``
variant arrived with v0.7), so a batch can only hold zero-value calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from eth_abi.abi import decode, encode
from eth_utils.conversions import to_bytes
from eth_utils.crypto import keccak

from adapters.keyring._evm import create2_address, selector

EXECUTE = selector("execute(address,uint256,bytes)")
EXECUTE_BATCH = selector("executeBatch(address[],bytes[])")
CREATE_ACCOUNT = selector("createAccount(address,uint256)")
GET_ADDRESS = selector("getAddress(address,uint256)")
INITIALIZE = selector("initialize(address)")


@dataclass(frozen=True, slots=True)
class Call:
    """One call the smart account makes: target, wei and calldata."""

    to: str
    value: int
    data: bytes


def encode_calls(calls: Sequence[Call]) -> bytes:
    """The account's callData: ``execute`` for one call, ``executeBatch`` for several."""
    if len(calls) == 1:
        (call,) = calls
        return EXECUTE + encode(("address", "uint256", "bytes"), (call.to, call.value, call.data))
    if any(call.value for call in calls):
        raise ValueError("executeBatch of SimpleAccount v0.6 cannot send value")
    targets = [call.to for call in calls]
    payloads = [call.data for call in calls]
    return EXECUTE_BATCH + encode(("address[]", "bytes[]"), (targets, payloads))


def decode_calls(call_data: bytes) -> list[Call] | None:
    """The calls in an ``execute``/``executeBatch`` callData, or None for anything else."""
    head, body = call_data[:4], call_data[4:]
    try:
        if head == EXECUTE:
            to, value, data = decode(("address", "uint256", "bytes"), body)
            return [Call(to, value, data)]
        if head == EXECUTE_BATCH:
            targets, payloads = decode(("address[]", "bytes[]"), body)
            if len(targets) != len(payloads):
                return None  # the account itself reverts with "wrong array lengths"
            return [Call(to, 0, data) for to, data in zip(targets, payloads, strict=True)]
    except Exception:
        # Malformed ABI from a dapp: shown to the operator as undecoded, never an error here.
        return None
    return None


def create_account_call(owner: str, salt: int) -> bytes:
    """Calldata of ``SimpleAccountFactory.createAccount(owner, salt)``."""
    return CREATE_ACCOUNT + encode(("address", "uint256"), (owner, salt))


def get_address_call(owner: str, salt: int) -> bytes:
    """Calldata of ``SimpleAccountFactory.getAddress(owner, salt)``."""
    return GET_ADDRESS + encode(("address", "uint256"), (owner, salt))


def init_code(factory: str, owner: str, salt: int) -> bytes:
    """A user operation's initCode: the factory address, then its ``createAccount`` calldata."""
    return to_bytes(hexstr=factory) + create_account_call(owner, salt)


def decode_address(result: bytes) -> str:
    """The single ``address`` an ``eth_call`` returned, lowercase."""
    (value,) = decode(("address",), result)
    return str(value).lower()


def counterfactual_address(
    factory: str, owner: str, salt: int, proxy_creation_code: bytes, implementation: str
) -> str:
    """``getAddress(owner, salt)`` of a SimpleAccountFactory, computed without the chain.

    The factory deploys ``new ERC1967Proxy{salt: bytes32(salt)}(implementation,
    abi.encodeCall(SimpleAccount.initialize, (owner)))``; the proxy's init code is its creation
    code followed by the ABI-encoded constructor arguments.
    """
    initialize_call = INITIALIZE + encode(("address",), (owner,))
    arguments = encode(("address", "bytes"), (implementation, initialize_call))
    proxy_init_code = proxy_creation_code + arguments
    return create2_address(factory, salt.to_bytes(32, "big"), keccak(proxy_init_code))
