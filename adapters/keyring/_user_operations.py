"""The ERC-4337 methods for a SimpleAccount (EntryPoint v0.6) owned by a keyring key.

The owner is the session's first permitted account that the keyring holds (see
:meth:`Wallet.owner`); the smart account is that owner's SimpleAccount from the configured factory
and salt. ``eth_prepareUserOperation`` builds callData, initCode and nonce;
``eth_patchUserOperation`` adds the configured paymaster; ``eth_signUserOperation`` signs the
EntryPoint's userOpHash as SimpleAccount v0.6 checks it (``toEthSignedMessageHash``, i.e. EIP-191).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import msgspec
from eth_account import Account
from eth_account.messages import encode_defunct
from eth_utils.conversions import to_bytes
from eth_utils.crypto import keccak

from adapters.base import ChainReader, SigningRequest
from adapters.keyring import _params, _render, _smart_account
from adapters.keyring._config import UserOpConfig
from adapters.keyring._entry_point import UserOp, user_op_hash
from adapters.keyring._simple_account import Call, decode_calls, encode_calls, init_code
from adapters.keyring._wallet import Handler, Prepared, Wallet, account_of, payload_of
from schemas.errors import Unauthorized, invalid_argument
from schemas.userop import (
    GasLimits,
    PartialUserOperation,
    TransactionIntent,
    UserOperation,
    UserOperationDetails,
)

#: A well-formed signature by an unrelated throwaway key: during gas estimation SimpleAccount's
#: ECDSA recovery then succeeds and returns SIG_VALIDATION_FAILED instead of reverting, and the
#: operation has its final size.
DUMMY_SIGNATURE: Final = bytes(
    Account.unsafe_sign_hash(
        keccak(text="scopecast dummy user operation"), keccak(text="scopecast dummy key")
    ).signature
)


def paymaster_and_data(config: UserOpConfig) -> str:
    """The configured paymaster followed by its data, or ``0x`` when the account pays."""
    if config.paymaster is None:
        return "0x"
    return _render.hex_bytes(
        to_bytes(hexstr=config.paymaster) + to_bytes(hexstr=config.paymaster_data)
    )


def _calls_summary(calls: list[Call] | None, call_data: bytes) -> Any:
    if calls is None:
        return {"undecoded": _render.calldata(call_data)}
    return [_render.call(call.to, call.value, call.data) for call in calls]


# --- eth_prepareUserOperation ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PrepareUserOperation:
    calls: tuple[Call, ...]


def _intent(value: Any, index: int, batch: bool) -> Call:
    intent = _params.convert(value, TransactionIntent, index)
    if intent.to is None:
        raise _params.field_error(index, "to", "a SimpleAccount cannot create contracts")
    call = Call(
        _params.address(intent.to, index, "to"),
        _params.quantity(intent.value, index, "value"),
        _params.data(intent.data, index, "data"),
    )
    if batch and call.value:
        reason = "must be 0x0 in a batch: SimpleAccount v0.6 executeBatch sends no value"
        raise _params.field_error(index, "value", reason)
    return call


def prepare_user_operation(
    wallet: Wallet, chain_id: int, params: list[Any], permitted: list[str]
) -> Prepared:
    """Check the intents (one per param) and pick the owner."""
    if not params:
        raise invalid_argument(0, "want at least one transaction intent")
    batch = len(params) > 1
    calls = tuple(_intent(value, index, batch) for index, value in enumerate(params))
    owner = wallet.owner(permitted)
    summary = {
        "account": owner,
        "owner": owner,
        "entryPoint": wallet.userop.entry_point.lower(),
        "factory": wallet.userop.factory.lower(),
        "calls": _calls_summary(list(calls), b""),
    }
    return Prepared(owner, summary, PrepareUserOperation(calls))


async def execute_prepare(wallet: Wallet, request: SigningRequest, read: ChainReader) -> Any:
    """User operation details for the owner's smart account, read from the chain."""
    payload = payload_of(request, PrepareUserOperation)
    owner = account_of(request)
    config = wallet.userop
    account = await _smart_account.state(read, config, owner)
    creation = b"" if account.deployed else init_code(config.factory, owner, config.salt)
    verification = (
        config.verification_gas_limit
        if account.deployed
        else config.deployment_verification_gas_limit
    )
    details = UserOperationDetails(
        call_data=_render.hex_bytes(encode_calls(payload.calls)),
        init_code=_render.hex_bytes(creation),
        nonce=_render.hex_quantity(account.nonce),
        gas_limits=GasLimits(
            call_gas_limit=_render.hex_quantity(config.call_gas_limit),
            verification_gas_limit=_render.hex_quantity(verification),
            pre_verification_gas=_render.hex_quantity(config.pre_verification_gas),
        ),
        dummy_signature=_render.hex_bytes(DUMMY_SIGNATURE),
        dummy_paymaster_and_data=paymaster_and_data(config),
        bundler_url=config.bundler_url,
        sender=account.address,
    )
    return msgspec.to_builtins(details)


# --- parsing a user operation (patch and sign) ---------------------------------------------------


