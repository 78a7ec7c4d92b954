"""One CAIP-25 session spanning eip155:1337 and the Solana dev chain: base58 CAIP-10 accounts kept
as they are, Solana RPC and Solana account methods (MetaMask's and WalletConnect's forms) through
wallet_invokeMethod, each signature verified with ed25519."""

from __future__ import annotations

import base64
from typing import Any

import trio
from solders.hash import Hash
from solders.message import Message
from solders.pubkey import Pubkey
from solders.signature import Signature
from solders.system_program import TransferParams, transfer
from solders.transaction import VersionedTransaction

from adapters._base58 import b58encode
from adapters._ed25519 import DEV_MNEMONIC, derive_keypairs
from adapters.solana import dev_chain_id
from broker.compose import ServeOptions
from tests.support.inprocess import Dapp, dapp, running_broker, waiting_approval

DEV = "eip155:1337"
SOLANA = dev_chain_id()
ALICE, BOB, CAROL = (str(k.pubkey()) for k in derive_keypairs(DEV_MNEMONIC, 3))
SOL = 1_000_000_000
SOLANA_METHODS = [
    "getBalance",
    "getLatestBlockhash",
    "signMessage",
    "signTransaction",
    "signAndSendTransaction",
    "signIn",
    "solana_signMessage",
    "solana_signAllTransactions",
]


def invoke(method: str, params: Any, scope: str = SOLANA) -> dict[str, Any]:
    return {"scope": scope, "request": {"method": method, "params": params}}


async def call(conn: Dapp, method: str, params: Any) -> Any:
    return (await conn.result("wallet_invokeMethod", invoke(method, params)))["result"]["result"]


async def session(conn: Dapp, accounts: list[str]) -> dict[str, Any]:
    scopes = {
        DEV: {"methods": ["eth_chainId", "personal_sign"], "notifications": []},
        SOLANA: {"methods": SOLANA_METHODS, "notifications": [], "accounts": accounts},
    }
    created: dict[str, Any] = await conn.result("wallet_createSession", {"optionalScopes": scopes})
    return created


async def transfer_from(conn: Dapp, sender: str, to: str, lamports: int) -> str:
    """An unsigned transfer on the current blockhash, base64 (as a dapp hands it to a wallet)."""
    blockhash = (await call(conn, "getLatestBlockhash", []))["value"]["blockhash"]
    return unsigned_transfer(sender, to, lamports, blockhash)


def unsigned_transfer(sender: str, to: str, lamports: int, blockhash: str) -> str:
    payer = Pubkey.from_string(sender)
    instruction = transfer(
        TransferParams(from_pubkey=payer, to_pubkey=Pubkey.from_string(to), lamports=lamports)
    )
    message = Message.new_with_blockhash([instruction], payer, Hash.from_string(blockhash))
    tx = VersionedTransaction.populate(message, [Signature.default()])
    return base64.b64encode(bytes(tx)).decode()


async def test_one_session_holds_both_chains_with_base58_accounts() -> None:
    with trio.fail_after(60):
        async with running_broker(ServeOptions(block_time=0)) as node, dapp(node.ws_url()) as conn:
            created = await session(conn, [f"{SOLANA}:{BOB}"])
            scopes = created["sessionScopes"]
            assert scopes[DEV]["accounts"][0].startswith(f"{DEV}:0x")
            # base58 is case-sensitive: the account is granted exactly as it is written.
            assert scopes[SOLANA]["accounts"] == [f"{SOLANA}:{BOB}"]
            assert (await conn.result("wallet_getSession", {}))["sessionScopes"] == scopes
            chain_id = await conn.result("wallet_invokeMethod", invoke("eth_chainId", [], DEV))
            assert chain_id["result"]["result"] == "0x539"
            balance = await call(conn, "getBalance", [BOB])
            assert balance["value"] == 1000 * SOL


async def test_a_solana_namespace_scope_with_references() -> None:
    with trio.fail_after(60):
        async with running_broker(ServeOptions(block_time=0)) as node, dapp(node.ws_url()) as conn:
            reference = SOLANA.split(":", 1)[1]
            scope = {"references": [reference], "methods": ["getSlot"], "notifications": []}
            created = await conn.result(
                "wallet_createSession", {"optionalScopes": {"solana": scope}}
            )
            assert created["sessionScopes"] == {
                SOLANA: {
                    "methods": ["getSlot"],
                    "notifications": [],
                    "accounts": [f"{SOLANA}:{ALICE}"],
                }
            }
            unknown = {**scope, "references": ["5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"]}
            refused = await conn.call(
                "wallet_createSession", {"requiredScopes": {"solana": unknown}}
            )
            assert refused["error"]["code"] == 5100  # no network serves Solana mainnet here


