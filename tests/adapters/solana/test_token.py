"""``jsonParsed`` for SPL Token mints and accounts made on the dev chain with solana-py's token
instructions, read back in Solana's account-decoder shape."""

from __future__ import annotations

import base64

import msgspec
import trio
import trio.testing
from solders.hash import Hash
from solders.instruction import Instruction
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.system_program import (
    CreateAccountParams,
    TransferParams,
    create_account,
    transfer,
)
from solders.transaction import Transaction
from spl.token.constants import TOKEN_PROGRAM_ID
from spl.token.instructions import (
    approve,
    create_associated_token_account,
    get_associated_token_address,
    initialize_account,
    initialize_mint,
    mint_to,
    sync_native,
)
from spl.token.models import (
    ApproveParams,
    InitializeAccountParams,
    InitializeMintParams,
    MintToParams,
    SyncNativeParams,
)

from adapters._ed25519 import DEV_MNEMONIC, derive_keypairs
from adapters.solana._events import SolanaEvent
from adapters.solana._pubsub import parse
from adapters.solana._token import NATIVE_MINT, token_amount

from .conftest import Node
from .test_methods import SOL, blockhash, rpc_error

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


async def send(node: Node, signers: list[Keypair], *instructions: Instruction) -> str:
    """Land ``instructions`` paid by the first signer; the signature."""
    tx = Transaction(
        signers,
        Message(list(instructions), signers[0].pubkey()),
        Hash.from_string(await blockhash(node)),
    )
    signature: str = await node(
        "sendTransaction", base64.b64encode(bytes(tx)).decode(), {"encoding": "base64"}
    )
    return signature


async def test_token_reads(node: Node) -> None:
    mint, holding = await a_token(node)
    mint_key = Pubkey.from_string(mint)
    alice_ata = get_associated_token_address(ALICE.pubkey(), mint_key)
    await send(
        node,
        [ALICE],
        create_associated_token_account(ALICE.pubkey(), ALICE.pubkey(), mint_key),
        mint_to(
            MintToParams(
                program_id=TOKEN_PROGRAM_ID,
                mint=mint_key,
                dest=alice_ata,
                mint_authority=ALICE.pubkey(),
                amount=500,
            )
        ),
    )
    await send(
        node,
        [BOB],
        approve(
            ApproveParams(
                program_id=TOKEN_PROGRAM_ID,
                source=Pubkey.from_string(holding),
                delegate=ALICE.pubkey(),
                owner=BOB.pubkey(),
                amount=100,
            )
        ),
    )

    balance = await node("getTokenAccountBalance", holding)
    assert balance["value"] == {
        "amount": "1234",
        "decimals": 2,
        "uiAmount": 12.34,
        "uiAmountString": "12.34",
    }
    supply = await node("getTokenSupply", mint, {"commitment": "confirmed"})
    assert supply["value"]["amount"] == "1734"
    assert set(supply["context"]) == {"slot", "apiVersion"}
    largest = (await node("getTokenLargestAccounts", mint))["value"]
    assert [(entry["address"], entry["amount"]) for entry in largest] == [
        (holding, "1234"),
        (str(alice_ata), "500"),
    ]
    assert largest[1] == {
        "address": str(alice_ata),
        "amount": "500",
        "decimals": 2,
        "uiAmount": 5.0,
        "uiAmountString": "5",
    }

    owned = await node(
        "getTokenAccountsByOwner", str(ALICE.pubkey()), {"mint": mint}, {"encoding": "jsonParsed"}
    )
    assert [entry["pubkey"] for entry in owned["value"]] == [str(alice_ata)]
    info = owned["value"][0]["account"]["data"]["parsed"]["info"]
    assert (info["owner"], info["tokenAmount"]["amount"]) == (str(ALICE.pubkey()), "500")
    by_program = await node(
        "getTokenAccountsByOwner",
        str(BOB.pubkey()),
        {"programId": str(TOKEN_PROGRAM_ID)},
        {"encoding": "base64"},
    )
    assert [entry["pubkey"] for entry in by_program["value"]] == [holding]
    raw = base64.b64decode(by_program["value"][0]["account"]["data"][0])
    assert raw[32:64] == bytes(BOB.pubkey())
    delegated = await node(
        "getTokenAccountsByDelegate",
        str(ALICE.pubkey()),
        {"programId": str(TOKEN_PROGRAM_ID)},
        {"encoding": "jsonParsed"},
    )
    assert [entry["pubkey"] for entry in delegated["value"]] == [holding]
    delegated_info = delegated["value"][0]["account"]["data"]["parsed"]["info"]
    assert delegated_info["delegate"] == str(ALICE.pubkey())
    assert delegated_info["delegatedAmount"]["amount"] == "100"
    assert (await node("getTokenAccountsByDelegate", str(BOB.pubkey()), {"mint": mint}))[
        "value"
    ] == []


