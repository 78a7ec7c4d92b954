"""``jsonParsed`` for SPL Token mints and accounts made on the dev chain with solana-py's token
instructions, read back in Solana's account-decoder shape."""

from __future__ import annotations

import base64

from solders.hash import Hash
from solders.keypair import Keypair
from solders.message import Message
from solders.system_program import CreateAccountParams, create_account
from solders.transaction import Transaction
from spl.token.constants import TOKEN_PROGRAM_ID
from spl.token.instructions import initialize_account, initialize_mint, mint_to
from spl.token.models import InitializeAccountParams, InitializeMintParams, MintToParams

from adapters._ed25519 import DEV_MNEMONIC, derive_keypairs
from adapters.solana._token import token_amount

from .conftest import Node
from .test_methods import blockhash

ALICE, BOB = derive_keypairs(DEV_MNEMONIC, 2)


async def a_token(node: Node) -> tuple[str, str]:
    """A mint (2 decimals, Alice its authority) and Bob's account holding 12.34 of it."""
    mint, holding = Keypair(), Keypair()
    payer = ALICE.pubkey()

    async def rent(size: int) -> int:
        lamports: int = await node("getMinimumBalanceForRentExemption", size)
        return lamports

    instructions = [
        create_account(
            CreateAccountParams(
                from_pubkey=payer,
                to_pubkey=mint.pubkey(),
                lamports=await rent(82),
                space=82,
                owner=TOKEN_PROGRAM_ID,
            )
        ),
        initialize_mint(
            InitializeMintParams(
                decimals=2,
                program_id=TOKEN_PROGRAM_ID,
                mint=mint.pubkey(),
                mint_authority=payer,
                freeze_authority=None,
            )
        ),
        create_account(
            CreateAccountParams(
                from_pubkey=payer,
                to_pubkey=holding.pubkey(),
                lamports=await rent(165),
                space=165,
                owner=TOKEN_PROGRAM_ID,
            )
        ),
        initialize_account(
            InitializeAccountParams(
                program_id=TOKEN_PROGRAM_ID,
                account=holding.pubkey(),
                mint=mint.pubkey(),
                owner=BOB.pubkey(),
            )
        ),
        mint_to(
            MintToParams(
                program_id=TOKEN_PROGRAM_ID,
                mint=mint.pubkey(),
                dest=holding.pubkey(),
                mint_authority=payer,
                amount=1234,
            )
        ),
    ]
    tx = Transaction(
        [ALICE, mint, holding],
        Message(instructions, payer),
        Hash.from_string(await blockhash(node)),
    )
    await node("sendTransaction", base64.b64encode(bytes(tx)).decode(), {"encoding": "base64"})
    return str(mint.pubkey()), str(holding.pubkey())


async def test_mints_and_token_accounts_are_parsed(node: Node) -> None:
    mint, holding = await a_token(node)
    parsed = (await node("getAccountInfo", mint, {"encoding": "jsonParsed"}))["value"]
    assert parsed["owner"] == str(TOKEN_PROGRAM_ID)
    assert parsed["data"] == {
        "program": "spl-token",
        "parsed": {
            "type": "mint",
            "info": {
                "decimals": 2,
                "freezeAuthority": None,
                "isInitialized": True,
                "mintAuthority": str(ALICE.pubkey()),
                "supply": "1234",
            },
        },
        "space": 82,
    }
    account = (await node("getAccountInfo", holding, {"encoding": "jsonParsed"}))["value"]
    assert account["data"] == {
        "program": "spl-token",
        "parsed": {
            "type": "account",
            "info": {
                "isNative": False,
                "mint": mint,
                "owner": str(BOB.pubkey()),
                "state": "initialized",
                "tokenAmount": {
                    "amount": "1234",
                    "decimals": 2,
                    "uiAmount": 12.34,
                    "uiAmountString": "12.34",
                },
            },
        },
        "space": 165,
    }
    held = await node(
        "getProgramAccounts",
        str(TOKEN_PROGRAM_ID),
        {"encoding": "jsonParsed", "filters": [{"dataSize": 165}]},
    )
    assert [entry["pubkey"] for entry in held] == [holding]
    raw = (await node("getAccountInfo", holding, {"encoding": "base64"}))["value"]
    assert len(base64.b64decode(raw["data"][0])) == 165


def test_token_amounts_as_solana_writes_them() -> None:
    assert token_amount(1000, 2)["uiAmountString"] == "10"
    assert token_amount(5, 0) == {
        "amount": "5",
        "decimals": 0,
        "uiAmount": 5.0,
        "uiAmountString": "5",
    }
    assert token_amount(1, 9)["uiAmountString"] == "0.000000001"