async def test_solana_signing_through_wallet_invoke_method() -> None:
    with trio.fail_after(60):
        async with running_broker(ServeOptions(block_time=0)) as node, dapp(node.ws_url()) as conn:
            await session(conn, [f"{SOLANA}:{ALICE}"])
            message = b"hello from scopecast"
            signed = await call(
                conn,
                "signMessage",
                {"account": {"address": ALICE}, "message": base64.b64encode(message).decode()},
            )
            assert signed["signatureType"] == "ed25519"
            assert base64.b64decode(signed["signedMessage"]) == message
            assert Signature.from_string(signed["signature"]).verify(
                Pubkey.from_string(ALICE), message
            )
            walletconnect = await call(
                conn, "solana_signMessage", {"message": b58encode(message), "pubkey": ALICE}
            )
            assert walletconnect["signature"] == signed["signature"]  # ed25519 is deterministic

            unsigned = await transfer_from(conn, ALICE, CAROL, 2 * SOL)
            signed_tx = await call(
                conn,
                "signTransaction",
                {"account": {"address": ALICE}, "transaction": unsigned, "scope": SOLANA},
            )
            tx = VersionedTransaction.from_bytes(base64.b64decode(signed_tx["signedTransaction"]))
            assert all(tx.verify_with_results())
            sent = await call(
                conn,
                "signAndSendTransaction",
                {"account": {"address": ALICE}, "transaction": unsigned, "scope": SOLANA},
            )
            assert sent["signature"] == str(tx.signatures[0])
            assert (await call(conn, "getBalance", [CAROL]))["value"] == 1002 * SOL
            both = await call(
                conn,
                "solana_signAllTransactions",
                {"transactions": [await transfer_from(conn, ALICE, CAROL, n) for n in (1, 2)]},
            )
            assert len(both["transactions"]) == 2
            for item in both["transactions"]:
                assert all(
                    VersionedTransaction.from_bytes(base64.b64decode(item)).verify_with_results()
                )

            sign_in = await call(conn, "signIn", {"domain": "dapp.example", "nonce": "abc12345"})
            text = base64.b64decode(sign_in["signedMessage"]).decode()
            assert text.startswith(
                f"dapp.example wants you to sign in with your Solana account:\n{ALICE}"
            )
            assert "Nonce: abc12345" in text
            assert Signature.from_string(sign_in["signature"]).verify(
                Pubkey.from_string(ALICE), text.encode()
            )


async def test_solana_accounts_outside_the_session_and_bad_params_are_refused() -> None:
    with trio.fail_after(60):
        async with running_broker(ServeOptions(block_time=0)) as node, dapp(node.ws_url()) as conn:
            await session(conn, [f"{SOLANA}:{ALICE}"])
            message = base64.b64encode(b"x").decode()
            for address in (BOB, ALICE.lower(), ALICE.upper()):
                denied = await conn.call(
                    "wallet_invokeMethod",
                    invoke("signMessage", {"account": {"address": address}, "message": message}),
                )
                assert denied["error"]["code"] == 4100, address
            for params in (
                [],
                {"account": {"address": ALICE}},
                {"account": {"address": ALICE}, "message": "%%"},
            ):
                malformed = await conn.call("wallet_invokeMethod", invoke("signMessage", params))
                assert malformed["error"]["code"] == -32602, params
            garbage = await conn.call(
                "wallet_invokeMethod",
                invoke(
                    "signTransaction",
                    {"account": {"address": ALICE}, "transaction": "AAAA", "scope": SOLANA},
                ),
            )
            assert garbage["error"]["code"] == -32602


async def test_manual_approval_shows_the_message_and_the_transfer() -> None:
    with trio.fail_after(60):
        async with running_broker(ServeOptions(approval="manual", block_time=0)) as node:
            async with dapp(node.ws_url()) as conn:
                replies: list[Any] = []

                async def send(method: str, params: Any) -> None:
                    replies.append(await conn.call(method, params))

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(
                        send,
                        "wallet_createSession",
                        {
                            "optionalScopes": {
                                SOLANA: {"methods": SOLANA_METHODS, "notifications": []}
                            }
                        },
                    )
                    await node.admin("admin_approve", {"id": (await waiting_approval(node))["id"]})
                assert replies.pop()["result"]["sessionScopes"][SOLANA]["accounts"] == [
                    f"{SOLANA}:{ALICE}"
                ]
                text = base64.b64encode(b"pay 5 SOL to Carol").decode()
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(
                        send,
                        "wallet_invokeMethod",
                        invoke("signMessage", {"account": {"address": ALICE}, "message": text}),
                    )
                    approval = await waiting_approval(node)
                    assert "pay 5 SOL to Carol" in str(approval["request"])
                    await node.admin("admin_reject", {"id": approval["id"]})
                assert replies.pop()["error"]["code"] == 4001
                unsigned = await transfer_from_direct(node, ALICE, CAROL, 5 * SOL)
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(
                        send,
                        "wallet_invokeMethod",
                        invoke(
                            "signTransaction",
                            {
                                "account": {"address": ALICE},
                                "transaction": unsigned,
                                "scope": SOLANA,
                            },
                        ),
                    )
                    approval = await waiting_approval(node)
                    summary = str(approval["request"])
                    assert "'lamports': '5000000000'" in summary
                    assert CAROL in summary
                    await node.admin("admin_approve", {"id": approval["id"]})
                assert "signedTransaction" in replies.pop()["result"]["result"]["result"]


async def transfer_from_direct(node: Any, sender: str, to: str, lamports: int) -> str:
    latest = await node.rpc("getLatestBlockhash", network="solana")
    return unsigned_transfer(sender, to, lamports, latest["result"]["value"]["blockhash"])


async def test_direct_signing_on_the_solana_network() -> None:
    with trio.fail_after(60):
        async with running_broker(ServeOptions(block_time=0)) as node:
            message = base64.b64encode(b"hello from scopecast").decode()
            reply = await node.rpc(
                "signMessage",
                {"account": {"address": ALICE}, "message": message},
                network="solana",
            )
            assert reply["result"]["signature"] == (
                "52vBkakcqorBpB1KuuaA7saVxj8j1SsY4yVfrkwUj3Nc6MkDxmsCbZYiZZ7LnMmda6c78SBGrKvqYN9oxjJL63Yg"
            )
            # ...but not for the dev network's account methods, nor EVM ones on Solana.
            evm = await node.rpc("personal_sign", ["0x68656c6c6f", ALICE], network="solana")
            assert evm["error"]["code"] == -32601
