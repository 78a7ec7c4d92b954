"""SPL Memo's logs as the spl-memo release writes them (``Signed by <key>``, ``Memo (len N):
"<text>"``), where the build LiteSVM carries writes them otherwise; failed invocations and a memo
program loaded from a file are left as they ran."""

from __future__ import annotations

from pathlib import Path

import pytest
from solders.instruction import AccountMeta, Instruction
from solders.pubkey import Pubkey

from adapters._ed25519 import DEV_MNEMONIC, derive_keypairs
from adapters.solana import SolanaDevAdapter
from adapters.solana._memo_logs import MEMO_V3, as_released, debug_str
from schemas.errors import RpcError

from .conftest import Node, solana_spec
from .test_programs import memo_elf
from .test_token import send

ALICE, BOB = derive_keypairs(DEV_MNEMONIC, 2)
MEMO = Pubkey.from_string(MEMO_V3)


async def memo_logs(node: Node, data: bytes, *signers: Pubkey) -> tuple[list[str], object]:
    keypairs = [k for k in (ALICE, BOB) if k.pubkey() in signers or k is ALICE]
    signature = await send(
        node,
        keypairs,
        Instruction(MEMO, data, [AccountMeta(signer, True, False) for signer in signers]),
    )
    landed = await node("getTransaction", signature)
    return landed["meta"]["logMessages"], landed["meta"]["err"]


async def test_a_memo_logs_as_the_release_does(node: Node) -> None:
    logs, err = await memo_logs(node, b"thanks", ALICE.pubkey(), BOB.pubkey())
    assert err is None
    assert logs[0] == f"Program {MEMO_V3} invoke [1]"
    assert logs[1:4] == [
        f"Program log: Signed by {ALICE.pubkey()}",
        f"Program log: Signed by {BOB.pubkey()}",
        'Program log: Memo (len 6): "thanks"',
    ]
    assert logs[4].startswith(f"Program {MEMO_V3} consumed ")
    assert logs[5] == f"Program {MEMO_V3} success"
    unsigned, _ = await memo_logs(node, 'two\nlines "q" é'.encode())
    assert unsigned[1] == 'Program log: Memo (len 16): "two\\nlines \\"q\\" é"'


async def test_a_failed_memo_is_left_as_it_ran(node: Node) -> None:
    with pytest.raises(RpcError) as caught:
        await memo_logs(node, b"\xff\xfe", ALICE.pubkey())
    assert caught.value.code == -32002
    assert "Program log: Signed by:" in caught.value.data["logs"]


async def test_a_memo_program_from_a_file_logs_its_own_words(node: Node, tmp_path: Path) -> None:
    elf = tmp_path / "memo.so"
    elf.write_bytes(await memo_elf(node))
    adapter = SolanaDevAdapter(solana_spec(programs=[{"id": MEMO_V3, "path": str(elf)}]))
    await adapter.start()
    try:
        logs, _ = await memo_logs(Node(adapter), b"as built", ALICE.pubkey())
        assert "Program log: Memo (len 8)" in logs
    finally:
        await adapter.aclose()


def test_rust_debug_quoting_and_other_programs_untouched() -> None:
    assert debug_str('a"b\\c\td\x1b') == '"a\\"b\\\\c\\td\\u{1b}"'
    assert debug_str("🦖 ok") == '"🦖 ok"'
    other = ("Program X invoke [1]", "Program log: Memo (len 1)", "Program log: a")
    assert as_released(other) == other
