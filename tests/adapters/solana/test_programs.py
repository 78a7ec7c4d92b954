"""Programs a dapp brings: deployed through ``sendTransaction`` with the upgradeable BPF loader
(buffer, ``Write``, ``DeployWithMaxDataLen``, as ``solana program deploy`` does) and loaded at
start from ``.so`` files named in the network's table. The program is SPL Memo's build that
LiteSVM carries, read through ``getAccountInfo`` (no binary is fetched from anywhere)."""

from __future__ import annotations

import base64
import struct
from pathlib import Path
from typing import Any

import pytest
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.system_program import ID as SYSTEM_PROGRAM
from solders.system_program import CreateAccountParams, create_account

from adapters._ed25519 import DEV_MNEMONIC, derive_keypairs
from adapters.solana import SolanaDevAdapter
from schemas.errors import ConfigError

from .conftest import Node, solana_spec
from .test_token import send

(ALICE,) = derive_keypairs(DEV_MNEMONIC, 1)
LOADER = Pubkey.from_string("BPFLoaderUpgradeab1e11111111111111111111111")
RENT = Pubkey.from_string("SysvarRent111111111111111111111111111111111")
CLOCK = Pubkey.from_string("SysvarC1ock11111111111111111111111111111111")
MEMO = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr"
#: Bytes of the program a ``Write`` carries (what fits a transaction with room to spare).
CHUNK = 900
BUFFER_HEADER = 37  # the loader's buffer state: tag and authority
PROGRAM_SIZE = 36  # the loader's program state: tag and program data address


async def memo_elf(node: Node) -> bytes:
    account = (await node("getAccountInfo", MEMO, {"encoding": "base64"}))["value"]
    return base64.b64decode(account["data"][0])


async def rent(node: Node, size: int) -> int:
    lamports: int = await node("getMinimumBalanceForRentExemption", size)
    return lamports


async def deploy(node: Node, elf: bytes) -> tuple[Pubkey, list[str]]:
    """``elf`` deployed as ``solana program deploy`` does it; the program id and the deploying
    transaction's logs."""
    payer = ALICE.pubkey()
    buffer, program = Keypair(), Keypair()
    await send(
        node,
        [ALICE, buffer],
        create_account(
            CreateAccountParams(
                from_pubkey=payer,
                to_pubkey=buffer.pubkey(),
                lamports=await rent(node, BUFFER_HEADER + len(elf)),
                space=BUFFER_HEADER + len(elf),
                owner=LOADER,
            )
        ),
        Instruction(  # InitializeBuffer
            LOADER,
            struct.pack("<I", 0),
            [AccountMeta(buffer.pubkey(), False, True), AccountMeta(payer, False, False)],
        ),
    )
    for offset in range(0, len(elf), CHUNK):
        chunk = elf[offset : offset + CHUNK]
        written = await send(
            node,
            [ALICE],
            Instruction(  # Write {offset, bytes}
                LOADER,
                struct.pack("<IIQ", 1, offset, len(chunk)) + chunk,
                [AccountMeta(buffer.pubkey(), False, True), AccountMeta(payer, True, False)],
            ),
        )
    landed_write = await node("getTransaction", written, {"encoding": "jsonParsed"})
    write = landed_write["transaction"]["message"]["instructions"][0]["parsed"]
    assert write == {
        "type": "write",
        "info": {
            "offset": offset,
            "bytes": base64.b64encode(chunk).decode(),
            "account": str(buffer.pubkey()),
            "authority": str(payer),
        },
    }
    program_data, _ = Pubkey.find_program_address([bytes(program.pubkey())], LOADER)
    signature = await send(
        node,
        [ALICE, program],
        create_account(
            CreateAccountParams(
                from_pubkey=payer,
                to_pubkey=program.pubkey(),
                lamports=await rent(node, PROGRAM_SIZE),
                space=PROGRAM_SIZE,
                owner=LOADER,
            )
        ),
        Instruction(  # DeployWithMaxDataLen
            LOADER,
            struct.pack("<IQ", 2, 2 * len(elf)),
            [
                AccountMeta(payer, True, True),
                AccountMeta(program_data, False, True),
                AccountMeta(program.pubkey(), False, True),
                AccountMeta(buffer.pubkey(), False, True),
                AccountMeta(RENT, False, False),
                AccountMeta(CLOCK, False, False),
                AccountMeta(SYSTEM_PROGRAM, False, False),
                AccountMeta(payer, True, False),
            ],
        ),
    )
    landed = await node("getTransaction", signature, {"encoding": "jsonParsed"})
    assert landed["meta"]["err"] is None, landed["meta"]
    deployed = landed["transaction"]["message"]["instructions"][1]
    assert deployed["program"] == "bpf-upgradeable-loader"
    assert deployed["parsed"] == {
        "type": "deployWithMaxDataLen",
        "info": {
            "maxDataLen": 2 * len(elf),
            "payerAccount": str(payer),
            "programDataAccount": str(program_data),
            "programAccount": str(program.pubkey()),
            "bufferAccount": str(buffer.pubkey()),
            "rentSysvar": str(RENT),
            "clockSysvar": str(CLOCK),
            "systemProgram": str(SYSTEM_PROGRAM),
            "authority": str(payer),
        },
    }
    logs: list[str] = landed["meta"]["logMessages"]
    return program.pubkey(), logs


