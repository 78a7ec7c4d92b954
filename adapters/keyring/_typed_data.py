"""``eth_signTypedData_v4``: an EIP-712 signature over typed structured data.

The typed data may come as an object or as its JSON text (MetaMask accepts both). Before anything
is hashed, every field the types declare must be present in the message: eth-account would encode a
missing field silently, and the signer would approve something other than what the dapp meant.
A domain ``chainId`` other than the scope's chain is refused (4100), as for transactions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

import msgspec
from eth_account.messages import encode_typed_data

from adapters.base import ChainReader, SigningRequest
from adapters.keyring import _params
from adapters.keyring._render import hex_bytes
from adapters.keyring._wallet import Handler, Prepared, Wallet, account_of, payload_of
from schemas.errors import Unauthorized, invalid_argument

DOMAIN_FIELDS: Final = ("name", "version", "chainId", "verifyingContract", "salt")
_ARGUMENT: Final = 1  # the typed data is the second param


class _Field(msgspec.Struct):
    name: str
    type: str


class _TypedData(msgspec.Struct, rename="camel"):
    types: dict[str, list[_Field]]
    primary_type: str
    domain: dict[str, Any]
    message: dict[str, Any]


@dataclass(frozen=True, slots=True)
class SignTypedData:
    """The full typed-data object as eth-account takes it."""

    typed_data: dict[str, Any]


def prepare(wallet: Wallet, chain_id: int, params: list[Any], permitted: list[str]) -> Prepared:
    """Check ``[address, typedData]`` and that it encodes; the summary shows domain and message."""
    _params.check_count(params, 2)
    address = _params.address(params[0], 0)
    document = _document(params[1])
    typed = _params.convert(document, _TypedData, _ARGUMENT)
    _check_types(typed)
    full = {
        "types": document["types"],
        "primaryType": typed.primary_type,
        "domain": typed.domain,
        "message": typed.message,
    }
    domain_chain = _domain_chain_id(typed.domain)
    try:
        encode_typed_data(full_message=full)
    except Exception as exc:
        # Whatever the encoder rejects (a bad uint, an unknown type) is the dapp's input.
        raise invalid_argument(_ARGUMENT, f"cannot encode typed data: {exc}") from None
    if domain_chain is not None and domain_chain != chain_id:
        raise Unauthorized(f"domain chainId {domain_chain} is not the chain of the scope")
    signer = wallet.signer(address, permitted)
    summary = {
        "account": signer,
        "domain": {name: typed.domain[name] for name in DOMAIN_FIELDS if name in typed.domain},
        "primaryType": typed.primary_type,
        "message": typed.message,
    }
    return Prepared(signer, summary, SignTypedData(full))


def _document(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            raise invalid_argument(_ARGUMENT, "typed data string is not JSON") from None
    return value


def _check_types(typed: _TypedData) -> None:
    domain_type = typed.types.get("EIP712Domain")
    if domain_type is None:
        raise _params.missing_field(_ARGUMENT, "types.EIP712Domain")
    for field in domain_type:
        if field.name not in DOMAIN_FIELDS:
            reason = f"unknown domain field {field.name!r}; want one of {', '.join(DOMAIN_FIELDS)}"
            raise _params.field_error(_ARGUMENT, "types.EIP712Domain", reason)
    if typed.primary_type not in typed.types:
        raise _params.field_error(_ARGUMENT, "primaryType", "names no type in `types`")
    _check_struct(typed.types, "EIP712Domain", typed.domain, "domain")
    _check_struct(typed.types, typed.primary_type, typed.message, "message")


def _check_struct(types: dict[str, list[_Field]], name: str, value: Any, path: str) -> None:
    if not isinstance(value, dict):
        raise _params.field_error(_ARGUMENT, path, f"want an object of type {name}")
    for field in types[name]:
        where = f"{path}.{field.name}"
        if field.name not in value:
            raise _params.field_error(_ARGUMENT, where, f"missing value of type {field.type}")
        _check_value(types, field.type, value[field.name], where)


def _check_value(types: dict[str, list[_Field]], type_: str, value: Any, path: str) -> None:
    if type_.endswith("]"):
        if not isinstance(value, list):
            raise _params.field_error(_ARGUMENT, path, f"want an array of type {type_}")
        item_type = type_[: type_.rindex("[")]
        for i, item in enumerate(value):
            _check_value(types, item_type, item, f"{path}[{i}]")
    elif type_ in types:
        _check_struct(types, type_, value, path)
    # Atomic values are checked by the encoder.


def _domain_chain_id(domain: dict[str, Any]) -> int | None:
    value = domain.get("chainId")
    if value is None:
        return None
    try:
        if isinstance(value, str):
            return int(value, 16) if value.lower().startswith("0x") else int(value)
        return int(value)
    except (TypeError, ValueError):
        raise _params.field_error(_ARGUMENT, "domain.chainId", "want a chain id") from None


async def execute(wallet: Wallet, request: SigningRequest, read: ChainReader) -> str:
    """The 65-byte EIP-712 signature as 0x hex."""
    # No checkpoint: signs in memory, after the approval its caller awaited.
    payload = payload_of(request, SignTypedData)
    return hex_bytes(wallet.keyring.sign_typed_data(account_of(request), payload.typed_data))


HANDLER: Final = Handler(prepare, execute)
