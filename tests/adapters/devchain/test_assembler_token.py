"""The EVM assembler and the demo token it builds, run on the dev chain."""

from __future__ import annotations

import pytest
from eth_abi.abi import decode

from adapters.devchain import DevChainAdapter
from adapters.devchain.assembler import Data, Label, Mark, Ref, assemble, deployer
from adapters.devchain.token import NAME, SELECTORS, SYMBOL, balance_of_calldata, transfer_calldata

from .conftest import Rpc, Wallet


def test_pushes_pick_the_smallest_width() -> None:
    assert assemble([0, 1, 255, 256, b"\x00\x01", "ADD"]) == bytes.fromhex(
        "5f" "6001" "60ff" "610100" "610001" "01"
    )  # fmt: skip


def test_labels_marks_refs_and_data() -> None:
    code = assemble(
        [Ref("end"), "JUMP", Mark("blob"), Data(b"\xaa\xbb"), Label("end"), Ref("blob")]
    )
    assert code == bytes.fromhex("610006" "56" "aabb" "5b" "610004")  # fmt: skip


@pytest.mark.parametrize(
    ("program", "message"),
    [
        (["NOPE"], "unknown opcode"),
        ([Ref("x")], "undefined label"),
        ([Label("x"), Label("x")], "duplicate label"),
        ([2**256], "out of range"),
        ([b""], "cannot push 0 bytes"),
    ],
)
def test_assembler_errors(program: list[object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        assemble(program)  # type: ignore[arg-type]


def test_deployer_returns_the_runtime() -> None:
    init = deployer(b"\x60\x01")
    assert init.endswith(b"\x60\x01")
    assert init[:3] == b"\x61\x00\x02"  # PUSH2 len(runtime)


async def call(rpc: Rpc, adapter: DevChainAdapter, data: bytes) -> bytes:
    result = await rpc("eth_call", {"to": adapter.token_address, "data": "0x" + data.hex()})
    return bytes.fromhex(result[2:])


async def test_token_views(adapter: DevChainAdapter, rpc: Rpc, wallet: Wallet) -> None:
    assert decode(["string"], await call(rpc, adapter, SELECTORS["name()"])) == (NAME,)
    assert decode(["string"], await call(rpc, adapter, SELECTORS["symbol()"])) == (SYMBOL,)
    assert decode(["uint8"], await call(rpc, adapter, SELECTORS["decimals()"])) == (18,)
    second = bytes.fromhex(wallet.address(1)[2:])
    balance = await call(rpc, adapter, balance_of_calldata(second))
    assert decode(["uint256"], balance) == (10_000 * 10**18,)


async def test_token_transfer_moves_balances(
    adapter: DevChainAdapter, rpc: Rpc, wallet: Wallet
) -> None:
    sender, receiver = (bytes.fromhex(wallet.address(i)[2:]) for i in (1, 7))
    tx_hash = await wallet.send(
        1, {"to": adapter.token_address, "data": transfer_calldata(receiver, 40)}
    )
    receipt = await rpc("eth_getTransactionReceipt", tx_hash)
    assert receipt["status"] == "0x1"
    returned = await rpc(
        "eth_call",
        {
            "from": wallet.address(1),
            "to": adapter.token_address,
            "data": "0x" + transfer_calldata(receiver, 1).hex(),
        },
    )
    assert decode(["bool"], bytes.fromhex(returned[2:])) == (True,)
    for owner, expected in ((sender, 10_000 * 10**18 - 40), (receiver, 10_000 * 10**18 + 40)):
        assert decode(["uint256"], await call(rpc, adapter, balance_of_calldata(owner))) == (
            expected,
        )


async def test_transfer_beyond_the_balance_reverts(
    adapter: DevChainAdapter, rpc: Rpc, wallet: Wallet
) -> None:
    receiver = bytes.fromhex(wallet.address(7)[2:])
    too_much = transfer_calldata(receiver, 10**30)
    tx_hash = await wallet.send(1, {"to": adapter.token_address, "data": too_much})
    receipt = await rpc("eth_getTransactionReceipt", tx_hash)
    assert receipt["status"] == "0x0"
    assert receipt["logs"] == []
    unknown = await rpc.error("eth_call", {"to": adapter.token_address, "data": "0xdeadbeef"})
    assert unknown.message == "execution reverted"
