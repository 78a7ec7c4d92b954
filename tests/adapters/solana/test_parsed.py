"""``jsonParsed`` transactions and blocks: parsed account keys and the system, SPL Token
(Token and Token-2022), associated-token-account and memo instructions in the shapes of Solana's
transaction status parsers; compute-budget instructions partially decoded, as Solana leaves them;
token balances around a transaction; Token-2022 accounts with their extensions."""

from __future__ import annotations

from typing import Any

from solders.compute_budget import ID as COMPUTE_BUDGET
from solders.compute_budget import set_compute_unit_price
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.system_program import CreateAccountParams, create_account
from spl.token.constants import ASSOCIATED_TOKEN_PROGRAM_ID, TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID
from spl.token.instructions import (
    create_associated_token_account,
    get_associated_token_address,
    initialize_mint,
    mint_to,
    transfer_checked,
)
from spl.token.models import InitializeMintParams, MintToParams, TransferCheckedParams

from adapters._base58 import b58encode
from adapters._ed25519 import DEV_MNEMONIC, derive_keypairs
from adapters.solana._parsed_instructions import parse_instruction

from .conftest import Node
from .test_token import a_token, send

ALICE, BOB = derive_keypairs(DEV_MNEMONIC, 2)
MEMO = Pubkey.from_string("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr")
SYSTEM = "11111111111111111111111111111111"


def memo(text: str, signer: Pubkey) -> Instruction:
    return Instruction(MEMO, text.encode(), [AccountMeta(signer, True, False)])


async def parsed_transaction(node: Node, signature: str) -> dict[str, Any]:
    answer: dict[str, Any] = await node(
        "getTransaction", signature, {"encoding": "jsonParsed", "maxSupportedTransactionVersion": 0}
    )
    return answer


