"""The keyring's Solana side, sans broker: its accounts, the conformance checks, the operator's
summaries and the Sign In With Solana text."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from solders.hash import Hash
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.signature import Signature
from solders.system_program import TransferParams, transfer
from solders.transaction import VersionedTransaction

from adapters.conformance import check_account_adapter
from adapters.keyring import DEV_MNEMONIC, KeyringAdapter
from adapters.keyring._keys import KeyLoadError
from adapters.keyring._solana import describe_transaction, sign_in_message
from schemas.errors import InvalidParams, Unauthorized

CHAIN = "solana:FKgV6EmdcJjWdiHxuVJKdr6qyT74uYMU"
ALICE = "oeYf6KAJkLYhBuR8CiGc6L4D4Xtfepr85fuDgA9kq96"
BOB = "AqynRZwvVqUPRwRJXvm6odUb3t93fDjnWe3p6BeuUFxD"


async def started() -> KeyringAdapter:
    adapter = KeyringAdapter(["eip155:1337", CHAIN], mnemonic=DEV_MNEMONIC)
    await adapter.start()
    return adapter


async def test_solana_accounts_are_the_mnemonics_ed25519_keys() -> None:
    adapter = await started()
    assert list(adapter.accounts(CHAIN))[:2] == [ALICE, BOB]
    assert adapter.accounts("eip155:1337")[0] == "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"
    assert "signMessage" in adapter.methods(CHAIN)
    assert "personal_sign" not in adapter.methods(CHAIN)
    check_account_adapter(adapter)


async def test_prepare_checks_the_account_exactly() -> None:
    adapter = await started()
    params = {"account": {"address": ALICE}, "message": base64.b64encode(b"hi").decode()}
    request = adapter.prepare(CHAIN, "signMessage", params, [ALICE])
    assert request.account == ALICE
    assert request.summary == {"account": ALICE, "message": "hi", "encoding": "utf-8"}
    with pytest.raises(Unauthorized):
        adapter.prepare(CHAIN, "signMessage", params, [ALICE.lower()])
    with pytest.raises(InvalidParams):
        adapter.prepare(CHAIN, "signMessage", {"message": "aGk="}, [ALICE])
    with pytest.raises(InvalidParams):
        adapter.prepare("eip155:1337", "personal_sign", {"not": "a list"}, [ALICE])

    async def no_reads(method: str, params: list[object]) -> object:
        raise AssertionError("signMessage reads nothing")

    signed = await adapter.execute(request, no_reads)
    assert Signature.from_string(signed["signature"]).verify(Pubkey.from_string(ALICE), b"hi")


def test_a_transfer_is_summarised_with_its_lamports() -> None:
    payer, to = Pubkey.from_string(ALICE), Pubkey.from_string(BOB)
    instruction = transfer(TransferParams(from_pubkey=payer, to_pubkey=to, lamports=1_500_000_000))
    message = Message.new_with_blockhash([instruction], payer, Hash.default())
    summary = describe_transaction(VersionedTransaction.populate(message, [Signature.default()]))
    assert summary == {
        "feePayer": ALICE,
        "instructions": [
            {
                "program": "11111111111111111111111111111111",
                "accounts": [ALICE, BOB],
                "transfer": {"from": ALICE, "to": BOB, "lamports": "1500000000", "sol": "1.5"},
            }
        ],
    }


def test_sign_in_with_solana_text() -> None:
    text = sign_in_message(
        "dapp.example",
        ALICE,
        {"statement": "Welcome", "uri": "https://dapp.example", "nonce": "n1", "resources": ["a"]},
    )
    assert text == (
        f"dapp.example wants you to sign in with your Solana account:\n{ALICE}\n\nWelcome\n\n"
        "URI: https://dapp.example\nNonce: n1\nResources:\n- a"
    )


async def test_solana_keys_from_keypair_files_in_the_keystore_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keypair = Keypair()
    (tmp_path / "id.json").write_text(json.dumps(list(bytes(keypair))))
    (tmp_path / "README").write_text("not a key")
    monkeypatch.delenv("SCOPECAST_KEYSTORE_PASSPHRASE", raising=False)  # none is encrypted
    adapter = KeyringAdapter([CHAIN], keystore_dir=tmp_path)
    await adapter.start()
    address = str(keypair.pubkey())
    assert adapter.accounts(CHAIN) == [address]
    params = {"account": {"address": address}, "message": base64.b64encode(b"hi").decode()}

    async def no_reads(method: str, params: list[object]) -> object:
        raise AssertionError("signMessage reads nothing")

    signed = await adapter.execute(
        adapter.prepare(CHAIN, "signMessage", params, [address]), no_reads
    )
    assert Signature.from_string(signed["signature"]).verify(keypair.pubkey(), b"hi")


async def test_a_keystore_dir_without_solana_keys_is_refused_for_a_solana_chain(
    tmp_path: Path,
) -> None:
    (tmp_path / "broken.json").write_text(json.dumps([1] * 64))  # not a key pair
    with pytest.raises(KeyLoadError, match=r"broken\.json"):
        await KeyringAdapter([CHAIN], keystore_dir=tmp_path).start()
    (tmp_path / "broken.json").unlink()
    with pytest.raises(KeyLoadError, match="no keys"):
        await KeyringAdapter([CHAIN], keystore_dir=tmp_path).start()
