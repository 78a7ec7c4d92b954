"""``eth_signTransaction``: sign a legacy (0x0), EIP-2930 (0x1) or EIP-1559 (0x2) transaction.

The result is the signature object of SPEC §2.9 (``v``, ``r``, ``s``) plus ``raw``, the signed
transaction ready for ``eth_sendRawTransaction``. A transaction for another chain than the scope's
is refused (4100): its signature would be valid on that other chain.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import msgspec
from eth_utils.address import to_checksum_address
from msgspec import UNSET, UnsetType

from adapters.base import ChainReader, SigningRequest
from adapters.keyring import _params
from adapters.keyring._render import calldata, ether, gwei, hex_bytes, hex_quantity
from adapters.keyring._wallet import Handler, Prepared, Wallet, account_of, payload_of
from schemas.errors import Unauthorized
from schemas.userop import AccessListEntry, TransactionSignature, TransactionToSign

LEGACY, ACCESS_LIST, DYNAMIC_FEE = 0, 1, 2


@dataclass(frozen=True, slots=True)
class SignTransaction:
    """The transaction as eth-account takes it."""

    fields: dict[str, Any]


def _gas_limit(tx: TransactionToSign) -> int:
    """``gasLimit``, or ``gas`` as wallets send it (both: they must agree)."""
    given = [(name, value) for name, value in (("gasLimit", tx.gas_limit), ("gas", tx.gas))]
    present = [(name, value) for name, value in given if not isinstance(value, UnsetType)]
    if not present:
        raise _params.field_error(0, "gasLimit", "missing (gasLimit, or gas as wallets send it)")
    limits = {_params.lenient_quantity(value, 0, name) for name, value in present}
    if len(limits) > 1:
        raise _params.field_error(0, "gas", "gas and gasLimit differ; send one of them")
    return limits.pop()


def _data(tx: TransactionToSign) -> bytes:
    """``input`` (geth's newer name) or ``data``; both: they must agree; neither: empty."""
    given = [(name, value) for name, value in (("input", tx.input), ("data", tx.data))]
    present = {_params.data(value, 0, name) for name, value in given if isinstance(value, str)}
    if len(present) > 1:
        raise _params.field_error(0, "data", "data and input differ; send one of them")
    return present.pop() if present else b""


def _kind(tx: TransactionToSign) -> int:
    """``type`` as given, else inferred from the fee fields as geth does: the EIP-1559 fees make
    a 0x2, ``gasPrice`` with an access list a 0x1, ``gasPrice`` alone a 0x0."""
    if not isinstance(tx.type, UnsetType):
        kind = _params.lenient_quantity(tx.type, 0, "type")
        if kind not in (LEGACY, ACCESS_LIST, DYNAMIC_FEE):
            raise _params.field_error(
                0, "type", f"unsupported type {tx.type}; want 0x0, 0x1 or 0x2"
            )
        return kind
    dynamic = not isinstance(tx.max_fee_per_gas, UnsetType) or not isinstance(
        tx.max_priority_fee_per_gas, UnsetType
    )
    if dynamic:
        return DYNAMIC_FEE
    if isinstance(tx.gas_price, UnsetType):
        raise _params.field_error(
            0, "gasPrice", "missing gasPrice, or maxFeePerGas and maxPriorityFeePerGas"
        )
    return LEGACY if isinstance(tx.access_list, UnsetType) else ACCESS_LIST


def prepare(wallet: Wallet, chain_id: int, params: list[Any], permitted: list[str]) -> Prepared:
    """Check ``[transaction]`` field by field, its chain and its sender."""
    _params.check_count(params, 1)
    tx = _params.convert(params[0], TransactionToSign, 0)
    kind = _kind(tx)
    sender = _params.address(tx.from_, 0, "from")
    to = None if tx.to is None or tx.to is UNSET else _params.address(tx.to, 0, "to")
    data = _data(tx)
    if to is None and not data:
        raise _params.field_error(0, "data", "a contract creation (no `to`) needs init code")
    fields: dict[str, Any] = {
        "nonce": _params.lenient_quantity(tx.nonce, 0, "nonce"),
        "value": 0 if tx.value is UNSET else _params.lenient_quantity(tx.value, 0, "value"),
        "gas": _gas_limit(tx),
        "data": data,
        # Absent: the scope's chain, as geth fills in its own.
        "chainId": chain_id
        if isinstance(tx.chain_id, UnsetType)
        else _params.lenient_quantity(tx.chain_id, 0, "chainId"),
    }
    if to is not None:
        fields["to"] = to_checksum_address(to)
    fields.update(_fees(kind, tx))
    access_list = _access_list(tx.access_list)
    if kind == LEGACY and access_list:
        raise _params.field_error(0, "accessList", "a type 0x0 transaction has no access list")
    if kind != LEGACY:
        fields["type"] = kind
        fields["accessList"] = access_list
    if fields["chainId"] != chain_id:
        # Signed for another chain, it would be valid there: never, whatever the approval.
        raise Unauthorized(
            f"chainId {hex_quantity(fields['chainId'])} is not the chain of scope "
            f"eip155:{chain_id} ({hex_quantity(chain_id)})"
        )
    signer = wallet.signer(sender, permitted)
    return Prepared(signer, _summary(signer, to, fields), SignTransaction(fields))


def _fees(kind: int, tx: TransactionToSign) -> dict[str, int]:
    shown = hex_quantity(kind)
    if kind in (LEGACY, ACCESS_LIST):
        for name, value in (
            ("maxFeePerGas", tx.max_fee_per_gas),
            ("maxPriorityFeePerGas", tx.max_priority_fee_per_gas),
        ):
            if value is not UNSET:
                raise _params.field_error(0, name, f"not used by a type {shown} transaction")
        return {"gasPrice": _required_quantity(tx.gas_price, "gasPrice")}
    if tx.gas_price is not UNSET:
        raise _params.field_error(0, "gasPrice", "a type 0x2 transaction uses the EIP-1559 fees")
    max_fee = _required_quantity(tx.max_fee_per_gas, "maxFeePerGas")
    priority = _required_quantity(tx.max_priority_fee_per_gas, "maxPriorityFeePerGas")
    if priority > max_fee:
        raise _params.field_error(0, "maxPriorityFeePerGas", "exceeds maxFeePerGas")
    return {"maxFeePerGas": max_fee, "maxPriorityFeePerGas": priority}


def _required_quantity(value: str | int | UnsetType, name: str) -> int:
    if isinstance(value, UnsetType):
        raise _params.missing_field(0, name)
    return _params.lenient_quantity(value, 0, name)


def _access_list(entries: list[AccessListEntry] | UnsetType) -> list[dict[str, Any]]:
    if isinstance(entries, UnsetType):
        return []
    checked = []
    for i, entry in enumerate(entries):
        where = f"accessList[{i}]"
        keys = [
            hex_bytes(_params.word(key, 0, f"{where}.storageKeys[{k}]"))
            for k, key in enumerate(entry.storage_keys)
        ]
        address = _params.address(entry.address, 0, f"{where}.address")
        checked.append({"address": to_checksum_address(address), "storageKeys": keys})
    return checked


def _summary(signer: str, to: str | None, fields: dict[str, Any]) -> dict[str, Any]:
    price = fields.get("gasPrice", fields.get("maxFeePerGas", 0))
    fees = {
        name: gwei(fields[name])
        for name in ("gasPrice", "maxFeePerGas", "maxPriorityFeePerGas")
        if name in fields
    }
    return {
        "account": signer,
        "type": hex_quantity(fields.get("type", LEGACY)),
        "from": signer,
        "to": to,
        "contractCreation": to is None,
        "value": ether(fields["value"]),
        "data": calldata(fields["data"]),
        "nonce": fields["nonce"],
        "gasLimit": fields["gas"],
        "fees": fees,
        "maxGasCost": ether(fields["gas"] * price),
        "chainId": fields["chainId"],
        "accessListEntries": len(fields.get("accessList", ())),
    }


async def execute(wallet: Wallet, request: SigningRequest, read: ChainReader) -> dict[str, str]:
    """``{v, r, s, raw}``: r and s as 32-byte hex, v as a quantity (EIP-155 v or y-parity)."""
    # No checkpoint: signs in memory, after the approval its caller awaited.
    payload = payload_of(request, SignTransaction)
    signed = wallet.keyring.sign_transaction(account_of(request), dict(payload.fields))
    result = TransactionSignature(
        v=hex_quantity(signed.v),
        r=hex_bytes(signed.r.to_bytes(32, "big")),
        s=hex_bytes(signed.s.to_bytes(32, "big")),
        raw=hex_bytes(bytes(signed.raw_transaction)),
    )
    return msgspec.to_builtins(result)  # type: ignore[no-any-return]


HANDLER: Final = Handler(prepare, execute)
