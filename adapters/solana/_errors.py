"""Solana's JSON-RPC errors (the codes of ``solana-rpc-client-api``'s custom errors), raised as
:class:`schemas.errors.RpcError` so the broker maps them like any other adapter's."""

from __future__ import annotations

from typing import Any

from schemas.errors import InvalidParams, InvalidRequest, RpcError


class PreflightFailure(RpcError):
    """-32002: the transaction failed its simulation; ``data`` is the simulation result."""

    code = -32002
    default_message = "Transaction simulation failed"


class SignatureVerificationFailure(RpcError):
    code = -32003
    default_message = "Transaction signature verification failure"


class BlockCleanedUp(RpcError):
    code = -32001

    def __init__(self, slot: int, first: int) -> None:
        super().__init__(
            f"Block {slot} cleaned up, does not exist on node. First available block: {first}"
        )


class BlockNotAvailable(RpcError):
    code = -32004

    def __init__(self, slot: int) -> None:
        super().__init__(f"Block not available for slot {slot}")


class TransactionHistoryNotAvailable(RpcError):
    code = -32011
    default_message = "Transaction history is not available from this node"


class UnsupportedTransactionVersion(RpcError):
    code = -32015

    def __init__(self, version: int) -> None:
        super().__init__(
            f"Transaction version ({version}) is not supported by the requesting client. Please "
            "try the request again with the following configuration parameter: "
            f'"maxSupportedTransactionVersion": {version}'
        )


class MinContextSlotNotReached(RpcError):
    code = -32016

    def __init__(self, slot: int) -> None:
        super().__init__("Minimum context slot has not been reached", data={"contextSlot": slot})


def invalid_params(reason: str) -> InvalidParams:
    """Solana's (jsonrpc-core's) text for params that do not decode."""
    return InvalidParams(f"Invalid params: {reason}.")


def invalid_param(reason: str) -> InvalidParams:
    """Solana's text for a param that decodes but is not valid (``Invalid param: WrongSize``)."""
    return InvalidParams(f"Invalid param: {reason}")


def invalid_request(reason: str) -> InvalidRequest:
    return InvalidRequest(reason)


def preflight_failure(message: str, simulation: dict[str, Any]) -> PreflightFailure:
    return PreflightFailure(f"Transaction simulation failed: {message}", data=simulation)
