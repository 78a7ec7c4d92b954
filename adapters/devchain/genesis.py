"""Genesis states and headers: the dev chain's, and one read from a geth genesis file."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from eth.constants import ZERO_ADDRESS, ZERO_HASH32
from eth.vm.forks.cancun.constants import BEACON_ROOTS_ADDRESS, BEACON_ROOTS_CONTRACT_CODE
from eth.vm.forks.prague.constants import HISTORY_STORAGE_ADDRESS, HISTORY_STORAGE_CONTRACT_CODE

from .accounts import DevAccount

DEV_BALANCE: Final = 10_000 * 10**18
DEV_GAS_LIMIT: Final = 30_000_000
INITIAL_BASE_FEE: Final = 10**9  # geth's params.InitialBaseFee

AccountState = dict[bytes, dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Genesis:
    """What py-evm needs to build block 0: header params and the initial state."""

    params: dict[str, Any]
    state: AccountState
    config: Mapping[str, Any] = field(default_factory=dict)


def _account(balance: int = 0, nonce: int = 0, code: bytes = b"", storage: Any = None) -> Any:
    return {"balance": balance, "nonce": nonce, "code": code, "storage": storage or {}}


def dev_genesis(accounts: Sequence[DevAccount], *, timestamp: int | None = None) -> Genesis:
    """A post-merge genesis funding ``accounts``, with the EIP-4788 and EIP-2935 system
    contracts installed as geth's dev mode does."""
    state: AccountState = {a.address: _account(balance=DEV_BALANCE) for a in accounts}
    state[BEACON_ROOTS_ADDRESS] = _account(nonce=1, code=BEACON_ROOTS_CONTRACT_CODE)
    state[HISTORY_STORAGE_ADDRESS] = _account(nonce=1, code=HISTORY_STORAGE_CONTRACT_CODE)
    params = {
        "difficulty": 0,
        "gas_limit": DEV_GAS_LIMIT,
        "timestamp": int(time.time()) if timestamp is None else timestamp,
        "extra_data": b"",
        "nonce": b"\0" * 8,
        "mix_hash": ZERO_HASH32,
        "coinbase": ZERO_ADDRESS,
        "base_fee_per_gas": INITIAL_BASE_FEE,
    }
    return Genesis(params=params, state=state)


def _int(value: Any) -> int:
    """geth genesis numbers: JSON numbers, hex strings or decimal strings."""
    if isinstance(value, int):
        return value
    text = str(value)
    return int(text, 16) if text[:2] in ("0x", "0X") else int(text)


def _bytes(value: Any) -> bytes:
    text = str(value or "")
    return bytes.fromhex(text[2:] if text[:2] in ("0x", "0X") else text)


def _word(value: Any) -> int:
    return int.from_bytes(_bytes(value).rjust(32, b"\0"), "big")


def read_geth_genesis(path: str | Path) -> Genesis:
    """Parse a geth ``genesis.json``: the state from ``alloc`` and the header fields.

    Fork-dependent header fields (base fee, blob gas, ...) are added by :func:`genesis_header_params`
    once the fork at block 0 is known.
    """
    raw = json.loads(Path(path).read_text())
    state: AccountState = {}
    for key, account in raw.get("alloc", {}).items():
        storage = {_word(k): _word(v) for k, v in (account.get("storage") or {}).items()}
        state[_bytes(key).rjust(20, b"\0")] = _account(
            balance=_int(account.get("balance", 0)),
            nonce=_int(account.get("nonce", 0)),
            code=_bytes(account.get("code")),
            storage={k: v for k, v in storage.items() if v},
        )
    params: dict[str, Any] = {
        "difficulty": _int(raw.get("difficulty", 0)),
        "gas_limit": _int(raw.get("gasLimit", 0)),
        "timestamp": _int(raw.get("timestamp", 0)),
        "extra_data": _bytes(raw.get("extraData")),
        "nonce": _int(raw.get("nonce", 0)).to_bytes(8, "big"),
        "mix_hash": _bytes(raw.get("mixHash")).rjust(32, b"\0")
        if raw.get("mixHash")
        else ZERO_HASH32,
        "coinbase": _bytes(raw.get("coinbase")).rjust(20, b"\0")
        if raw.get("coinbase")
        else ZERO_ADDRESS,
    }
    for key, name in (
        ("baseFeePerGas", "base_fee_per_gas"),
        ("excessBlobGas", "excess_blob_gas"),
        ("blobGasUsed", "blob_gas_used"),
    ):
        if raw.get(key) is not None:
            params[name] = _int(raw[key])
    return Genesis(params=params, state=state, config=raw.get("config", {}))


def genesis_header_params(genesis: Genesis, fields: Sequence[str]) -> dict[str, Any]:
    """The header params for a genesis VM whose header has ``fields``, defaulted as geth does."""
    params = dict(genesis.params)
    if "base_fee_per_gas" in fields:
        params.setdefault("base_fee_per_gas", INITIAL_BASE_FEE)
    else:
        params.pop("base_fee_per_gas", None)
    for name in ("excess_blob_gas", "blob_gas_used"):
        if name in fields:
            params.setdefault(name, 0)
        else:
            params.pop(name, None)
    if "parent_beacon_block_root" in fields:
        params["parent_beacon_block_root"] = ZERO_HASH32
    return params
