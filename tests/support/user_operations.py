"""ERC-4337 user operations for tests: the unsigned operation ``eth_prepareUserOperation`` describes."""

from __future__ import annotations

from typing import Any


def unsigned_user_op(details: dict[str, Any]) -> dict[str, str]:
    """The user operation of ``eth_prepareUserOperation``'s answer, with fees and no signature."""
    return {
        "sender": details["sender"],
        "nonce": details["nonce"],
        "initCode": details["initCode"],
        "callData": details["callData"],
        **details["gasLimits"],
        "maxFeePerGas": "0x77359400",
        "maxPriorityFeePerGas": "0x1",
        "paymasterAndData": "0x",
        "signature": "0x",
    }