async def test_a_token_transfer_parsed(node: Node) -> None:
    mint, holding = await a_token(node)  # Bob holds 12.34 (2 decimals) in a plain account
    mint_key = Pubkey.from_string(mint)
    alice_ata = get_associated_token_address(ALICE.pubkey(), mint_key)
    signature = await send(
        node,
        [BOB],
        set_compute_unit_price(1000),
        create_associated_token_account(BOB.pubkey(), ALICE.pubkey(), mint_key),
        transfer_checked(
            TransferCheckedParams(
                program_id=TOKEN_PROGRAM_ID,
                source=Pubkey.from_string(holding),
                mint=mint_key,
                dest=alice_ata,
                owner=BOB.pubkey(),
                amount=150,
                decimals=2,
            )
        ),
        memo("thanks for lunch", BOB.pubkey()),
    )
    answer = await parsed_transaction(node, signature)
    message = answer["transaction"]["message"]
    keys = {entry["pubkey"]: entry for entry in message["accountKeys"]}
    assert message["accountKeys"][0] == {
        "pubkey": str(BOB.pubkey()),
        "writable": True,
        "signer": True,
        "source": "transaction",
    }
    assert keys[str(alice_ata)]["writable"] is True
    assert keys[str(alice_ata)]["signer"] is False
    assert keys[mint]["writable"] is False
    assert keys[str(TOKEN_PROGRAM_ID)]["writable"] is False
    assert "header" not in message
    assert "addressTableLookups" not in message  # a legacy transaction has none

    budget, create, moved, note = message["instructions"]
    assert budget == {
        "programId": str(COMPUTE_BUDGET),
        "accounts": [],
        "data": b58encode(bytes([3]) + (1000).to_bytes(8, "little")),
        "stackHeight": None,
    }
    assert create == {
        "program": "spl-associated-token-account",
        "programId": str(ASSOCIATED_TOKEN_PROGRAM_ID),
        "parsed": {
            "type": "create",
            "info": {
                "source": str(BOB.pubkey()),
                "account": str(alice_ata),
                "wallet": str(ALICE.pubkey()),
                "mint": mint,
                "systemProgram": SYSTEM,
                "tokenProgram": str(TOKEN_PROGRAM_ID),
            },
        },
        "stackHeight": None,
    }
    assert moved["program"] == "spl-token"
    assert moved["parsed"] == {
        "type": "transferChecked",
        "info": {
            "source": holding,
            "mint": mint,
            "destination": str(alice_ata),
            "authority": str(BOB.pubkey()),
            "tokenAmount": {
                "amount": "150",
                "decimals": 2,
                "uiAmount": 1.5,
                "uiAmountString": "1.5",
            },
        },
    }
    assert note == {
        "program": "spl-memo",
        "programId": str(MEMO),
        "parsed": "thanks for lunch",
        "stackHeight": None,
    }

    meta = answer["meta"]
    # the ATA program's calls, parsed like the top-level instructions, at stack height 2
    (inner,) = meta["innerInstructions"]
    assert inner["index"] == 1
    assert [
        (ix["program"], ix["parsed"]["type"], ix["stackHeight"]) for ix in inner["instructions"]
    ] == [
        ("spl-token", "getAccountDataSize", 2),
        ("system", "createAccount", 2),
        ("spl-token", "initializeImmutableOwner", 2),
        ("spl-token", "initializeAccount3", 2),
    ]
    assert inner["instructions"][3]["parsed"]["info"] == {
        "account": str(alice_ata),
        "mint": mint,
        "owner": str(ALICE.pubkey()),
    }
    holding_index = [entry["pubkey"] for entry in message["accountKeys"]].index(holding)
    assert {
        "accountIndex": holding_index,
        "mint": mint,
        "uiTokenAmount": {
            "amount": "1234",
            "decimals": 2,
            "uiAmount": 12.34,
            "uiAmountString": "12.34",
        },
        "owner": str(BOB.pubkey()),
        "programId": str(TOKEN_PROGRAM_ID),
    } in meta["preTokenBalances"]
    post = {
        entry["accountIndex"]: entry["uiTokenAmount"]["amount"]
        for entry in meta["postTokenBalances"]
    }
    assert post[holding_index] == "1084"
    assert "150" in post.values()
    assert len(meta["preTokenBalances"]) == 1  # Alice's account did not exist before

    slot = answer["slot"]
    block = await node(
        "getBlock", slot, {"encoding": "jsonParsed", "maxSupportedTransactionVersion": 0}
    )
    (entry,) = block["transactions"]
    assert entry["transaction"]["message"] == message
    assert entry["version"] == "legacy"
    accounts = await node("getBlock", slot, {"transactionDetails": "accounts"})
    (listed,) = accounts["transactions"]
    assert listed["transaction"] == {
        "signatures": [signature],
        "accountKeys": message["accountKeys"],
    }
    assert set(listed["meta"]) == {
        "err",
        "status",
        "fee",
        "preBalances",
        "postBalances",
        "preTokenBalances",
        "postTokenBalances",
    }
    (listed_signature,) = await node("getSignaturesForAddress", str(alice_ata))
    assert listed_signature["memo"] == "[16] thanks for lunch"
    plain = await node("getTransaction", signature, {"encoding": "json"})
    assert plain["transaction"]["message"]["accountKeys"][0] == str(BOB.pubkey())
    assert plain["meta"]["postTokenBalances"] == meta["postTokenBalances"]
    (compiled,) = plain["meta"]["innerInstructions"]
    keys = plain["transaction"]["message"]["accountKeys"]
    created = compiled["instructions"][1]
    assert keys[created["programIdIndex"]] == SYSTEM
    assert [keys[i] for i in created["accounts"]] == [str(BOB.pubkey()), str(alice_ata)]
    assert created["stackHeight"] == 2
    assert isinstance(created["data"], str)  # base58


async def test_system_instructions_parsed(node: Node) -> None:
    made = Keypair()
    rent = await node("getMinimumBalanceForRentExemption", 10)
    signature = await send(
        node,
        [ALICE, made],
        create_account(
            CreateAccountParams(
                from_pubkey=ALICE.pubkey(),
                to_pubkey=made.pubkey(),
                lamports=rent,
                space=10,
                owner=MEMO,
            )
        ),
    )
    (created,) = (await parsed_transaction(node, signature))["transaction"]["message"][
        "instructions"
    ]
    assert created == {
        "program": "system",
        "programId": SYSTEM,
        "parsed": {
            "type": "createAccount",
            "info": {
                "source": str(ALICE.pubkey()),
                "newAccount": str(made.pubkey()),
                "lamports": rent,
                "space": 10,
                "owner": str(MEMO),
            },
        },
        "stackHeight": None,
    }


