"""The chain-method objects of SPEC §2.9: transactions to sign, intents and ERC-4337 user operations.

Fields are JSON strings (hex quantities and data, ``0x`` addresses) exactly as the wire carries them,
and a transaction's quantities may also be JSON numbers, as anvil and hardhat take them; the account
adapter checks the values itself so that its errors can name the field. Inputs forbid unknown
fields: a field the signer would silently ignore (a misspelt ``gasLimt``, an EntryPoint v0.7
``factory``) must be an error, not a surprise in what gets signed.
"""

from __future__ import annotations

import msgspec
from msgspec import UNSET, UnsetType


class AccessListEntry(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    """One ``accessList`` element: an address and the storage keys it touches."""

    address: str
    storage_keys: list[str]


#: A quantity as wallets send it: a ``0x`` hex string, or a JSON number (web3.py sends ``type`` as
#: one; anvil and hardhat take both).
Quantity = str | int


class TransactionToSign(msgspec.Struct, forbid_unknown_fields=True, rename="camel", kw_only=True):
    """The ``eth_signTransaction`` object, read as geth, anvil and hardhat read it: what a client
    may leave out is what they let it leave out. ``type`` absent is inferred from the fee fields;
    ``data`` (or ``input``, geth's newer name) absent is empty; ``to`` absent or null creates a
    contract; ``chainId`` absent is the scope's. ``gasPrice`` goes with types 0x0/0x1, the two
    EIP-1559 fees with type 0x2. An unknown field is still refused (see the module docstring)."""

    type: Quantity | UnsetType = UNSET
    nonce: Quantity
    to: str | UnsetType | None = UNSET
    from_: str = msgspec.field(name="from")
    value: Quantity | UnsetType = UNSET
    data: str | UnsetType = UNSET
    input: str | UnsetType = UNSET
    #: ``gasLimit`` as SPEC names it; ``gas`` as wallets and eth_sendTransaction send it.
    gas_limit: Quantity | UnsetType = UNSET
    gas: Quantity | UnsetType = UNSET
    chain_id: Quantity | UnsetType = UNSET
    gas_price: Quantity | UnsetType = UNSET
    max_priority_fee_per_gas: Quantity | UnsetType = UNSET
    max_fee_per_gas: Quantity | UnsetType = UNSET
    access_list: list[AccessListEntry] | UnsetType = UNSET


class TransactionSignature(msgspec.Struct):
    """The ``eth_signTransaction`` result: ``v``, ``r``, ``s`` plus the signed ``raw`` transaction."""

    v: str
    r: str
    s: str
    raw: str


class TransactionIntent(msgspec.Struct, forbid_unknown_fields=True):
    """One call an ``eth_prepareUserOperation`` caller wants the smart account to make."""

    to: str | None
    value: str
    data: str


class UserOperation(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    """An EntryPoint v0.6 user operation, the input of patch and sign."""

    sender: str
    nonce: str
    init_code: str
    call_data: str
    call_gas_limit: str
    verification_gas_limit: str
    pre_verification_gas: str
    max_fee_per_gas: str
    max_priority_fee_per_gas: str
    paymaster_and_data: str
    signature: str


class GasLimits(msgspec.Struct, rename="camel"):
    """Gas limits suggested with a prepared user operation."""

    call_gas_limit: str
    verification_gas_limit: str
    pre_verification_gas: str


class UserOperationDetails(msgspec.Struct, rename="camel"):
    """The ``eth_prepareUserOperation`` result.

    ``sender`` is scopecast's addition: the counterfactual smart-account address the other fields
    were computed for, which the caller needs to build the operation.
    """

    call_data: str
    init_code: str
    nonce: str
    dummy_signature: str
    dummy_paymaster_and_data: str
    bundler_url: str
    sender: str
    gas_limits: GasLimits | UnsetType = UNSET


class PartialUserOperation(msgspec.Struct, rename="camel"):
    """The ``eth_patchUserOperation`` result; gas fields appear only when they should change."""

    paymaster_and_data: str
    call_gas_limit: str | UnsetType = UNSET
    verification_gas_limit: str | UnsetType = UNSET
    pre_verification_gas: str | UnsetType = UNSET