async def invoke(node: Node, program: Pubkey, text: str) -> dict[str, Any]:
    signature = await send(
        node,
        [ALICE],
        Instruction(program, text.encode(), [AccountMeta(ALICE.pubkey(), True, False)]),
    )
    landed: dict[str, Any] = await node("getTransaction", signature)
    return landed


async def test_a_program_deployed_through_send_transaction_runs(node: Node) -> None:
    elf = await memo_elf(node)
    assert elf[:4] == b"\x7fELF"
    program, logs = await deploy(node, elf)
    assert f"Deployed program {program}" in logs
    account = (await node("getAccountInfo", str(program), {"encoding": "base64"}))["value"]
    assert account["owner"] == str(LOADER)
    assert account["executable"] is True
    ran = await invoke(node, program, "deployed")
    assert ran["meta"]["err"] is None
    lines = ran["meta"]["logMessages"]
    assert lines[0] == f"Program {program} invoke [1]"
    assert "Program log: deployed" in lines
    assert lines[-1] == f"Program {program} success"


async def test_programs_loaded_at_start_from_files(node: Node, tmp_path: Path) -> None:
    elf = tmp_path / "memo.so"
    elf.write_bytes(await memo_elf(node))
    program = Keypair().pubkey()
    adapter = SolanaDevAdapter(solana_spec(programs=[{"id": str(program), "path": str(elf)}]))
    await adapter.start()
    try:
        loaded = Node(adapter)
        account = (await loaded("getAccountInfo", str(program), {"encoding": "base64"}))["value"]
        assert (account["owner"], account["executable"]) == (str(LOADER), True)
        ran = await invoke(loaded, program, "from a file")
        assert "Program log: from a file" in ran["meta"]["logMessages"]
        # the programs do not change the chain: same genesis, same CAIP-2 id
        assert adapter.spec.chain == node.adapter.spec.chain
    finally:
        await adapter.aclose()


async def test_a_file_that_is_no_program_fails_the_start(tmp_path: Path) -> None:
    junk = tmp_path / "junk.so"
    junk.write_bytes(b"not an ELF")
    adapter = SolanaDevAdapter(
        solana_spec(programs=[{"id": str(Keypair().pubkey()), "path": str(junk)}])
    )
    with pytest.raises(ConfigError, match=r"^networks\.solana \(solana-dev adapter\): a program"):
        await adapter.start()


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ({"id": "not-base58!", "path": __file__}, "is not a base58 address"),
        ({"id": MEMO, "path": "/nowhere/memo.so"}, "does not exist"),
        ({"id": MEMO, "path": __file__, "upgradeable": True}, "unknown field"),
    ],
)
def test_bad_program_entries_are_config_errors(entry: dict[str, Any], reason: str) -> None:
    with pytest.raises(ConfigError, match=reason):
        SolanaDevAdapter(solana_spec(programs=[entry]))


async def test_a_program_file_replaces_a_program_the_runtime_carries(
    node: Node, tmp_path: Path
) -> None:
    """How to run another build of an SPL program (e.g. the spl-memo release, whose logs differ
    from LiteSVM's build): its ``.so`` under the program's id. Here Memo v3's build replaces
    Memo v1 (which logs nothing of the memo)."""
    memo_v1 = Pubkey.from_string("Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo")
    before = await invoke(node, memo_v1, "plain")
    assert "Program log: plain" not in before["meta"]["logMessages"]
    elf = tmp_path / "memo_v3.so"
    elf.write_bytes(await memo_elf(node))
    adapter = SolanaDevAdapter(solana_spec(programs=[{"id": str(memo_v1), "path": str(elf)}]))
    await adapter.start()
    try:
        after = await invoke(Node(adapter), memo_v1, "plain")
        assert "Program log: plain" in after["meta"]["logMessages"]
    finally:
        await adapter.aclose()