def _user_op(value: Any, index: int) -> UserOp:
    op = _params.convert(value, UserOperation, index)
    quantities = {
        name: _params.quantity(getattr(op, attr), index, name)
        for attr, name in (
            ("nonce", "nonce"),
            ("call_gas_limit", "callGasLimit"),
            ("verification_gas_limit", "verificationGasLimit"),
            ("pre_verification_gas", "preVerificationGas"),
            ("max_fee_per_gas", "maxFeePerGas"),
            ("max_priority_fee_per_gas", "maxPriorityFeePerGas"),
        )
    }
    return UserOp(
        sender=_params.address(op.sender, index, "sender"),
        nonce=quantities["nonce"],
        init_code=_params.data(op.init_code, index, "initCode"),
        call_data=_params.data(op.call_data, index, "callData"),
        call_gas_limit=quantities["callGasLimit"],
        verification_gas_limit=quantities["verificationGasLimit"],
        pre_verification_gas=quantities["preVerificationGas"],
        max_fee_per_gas=quantities["maxFeePerGas"],
        max_priority_fee_per_gas=quantities["maxPriorityFeePerGas"],
        paymaster_and_data=_params.data(op.paymaster_and_data, index, "paymasterAndData"),
        signature=_params.data(op.signature, index, "signature"),
    )


def _op_summary(owner: str, op: UserOp) -> dict[str, Any]:
    paymaster = op.paymaster_and_data[:20]
    return {
        "account": owner,
        "owner": owner,
        "sender": op.sender,
        "nonce": op.nonce,
        "calls": _calls_summary(decode_calls(op.call_data), op.call_data),
        "deploysAccount": bool(op.init_code),
        "factory": _render.hex_bytes(op.init_code[:20]) if op.init_code else None,
        "paymaster": _render.hex_bytes(paymaster) if paymaster else None,
        "fees": {
            "maxFeePerGas": _render.gwei(op.max_fee_per_gas),
            "maxPriorityFeePerGas": _render.gwei(op.max_priority_fee_per_gas),
        },
        "gas": {
            "callGasLimit": op.call_gas_limit,
            "verificationGasLimit": op.verification_gas_limit,
            "preVerificationGas": op.pre_verification_gas,
        },
    }


# --- eth_patchUserOperation --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PatchUserOperation:
    op: UserOp


def prepare_patch(
    wallet: Wallet, chain_id: int, params: list[Any], permitted: list[str]
) -> Prepared:
    """Check ``[userOp]`` and pick the owner."""
    _params.check_count(params, 1)
    op = _user_op(params[0], 0)
    owner = wallet.owner(permitted)
    return Prepared(owner, _op_summary(owner, op), PatchUserOperation(op))


async def execute_patch(wallet: Wallet, request: SigningRequest, read: ChainReader) -> Any:
    """``{paymasterAndData}`` from the configuration."""
    # No checkpoint: static configuration, after the approval its caller awaited.
    # The paymaster data is static configuration that prepare already offered as the dummy, so
    # the caller's gas estimate stands and no gas field is changed.
    payload_of(request, PatchUserOperation)
    return msgspec.to_builtins(PartialUserOperation(paymaster_and_data(wallet.userop)))


# --- eth_signUserOperation ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SignUserOperation:
    op: UserOp
    op_hash: bytes


def prepare_sign(
    wallet: Wallet, chain_id: int, params: list[Any], permitted: list[str]
) -> Prepared:
    """Check ``[userOp, entryPoint]``, pick the owner and hash the operation for the summary."""
    _params.check_count(params, 2)
    op = _user_op(params[0], 0)
    entry_point = _params.address(params[1], 1)
    if entry_point != wallet.userop.entry_point.lower():
        reason = (
            f"entry point {entry_point} is not this keyring's {wallet.userop.entry_point.lower()}"
        )
        raise invalid_argument(1, reason)
    owner = wallet.owner(permitted)
    op_hash = user_op_hash(op, entry_point, chain_id)
    summary = {
        **_op_summary(owner, op),
        "entryPoint": entry_point,
        "userOpHash": _render.hex_bytes(op_hash),
    }
    return Prepared(owner, summary, SignUserOperation(op, op_hash))


async def execute_sign(wallet: Wallet, request: SigningRequest, read: ChainReader) -> str:
    """The owner's EIP-191 signature of the userOpHash, if the sender is the owner's account."""
    payload = payload_of(request, SignUserOperation)
    owner = account_of(request)
    # Only the owner's own smart account may get its signature: the same key may own other
    # accounts (other salts, other factories) that the session never saw.
    expected = await _smart_account.locate(read, wallet.userop, owner)
    if payload.op.sender != expected:
        raise Unauthorized(f"sender {payload.op.sender} is not the smart account of {owner}")
    signature = wallet.keyring.sign_message(owner, encode_defunct(payload.op_hash))
    return _render.hex_bytes(signature)


PREPARE: Final = Handler(prepare_user_operation, execute_prepare)
PATCH: Final = Handler(prepare_patch, execute_patch)
SIGN: Final = Handler(prepare_sign, execute_sign)