async def test_token_read_errors(node: Node) -> None:
    mint, holding = await a_token(node)
    wallet = str(ALICE.pubkey())
    nowhere = str(Keypair().pubkey())
    cases = [
        (("getTokenAccountBalance", nowhere), "Invalid param: could not find account"),
        (("getTokenAccountBalance", wallet), "Invalid param: not a Token account"),
        (("getTokenAccountBalance", mint), "Invalid param: not a Token account"),
        (("getTokenSupply", holding), "Invalid param: not a Token mint"),
        (("getTokenLargestAccounts", nowhere), "Invalid param: could not find account"),
        (
            ("getTokenAccountsByOwner", wallet, {"mint": nowhere}),
            "Invalid param: could not find mint",
        ),
        (
            ("getTokenAccountsByOwner", wallet, {"programId": wallet}),
            "Invalid param: unrecognized Token program id",
        ),
    ]
    for (method, *params), message in cases:
        error = await rpc_error(node, method, *params)
        assert (error.code, error.message) == (-32602, message), method
    error = await rpc_error(node, "getTokenAccountsByOwner", wallet, {"owner": wallet})
    assert error.code == -32602


async def test_wrapped_sol(node: Node) -> None:
    """The native mint is there at genesis, so a wrapped-SOL account can be made and synced."""
    native = (await node("getAccountInfo", str(NATIVE_MINT), {"encoding": "jsonParsed"}))["value"]
    assert native["owner"] == str(TOKEN_PROGRAM_ID)
    assert native["data"]["parsed"] == {
        "type": "mint",
        "info": {
            "decimals": 9,
            "freezeAuthority": None,
            "isInitialized": True,
            "mintAuthority": None,
            "supply": "0",
        },
    }
    wrapped = get_associated_token_address(BOB.pubkey(), NATIVE_MINT)
    await send(
        node,
        [BOB],
        create_associated_token_account(BOB.pubkey(), BOB.pubkey(), NATIVE_MINT),
        transfer(TransferParams(from_pubkey=BOB.pubkey(), to_pubkey=wrapped, lamports=SOL)),
        sync_native(SyncNativeParams(program_id=TOKEN_PROGRAM_ID, account=wrapped)),
    )
    balance = (await node("getTokenAccountBalance", str(wrapped)))["value"]
    assert balance == {
        "amount": str(SOL),
        "decimals": 9,
        "uiAmount": 1.0,
        "uiAmountString": "1",
    }
    info = (await node("getAccountInfo", str(wrapped), {"encoding": "jsonParsed"}))["value"]
    parsed = info["data"]["parsed"]["info"]
    assert parsed["isNative"] is True
    assert parsed["rentExemptReserve"]["amount"] == "2039280"
    assert info["lamports"] == SOL + 2039280


async def test_token_account_notifications_are_parsed(node: Node) -> None:
    """``accountSubscribe`` and ``programSubscribe`` with ``jsonParsed`` see a token account
    parsed (its mint's decimals travel with the event)."""
    mint, holding = await a_token(node)
    seen: list[SolanaEvent] = []

    async def keep(event: SolanaEvent) -> None:
        seen.append(event)

    adapter = node.adapter
    async with trio.open_nursery() as nursery:
        await nursery.start(adapter.serve_events, adapter.spec.chain, keep)
        await send(
            node,
            [ALICE],
            mint_to(
                MintToParams(
                    program_id=TOKEN_PROGRAM_ID,
                    mint=Pubkey.from_string(mint),
                    dest=Pubkey.from_string(holding),
                    mint_authority=ALICE.pubkey(),
                    amount=66,
                )
            ),
        )
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()
    account = parse("accountSubscribe", [holding, {"encoding": "jsonParsed"}])
    (notified,) = [msgspec.json.decode(r) for e in seen if (r := account.render(e)) is not None]
    info = notified["value"]["data"]["parsed"]["info"]
    assert info["tokenAmount"]["uiAmountString"] == "13"
    program = parse(
        "programSubscribe",
        [str(TOKEN_PROGRAM_ID), {"encoding": "jsonParsed", "filters": [{"dataSize": 165}]}],
    )
    (owned,) = [msgspec.json.decode(r) for e in seen if (r := program.render(e)) is not None]
    assert owned["value"]["pubkey"] == holding
    assert owned["value"]["account"]["data"]["parsed"]["type"] == "account"


async def test_simulated_token_accounts_are_parsed(node: Node) -> None:
    mint, holding = await a_token(node)
    minting = mint_to(
        MintToParams(
            program_id=TOKEN_PROGRAM_ID,
            mint=Pubkey.from_string(mint),
            dest=Pubkey.from_string(holding),
            mint_authority=ALICE.pubkey(),
            amount=6,
        )
    )
    tx = Transaction(
        [ALICE], Message([minting], ALICE.pubkey()), Hash.from_string(await blockhash(node))
    )
    simulated = await node(
        "simulateTransaction",
        base64.b64encode(bytes(tx)).decode(),
        {"encoding": "base64", "accounts": {"addresses": [holding], "encoding": "jsonParsed"}},
    )
    (after,) = simulated["value"]["accounts"]
    assert after["data"]["parsed"]["info"]["tokenAmount"]["amount"] == "1240"
    # only simulated: the account is as it was
    assert (await node("getTokenAccountBalance", holding))["value"]["amount"] == "1234"
