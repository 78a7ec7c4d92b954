"""Fixtures for the dev chain tests: real py-evm chains, transactions signed by eth-account."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
import pytest
import trio
from eth_account import Account
from eth_account.signers.local import LocalAccount
from eth_utils.address import to_checksum_address

from adapters.base import NetworkSpec
from adapters.devchain import DevChainAdapter
from schemas.errors import RpcError

CHAIN = "eip155:1337"
GWEI = 10**9


def dev_spec(**options: Any) -> NetworkSpec:
    return NetworkSpec(name="dev", chain=CHAIN, adapter="devchain", options=options)


class Rpc:
    """Calls an adapter as the broker does (params as raw JSON) and decodes the result."""

    def __init__(self, adapter: DevChainAdapter) -> None:
        self.adapter = adapter

    async def raw(self, method: str, params: bytes) -> Any:
        result = await self.adapter.call(CHAIN, method, msgspec.Raw(params))
        if isinstance(result, msgspec.Raw):
            return msgspec.json.decode(result)
        return msgspec.json.decode(msgspec.json.encode(result))

    async def __call__(self, method: str, *params: Any) -> Any:
        return await self.raw(method, msgspec.json.encode(list(params)))

    async def error(self, method: str, *params: Any) -> RpcError:
        try:
            result = await self(method, *params)
        except RpcError as exc:
            return exc
        raise AssertionError(f"{method} returned {result!r} instead of failing")


class Wallet:
    """The dev accounts as eth-account signers, tracking nonces."""

    def __init__(self, adapter: DevChainAdapter) -> None:
        self.accounts: list[LocalAccount] = [
            Account.from_key(a.key.to_bytes()) for a in adapter.accounts
        ]
        self.rpc = Rpc(adapter)

    def address(self, index: int) -> str:
        return self.accounts[index].address.lower()

    async def sign(self, index: int, tx: Mapping[str, Any], **extra: Any) -> bytes:
        account = self.accounts[index]
        fields = {"chainId": 1337, "value": 0, "data": b"", **tx}
        if isinstance(fields.get("to"), str):
            fields["to"] = to_checksum_address(fields["to"])
        if "nonce" not in fields:
            count = await self.rpc("eth_getTransactionCount", account.address, "pending")
            fields["nonce"] = int(count, 16)
        if "gasPrice" not in fields and fields.get("type") != 0:
            fields.setdefault("maxFeePerGas", 10 * GWEI)
            fields.setdefault("maxPriorityFeePerGas", GWEI)
        fields.setdefault("gas", 100_000)
        return bytes(account.sign_transaction(fields, **extra).raw_transaction)

    async def send(self, index: int, tx: Mapping[str, Any], **extra: Any) -> str:
        raw = await self.sign(index, tx, **extra)
        tx_hash: str = await self.rpc("eth_sendRawTransaction", "0x" + raw.hex())
        return tx_hash


@pytest.fixture
async def adapter() -> DevChainAdapter:
    """A fresh dev chain mining on demand (token deployed at block 1, seeded at block 2)."""
    dev = DevChainAdapter(dev_spec())
    await dev.start()
    return dev


@pytest.fixture
def rpc(adapter: DevChainAdapter) -> Rpc:
    return Rpc(adapter)


@pytest.fixture
def wallet(adapter: DevChainAdapter) -> Wallet:
    return Wallet(adapter)


@pytest.fixture(scope="module")
def shared_adapter() -> DevChainAdapter:
    """A dev chain started once per module, for tests that only read."""
    dev = DevChainAdapter(dev_spec())
    trio.run(dev.start)
    return dev
