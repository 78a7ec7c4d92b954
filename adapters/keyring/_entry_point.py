"""EntryPoint v0.6: the user-operation hash an account signs, and the ``getNonce`` call.

``getUserOpHash`` in EntryPoint v0.6 is ``keccak256(abi.encode(keccak256(pack(op)), entryPoint,
chainId))`` where ``pack`` ABI-encodes the fields with the three byte strings (initCode, callData,
paymasterAndData) replaced by their keccak256 and the signature left out.
"""

from __future__ import annotations

from dataclasses import dataclass

from eth_abi.abi import decode, encode
from eth_utils.crypto import keccak

from adapters.keyring._evm import selector

GET_NONCE = selector("getNonce(address,uint192)")

_PACKED_TYPES = (
    "address",
    "uint256",
    "bytes32",
    "bytes32",
    "uint256",
    "uint256",
    "uint256",
    "uint256",
    "uint256",
    "bytes32",
)


@dataclass(frozen=True, slots=True)
class UserOp:
    """A checked v0.6 user operation: numbers as ints, byte strings as bytes."""

    sender: str
    nonce: int
    init_code: bytes
    call_data: bytes
    call_gas_limit: int
    verification_gas_limit: int
    pre_verification_gas: int
    max_fee_per_gas: int
    max_priority_fee_per_gas: int
    paymaster_and_data: bytes
    signature: bytes


def user_op_hash(op: UserOp, entry_point: str, chain_id: int) -> bytes:
    """The hash EntryPoint v0.6 hands to ``validateUserOp`` for ``op``."""
    packed = encode(
        _PACKED_TYPES,
        (
            op.sender,
            op.nonce,
            keccak(op.init_code),
            keccak(op.call_data),
            op.call_gas_limit,
            op.verification_gas_limit,
            op.pre_verification_gas,
            op.max_fee_per_gas,
            op.max_priority_fee_per_gas,
            keccak(op.paymaster_and_data),
        ),
    )
    return keccak(
        encode(("bytes32", "address", "uint256"), (keccak(packed), entry_point, chain_id))
    )


def get_nonce_call(sender: str, key: int = 0) -> bytes:
    """Calldata of ``getNonce(sender, key)``."""
    return GET_NONCE + encode(("address", "uint192"), (sender, key))


def decode_uint256(result: bytes) -> int:
    """The single ``uint256`` an ``eth_call`` returned."""
    (value,) = decode(("uint256",), result)
    return int(value)