def test_instructions_that_do_not_decode_stay_partially_decoded() -> None:
    keys = [str(Keypair().pubkey()) for _ in range(2)]
    short_transfer = bytes([2, 0, 0, 0, 1])  # a system transfer cut short
    assert parse_instruction(SYSTEM, keys, short_transfer, None) == {
        "programId": SYSTEM,
        "accounts": keys,
        "data": b58encode(short_transfer),
        "stackHeight": None,
    }
    # a token transfer with too few accounts, and a memo that is not UTF-8
    assert "parsed" not in parse_instruction(
        str(TOKEN_PROGRAM_ID), keys[:1], bytes([3]) + bytes(8), None
    )
    assert "parsed" not in parse_instruction(str(MEMO), [], b"\xff", None)
    multisig = parse_instruction(
        str(TOKEN_PROGRAM_ID), [*keys, keys[0], keys[1], keys[0]], bytes([3]) + bytes(8), None
    )
    assert multisig["parsed"]["info"]["multisigAuthority"] == keys[0]
    assert multisig["parsed"]["info"]["signers"] == [keys[1], keys[0]]


async def test_token_2022_accounts_with_extensions(node: Node) -> None:
    mint = Keypair()
    rent = await node("getMinimumBalanceForRentExemption", 82)
    ata = get_associated_token_address(BOB.pubkey(), mint.pubkey(), TOKEN_2022_PROGRAM_ID)
    signature = await send(
        node,
        [ALICE, mint],
        create_account(
            CreateAccountParams(
                from_pubkey=ALICE.pubkey(),
                to_pubkey=mint.pubkey(),
                lamports=rent,
                space=82,
                owner=TOKEN_2022_PROGRAM_ID,
            )
        ),
        initialize_mint(
            InitializeMintParams(
                decimals=0,
                program_id=TOKEN_2022_PROGRAM_ID,
                mint=mint.pubkey(),
                mint_authority=ALICE.pubkey(),
                freeze_authority=BOB.pubkey(),
            )
        ),
        create_associated_token_account(
            ALICE.pubkey(), BOB.pubkey(), mint.pubkey(), TOKEN_2022_PROGRAM_ID
        ),
        mint_to(
            MintToParams(
                program_id=TOKEN_2022_PROGRAM_ID,
                mint=mint.pubkey(),
                dest=ata,
                mint_authority=ALICE.pubkey(),
                amount=7,
            )
        ),
    )
    instructions = (await parsed_transaction(node, signature))["transaction"]["message"][
        "instructions"
    ]
    assert instructions[1]["program"] == "spl-token"  # Solana names both token programs so
    assert instructions[1]["programId"] == str(TOKEN_2022_PROGRAM_ID)
    assert instructions[1]["parsed"]["info"]["freezeAuthority"] == str(BOB.pubkey())
    assert instructions[3]["parsed"]["type"] == "mintTo"
    owned = await node(
        "getTokenAccountsByOwner",
        str(BOB.pubkey()),
        {"programId": str(TOKEN_2022_PROGRAM_ID)},
        {"encoding": "jsonParsed"},
    )
    (entry,) = owned["value"]
    assert entry["pubkey"] == str(ata)
    data = entry["account"]["data"]
    assert data["program"] == "spl-token-2022"
    assert data["space"] > 165  # the ATA program gives it the immutable-owner extension
    info = data["parsed"]["info"]
    assert info["extensions"] == [{"extension": "immutableOwner"}]
    assert info["tokenAmount"]["amount"] == "7"
    balance = await node("getTokenAccountBalance", str(ata))
    assert balance["value"]["uiAmountString"] == "7"
    multiple = await node(
        "getMultipleAccounts", [str(mint.pubkey()), str(ata)], {"encoding": "jsonParsed"}
    )
    assert [account["data"]["parsed"]["type"] for account in multiple["value"]] == [
        "mint",
        "account",
    ]
