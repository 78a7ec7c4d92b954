"""Starting from a geth genesis and an RLP chain file: parsing, fork schedules, a round trip."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import rlp
from eth.vm.forks.cancun import CancunVM
from eth.vm.forks.london import LondonVM
from eth.vm.forks.paris import ParisVM
from eth.vm.forks.prague import PragueVM
from eth_typing import Hash32

from adapters.devchain import DevChainAdapter
from adapters.devchain.forks import ForkScheduleError, HeaderSummary, schedule_from_geth_config
from adapters.devchain.genesis import dev_genesis
from adapters.devchain.geth_import import (
    ChainFileError,
    import_geth_chain,
    read_forkchoice,
    split_rlp_items,
)

from .conftest import Rpc, Wallet, dev_spec

ALL_BLOCK_FORKS_AT_ZERO = {
    key: 0
    for key in [
        "homesteadBlock",
        "eip150Block",
        "eip155Block",
        "eip158Block",
        "byzantiumBlock",
        "constantinopleBlock",
        "petersburgBlock",
        "istanbulBlock",
        "muirGlacierBlock",
        "berlinBlock",
        "londonBlock",
        "arrowGlacierBlock",
        "grayGlacierBlock",
    ]
}


def test_split_rlp_items() -> None:
    items = [rlp.encode(x) for x in ([b"a"], [b"x" * 100], b"y" * 70, b"z", [[b"q" * 60] * 9])]
    assert split_rlp_items(b"".join(items)) == items
    with pytest.raises(ChainFileError, match="truncated"):
        split_rlp_items(items[1][:-1])


def headers(count: int, *, difficulty: int = 2) -> list[HeaderSummary]:
    return [HeaderSummary(n, 10 * n, difficulty) for n in range(1, count + 1)]


def test_schedule_by_block_difficulty_and_time() -> None:
    config = {
        **ALL_BLOCK_FORKS_AT_ZERO,
        "londonBlock": 3,
        "arrowGlacierBlock": 3,
        "grayGlacierBlock": 3,
        "terminalTotalDifficulty": 10,
        "shanghaiTime": 100,
        "cancunTime": 100,
        "pragueTime": 500,
        "blobSchedule": {"cancun": {"target": 3, "max": 6, "baseFeeUpdateFraction": 1234}},
    }
    schedule = schedule_from_geth_config(
        config, genesis_difficulty=2, genesis_time=0, headers=headers(20)
    )
    blocks = [block for block, _ in schedule.vm_configuration]
    assert blocks == [0, 3, 5, 10]  # genesis, London, the merge (parent TD 10), Cancun
    vms = [vm for _, vm in schedule.vm_configuration]
    assert vms[0].fork == "berlin"  # the newest of the forks at block 0
    assert issubclass(vms[1], LondonVM)
    assert vms[1].fork == "gray-glacier"
    assert vms[2] is ParisVM
    assert vms[3] is CancunVM  # Prague's time is never reached: left out
    assert schedule.blob_fee_fraction(CancunVM) == 1234
    assert schedule.blob_fee_fraction(PragueVM) == 5_007_716
    assert schedule.blob_fee_fraction(LondonVM) is None


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"osakaTime": 0}, "osakaTime is not supported"),
        ({"daoForkSupport": True, "homesteadBlock": 0}, "daoForkSupport"),
        ({"homesteadBlock": 5, "eip150Block": 2}, "activates before an older fork"),
    ],
)
def test_unsupported_schedules(config: dict[str, Any], message: str) -> None:
    with pytest.raises(ForkScheduleError, match=message):
        schedule_from_geth_config(config, genesis_difficulty=1, genesis_time=0, headers=headers(9))


def test_read_forkchoice(tmp_path: Path) -> None:
    path = tmp_path / "fcu.json"
    path.write_text(
        json.dumps(
            {
                "method": "engine_forkchoiceUpdatedV3",
                "params": [
                    {
                        "headBlockHash": "0xAB",
                        "safeBlockHash": "0xcd",
                        "finalizedBlockHash": "0xef",
                    },
                    None,
                ],
            }
        )
    )
    assert read_forkchoice(path) == {
        "headBlockHash": "0xab",
        "safeBlockHash": "0xcd",
        "finalizedBlockHash": "0xef",
    }


def _hex(value: int | bytes) -> str:
    return hex(value) if isinstance(value, int) else "0x" + value.hex()


async def export_as_geth_files(adapter: DevChainAdapter, directory: Path) -> dict[str, Path]:
    """The dev chain written as a geth genesis, an RLP chain file and a forkchoice request."""
    chain = adapter.chain
    genesis_record = chain.by_number(0)
    assert genesis_record is not None
    genesis = dev_genesis(adapter.accounts, timestamp=genesis_record.timestamp)
    config = {
        "chainId": 1337,
        **ALL_BLOCK_FORKS_AT_ZERO,
        "terminalTotalDifficulty": 0,
        "shanghaiTime": 0,
        "cancunTime": 0,
        "pragueTime": 0,
    }
    document = {
        "config": config,
        "nonce": "0x0",
        "timestamp": _hex(genesis.params["timestamp"]),
        "extraData": "0x",
        "gasLimit": _hex(genesis.params["gas_limit"]),
        "difficulty": "0x0",
        "baseFeePerGas": _hex(genesis.params["base_fee_per_gas"]),
        "alloc": {
            address.hex(): {
                "balance": _hex(account["balance"]),
                "nonce": _hex(account["nonce"]),
                "code": _hex(account["code"]),
            }
            for address, account in genesis.state.items()
        },
    }
    blocks = [
        chain.evm.get_block_by_hash(Hash32(bytes.fromhex(record.hash[2:])))
        for record in chain.canonical[1:]
    ]
    paths = {
        "genesis": directory / "genesis.json",
        "chain_file": directory / "chain.rlp",
        "forkchoice": directory / "fcu.json",
    }
    paths["genesis"].write_text(json.dumps(document))
    paths["chain_file"].write_bytes(b"".join(rlp.encode(block) for block in blocks))
    head = chain.canonical[-2].hash  # the forkchoice names the block before the last one
    paths["forkchoice"].write_text(
        json.dumps(
            {
                "params": [
                    {
                        "headBlockHash": head,
                        "safeBlockHash": chain.canonical[1].hash,
                        "finalizedBlockHash": chain.canonical[1].hash,
                    }
                ]
            }
        )
    )
    return paths


async def test_round_trip_through_geth_files(
    adapter: DevChainAdapter, wallet: Wallet, rpc: Rpc, tmp_path: Path
) -> None:
    await wallet.send(1, {"to": wallet.address(2), "value": 3})
    await wallet.send(2, {"type": 1, "to": wallet.address(3), "gasPrice": 10**10})
    await rpc("evm_mine")
    paths = await export_as_geth_files(adapter, tmp_path)
    imported = DevChainAdapter(dev_spec(**{k: str(v) for k, v in paths.items()}))
    await imported.start()
    other = Rpc(imported)
    assert await other("eth_blockNumber") == "0x4"  # the forkchoice head, not the file's last
    for number in range(5):
        block = await rpc("eth_getBlockByNumber", hex(number), True)
        assert await other("eth_getBlockByNumber", hex(number), True) == block
        assert await other("eth_getBlockReceipts", hex(number)) == await rpc(
            "eth_getBlockReceipts", hex(number)
        )
    assert await other("eth_getBlockByNumber", "0x5", False) is None
    for tag in ("safe", "finalized"):
        assert (await other("eth_getBlockByNumber", tag, False))["number"] == "0x1"
    assert (await other("eth_getBlockByNumber", "latest", False))["number"] == "0x4"
    # The imported chain keeps going: it mines and accepts transactions.
    await other("evm_mine")
    assert await other("eth_blockNumber") == "0x5"


async def test_genesis_without_chain_file(
    adapter: DevChainAdapter, rpc: Rpc, tmp_path: Path
) -> None:
    paths = await export_as_geth_files(adapter, tmp_path)
    fresh = DevChainAdapter(dev_spec(genesis=str(paths["genesis"])))
    await fresh.start()
    genesis = await Rpc(fresh)("eth_getBlockByNumber", "latest", False)
    assert genesis == await rpc("eth_getBlockByNumber", "0x0", False)
    assert fresh.accounts == ()


async def test_chain_file_must_fit_the_genesis(
    adapter: DevChainAdapter, rpc: Rpc, tmp_path: Path
) -> None:
    await rpc("evm_mine")
    paths = await export_as_geth_files(adapter, tmp_path)
    document = json.loads(paths["genesis"].read_text())
    document["extraData"] = "0x01"  # another genesis hash
    paths["genesis"].write_text(json.dumps(document))
    with pytest.raises(ChainFileError, match="neither the genesis"):
        import_geth_chain(paths["genesis"], paths["chain_file"])
    mismatched = DevChainAdapter(
        dev_spec(genesis=str(paths["genesis"]), chain_file=str(paths["chain_file"]))
    )
    document["config"]["chainId"] = 5
    paths["genesis"].write_text(json.dumps(document))
    with pytest.raises(ValueError, match="does not match the genesis chain id 5"):
        await mismatched.start()


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="need a `genesis`"):
        DevChainAdapter(dev_spec(chain_file="chain.rlp"))
    with pytest.raises(ValueError, match="block_time"):
        DevChainAdapter(dev_spec(block_time=-1))
