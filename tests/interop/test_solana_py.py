"""solana-py (PyPI ``solana``) against scopecast's Solana network over HTTP and WebSocket: balances
of the dev accounts, a transfer built and signed with ``solders``, its confirmation, the reads a
wallet makes after it, and account and signature subscriptions. solana-py decodes every answer with
solders' strict response types, so each shape is checked as Solana's own client reads it.

solana-py 0.41 is asyncio-only (``SolanaWsClient`` is built on ``websockets``' asyncio client; 0.41
has no module-level ``connect``): its clients run on an asyncio loop of their own in a
worker thread, while the broker runs in the test's trio loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import trio
from solana.exceptions import SolanaRpcException
from solana.rpc.async_api import AsyncClient
from solana.rpc.commitment import Confirmed, Finalized
from solana.rpc.core import RPCException
from solana.rpc.models import TokenAccountOpts
from solana.rpc.websocket_api import SolanaWsClient
from solders.instruction import Instruction
from solders.keypair import Keypair
from solders.message import Message, MessageV0
from solders.pubkey import Pubkey
from solders.rpc.responses import (
    AccountNotification,
    RpcSimulateTransactionResult,
    SignatureNotification,
)
from solders.signature import Signature
from solders.system_program import ID as SYSTEM_PROGRAM
from solders.system_program import CreateAccountParams, TransferParams, create_account, transfer
from solders.transaction import Transaction, VersionedTransaction
from spl.token.constants import TOKEN_PROGRAM_ID
from spl.token.constants import WRAPPED_SOL_MINT as NATIVE_MINT
from spl.token.instructions import (
    approve,
    create_associated_token_account,
    get_associated_token_address,
    initialize_mint,
    mint_to,
    sync_native,
)
from spl.token.models import ApproveParams, InitializeMintParams, MintToParams, SyncNativeParams

from adapters._ed25519 import DEV_MNEMONIC, derive_keypairs
from adapters.solana import dev_chain_id
from broker.compose import ServeOptions
from tests.support.inprocess import running_broker

SOL = 1_000_000_000
T = TypeVar("T")
ALICE, BOB = derive_keypairs(DEV_MNEMONIC, 2)


async def on_solana(scenario: Callable[[AsyncClient], Awaitable[T]]) -> T:
    """Run ``scenario`` with a client of a fresh broker's Solana network (on an asyncio loop in a
    worker thread)."""
    with trio.fail_after(60):
        async with running_broker(ServeOptions(block_time=0)) as node:

            async def run() -> T:
                async with AsyncClient(node.http_url(network="solana")) as client:
                    return await scenario(client)

            return await trio.to_thread.run_sync(asyncio.run, run())


async def transfer_tx(
    client: AsyncClient, sender: Keypair, to: Pubkey, lamports: int
) -> VersionedTransaction:
    blockhash = (await client.get_latest_blockhash()).value.blockhash
    instruction = transfer(
        TransferParams(from_pubkey=sender.pubkey(), to_pubkey=to, lamports=lamports)
    )
    legacy = Transaction([sender], Message([instruction], sender.pubkey()), blockhash)
    return VersionedTransaction.from_legacy(legacy)


async def test_balances_a_transfer_and_its_confirmation() -> None:
    async def scenario(client: AsyncClient) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        seen["genesis"] = (await client.get_genesis_hash()).value
        seen["balances"] = [
            (await client.get_balance(k.pubkey())).value for k in derive_keypairs(DEV_MNEMONIC, 10)
        ]
        receiver = Keypair().pubkey()
        tx = await transfer_tx(client, ALICE, receiver, 3 * SOL)
        signature = (await client.send_transaction(tx)).value
        await client.confirm_transaction(signature, commitment=Finalized, sleep_seconds=0.05)
        seen["status"] = (await client.get_signature_statuses([signature])).value[0]
        seen["receiver"] = (await client.get_balance(receiver, commitment=Confirmed)).value
        seen["sender"] = (await client.get_balance(ALICE.pubkey())).value
        seen["tx"] = await client.get_transaction(signature, max_supported_transaction_version=0)
        seen["history"] = (await client.get_signatures_for_address(receiver)).value
        seen["account"] = (await client.get_account_info(receiver)).value
        seen["accounts"] = (
            await client.get_multiple_accounts([receiver, Keypair().pubkey()])
        ).value
        seen["signature"] = signature
        slot = seen["status"].slot
        seen["block"] = (await client.get_block(slot, max_supported_transaction_version=0)).value
        return seen

    seen = await on_solana(scenario)
    assert dev_chain_id() == f"solana:{str(seen['genesis'])[:32]}"
    assert seen["balances"] == [1000 * SOL] * 10
    assert seen["status"].err is None
    assert str(seen["status"].confirmation_status) == "TransactionConfirmationStatus.Finalized"
    assert seen["receiver"] == 3 * SOL
    assert seen["sender"] == 997 * SOL - 5000
    confirmed = seen["tx"].value
    assert confirmed.transaction.meta.fee == 5000
    assert confirmed.transaction.meta.err is None
    assert confirmed.transaction.transaction.signatures[0] == seen["signature"]
    assert [entry.signature for entry in seen["history"]] == [seen["signature"]]
    assert seen["account"].lamports == 3 * SOL
    assert seen["account"].owner == SYSTEM_PROGRAM
    assert seen["accounts"][0].lamports == 3 * SOL
    assert seen["accounts"][1] is None
    block = seen["block"]
    assert block.block_height == seen["status"].slot
    assert [t.transaction.signatures[0] for t in block.transactions] == [seen["signature"]]


async def test_node_reads_airdrop_simulation_and_errors() -> None:
    async def scenario(client: AsyncClient) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        seen["version"] = (await client.get_version()).value
        seen["epoch"] = (await client.get_epoch_info()).value
        seen["slot"] = (await client.get_slot()).value
        seen["height"] = (await client.get_block_height()).value
        seen["rent"] = (await client.get_minimum_balance_for_rent_exemption(0)).value
        latest = (await client.get_latest_blockhash()).value
        seen["count"] = (await client.get_transaction_count()).value
        message = MessageV0.try_compile(
            ALICE.pubkey(),
            [
                transfer(
                    TransferParams(from_pubkey=ALICE.pubkey(), to_pubkey=BOB.pubkey(), lamports=7)
                )
            ],
            [],
            latest.blockhash,
        )
        seen["fee"] = (await client.get_fee_for_message(message)).value
        someone = Keypair().pubkey()
        airdrop = (await client.request_airdrop(someone, 2 * SOL)).value
        await client.confirm_transaction(airdrop, sleep_seconds=0.05)
        seen["airdropped"] = (await client.get_balance(someone)).value
        v0 = VersionedTransaction(message, [ALICE])
        seen["simulation"] = (await client.simulate_transaction(v0)).value
        v0_signature = (await client.send_transaction(v0)).value
        seen["v0"] = await client.get_transaction(v0_signature, max_supported_transaction_version=0)
        too_much = await transfer_tx(client, BOB, someone, 5000 * SOL)
        try:
            await client.send_transaction(too_much)
        except RPCException as exc:
            seen["preflight"] = exc.args[0]
        seen["program"] = (await client.get_program_accounts(SYSTEM_PROGRAM)).value
        return seen

    seen = await on_solana(scenario)
    assert seen["version"].solana_core
    assert seen["epoch"].slots_in_epoch == 432_000
    assert seen["slot"] == seen["height"] == 0
    assert seen["rent"] == 890_880
    assert seen["count"] == 0
    assert seen["fee"] == 5000
    assert seen["airdropped"] == 2 * SOL
    simulation: RpcSimulateTransactionResult = seen["simulation"]
    assert simulation.err is None
    assert simulation.units_consumed == 150
    assert str(seen["v0"].value.transaction.version) == "0"
    preflight = seen["preflight"]
    assert preflight.message == (
        "Transaction simulation failed: Error processing Instruction 0: custom program error: 0x1"
    )
    assert "InstructionError" in str(preflight.data.err)
    assert any("insufficient lamports" in line for line in preflight.data.logs)
    assert {str(k.pubkey()) for k in (ALICE, BOB)} <= {
        str(entry.pubkey) for entry in seen["program"]
    }


async def test_an_unknown_method_is_an_rpc_error_not_a_crash() -> None:
    async def scenario(client: AsyncClient) -> tuple[Exception, int]:
        try:
            await client.validator_exit()
        except (SolanaRpcException, RPCException) as exc:
            return exc, (await client.get_slot()).value
        raise AssertionError("validatorExit is not served")

    error, slot = await on_solana(scenario)
    assert isinstance(error, SolanaRpcException | RPCException)
    assert slot == 0  # the runtime answers on


async def test_account_and_signature_subscriptions_over_websocket() -> None:
    """solana-py's ``SolanaWsClient`` (websockets, asyncio) on ``/solana/ws/v3/dev``: an account
    and a signature subscription see one transfer, each notification decoded by solders."""
    receiver = Keypair().pubkey()

    with trio.fail_after(60):
        async with running_broker(ServeOptions(block_time=0)) as node:

            async def run() -> dict[str, Any]:
                seen: dict[str, Any] = {}
                async with (
                    AsyncClient(node.http_url(network="solana")) as client,
                    SolanaWsClient(node.ws_url(network="solana"), request_timeout=10) as ws,
                ):
                    account = await ws.account_subscribe(
                        pubkey=receiver, commitment=Confirmed, encoding="base64"
                    )
                    tx = await transfer_tx(client, ALICE, receiver, 2 * SOL)
                    signature = await ws.signature_subscribe(
                        signature=tx.signatures[0], commitment=Finalized
                    )
                    seen["ids"] = (account.subscription_id, signature.subscription_id)
                    seen["sent"] = (await client.send_transaction(tx)).value
                    while len(seen) < 4:
                        notification = await asyncio.wait_for(ws.recv(), 10)
                        seen.setdefault(type(notification).__name__, notification)
                    await ws.unsubscribe(account)
                    # a landed signature: notified at once, right after its id
                    late = await ws.signature_subscribe(
                        signature=tx.signatures[0], commitment=Confirmed
                    )
                    seen["late"] = (late.subscription_id, await asyncio.wait_for(ws.recv(), 10))
                    # signatureSubscribe ends with its one notification: the handle is gone
                    try:
                        await ws.unsubscribe(signature)
                    except ValueError as exc:
                        seen["signature_ended"] = str(exc)
                return seen

            seen = await trio.to_thread.run_sync(asyncio.run, run())

    account_id, signature_id = seen["ids"]
    assert isinstance(account_id, int)
    assert isinstance(signature_id, int)
    assert account_id != signature_id
    written: AccountNotification = seen["AccountNotification"]
    assert written.subscription == account_id
    assert written.result.value.lamports == 2 * SOL
    assert written.result.value.owner == SYSTEM_PROGRAM
    assert written.result.value.data == b""
    assert written.result.context.slot >= 1
    landed: SignatureNotification = seen["SignatureNotification"]
    assert landed.subscription == signature_id
    assert landed.result.value.err is None
    assert landed.result.context.slot == written.result.context.slot
    assert seen["signature_ended"] == "Subscription handle is no longer active"
    late_id, late = seen["late"]
    assert isinstance(late, SignatureNotification)
    assert late.subscription == late_id
    assert late.result.context.slot == landed.result.context.slot
    assert late.result.value.err is None


async def test_spl_token_reads() -> None:
    """A mint, an associated token account and a wrapped-SOL account made with solana-py's SPL
    Token instructions, read back with ``AsyncClient``'s token methods (decoded by solders)."""
    mint = Keypair()

    async def scenario(client: AsyncClient) -> dict[str, Any]:
        async def land(signers: list[Keypair], *instructions: Instruction) -> Signature:
            blockhash = (await client.get_latest_blockhash()).value.blockhash
            message = Message(list(instructions), signers[0].pubkey())
            tx = VersionedTransaction.from_legacy(Transaction(signers, message, blockhash))
            signature = (await client.send_transaction(tx)).value
            await client.confirm_transaction(signature, sleep_seconds=0.05)
            return signature

        rent = (await client.get_minimum_balance_for_rent_exemption(82)).value
        ata = get_associated_token_address(BOB.pubkey(), mint.pubkey())
        wrapped = get_associated_token_address(BOB.pubkey(), NATIVE_MINT)
        await land(
            [ALICE, mint],
            create_account(
                CreateAccountParams(
                    from_pubkey=ALICE.pubkey(),
                    to_pubkey=mint.pubkey(),
                    lamports=rent,
                    space=82,
                    owner=TOKEN_PROGRAM_ID,
                )
            ),
            initialize_mint(
                InitializeMintParams(
                    decimals=6,
                    program_id=TOKEN_PROGRAM_ID,
                    mint=mint.pubkey(),
                    mint_authority=ALICE.pubkey(),
                )
            ),
            create_associated_token_account(ALICE.pubkey(), BOB.pubkey(), mint.pubkey()),
            mint_to(
                MintToParams(
                    program_id=TOKEN_PROGRAM_ID,
                    mint=mint.pubkey(),
                    dest=ata,
                    mint_authority=ALICE.pubkey(),
                    amount=2_500_000,
                )
            ),
        )
        wrapping = await land(
            [BOB],
            create_associated_token_account(BOB.pubkey(), BOB.pubkey(), NATIVE_MINT),
            transfer(TransferParams(from_pubkey=BOB.pubkey(), to_pubkey=wrapped, lamports=SOL)),
            sync_native(SyncNativeParams(program_id=TOKEN_PROGRAM_ID, account=wrapped)),
            approve(
                ApproveParams(
                    program_id=TOKEN_PROGRAM_ID,
                    source=ata,
                    delegate=ALICE.pubkey(),
                    owner=BOB.pubkey(),
                    amount=1,
                )
            ),
        )
        landed = await client.get_transaction(
            wrapping, encoding="jsonParsed", max_supported_transaction_version=0
        )
        assert landed.value is not None
        block = await client.get_block(
            landed.value.slot, encoding="jsonParsed", max_supported_transaction_version=0
        )
        return {
            "parsed": landed.value.transaction,
            "block": block.value,
            "ata": ata,
            "wrapped": wrapped,
            "balance": (await client.get_token_account_balance(ata)).value,
            "wsol": (await client.get_token_account_balance(wrapped)).value,
            "supply": (await client.get_token_supply(mint.pubkey())).value,
            "largest": (await client.get_token_largest_accounts(mint.pubkey())).value,
            "owned": (
                await client.get_token_accounts_by_owner_json_parsed(
                    BOB.pubkey(), TokenAccountOpts(program_id=TOKEN_PROGRAM_ID)
                )
            ).value,
            "of_mint": (
                await client.get_token_accounts_by_owner(
                    BOB.pubkey(), TokenAccountOpts(mint=mint.pubkey())
                )
            ).value,
            "delegated": (
                await client.get_token_accounts_by_delegate_json_parsed(
                    ALICE.pubkey(), TokenAccountOpts(mint=mint.pubkey())
                )
            ).value,
        }

    seen = await on_solana(scenario)
    assert (seen["balance"].amount, seen["balance"].decimals) == ("2500000", 6)
    assert seen["balance"].ui_amount_string == "2.5"
    assert (seen["wsol"].amount, seen["wsol"].ui_amount) == (str(SOL), 1.0)
    assert seen["supply"].amount == "2500000"
    assert [(entry.address, entry.amount.amount) for entry in seen["largest"]] == [
        (seen["ata"], "2500000")
    ]
    owned = {entry.pubkey: entry.account.data.parsed for entry in seen["owned"]}
    assert set(owned) == {seen["ata"], seen["wrapped"]}
    assert owned[seen["wrapped"]]["info"]["isNative"] is True
    assert owned[seen["ata"]]["info"]["mint"] == str(mint.pubkey())
    assert [entry.pubkey for entry in seen["of_mint"]] == [seen["ata"]]
    assert bytes(seen["of_mint"][0].account.data)[32:64] == bytes(BOB.pubkey())
    delegated = seen["delegated"][0].account.data.parsed["info"]
    assert delegated["delegate"] == str(ALICE.pubkey())
    # jsonParsed as solders reads it: parsed account keys and instructions
    message = seen["parsed"].transaction.message
    assert message.account_keys[0].pubkey == BOB.pubkey()
    assert message.account_keys[0].signer
    assert message.account_keys[0].writable
    kinds = [(ix.program, ix.parsed["type"]) for ix in message.instructions]
    assert kinds == [
        ("spl-associated-token-account", "create"),
        ("system", "transfer"),
        ("spl-token", "syncNative"),
        ("spl-token", "approve"),
    ]
    assert message.instructions[1].parsed["info"]["lamports"] == SOL
    (inner,) = seen["parsed"].meta.inner_instructions
    assert inner.index == 0  # the ATA program's calls
    assert [ix.parsed["type"] for ix in inner.instructions][-1] == "initializeAccount3"
    post = seen["parsed"].meta.post_token_balances
    assert {balance.ui_token_amount.amount for balance in post} == {"2500000", str(SOL)}
    block_message = seen["block"].transactions[0].transaction.message
    assert block_message.instructions[2].parsed["type"] == "syncNative"


async def test_cluster_methods_as_a_one_node_cluster() -> None:
    """The methods SDKs and wallets call about the cluster, each answer decoded by solders'
    strict response types."""

    async def scenario(client: AsyncClient) -> dict[str, Any]:
        tx = await transfer_tx(client, ALICE, BOB.pubkey(), SOL)
        await client.confirm_transaction((await client.send_transaction(tx)).value)
        return {
            "fees": (await client.get_recent_prioritization_fees([BOB.pubkey()])).value,
            "samples": (await client.get_recent_performance_samples(3)).value,
            "schedule": (await client.get_epoch_schedule()).value,
            "supply": (await client.get_supply()).value,
            "largest": (await client.get_largest_accounts()).value,
            "commitment": (await client.get_block_commitment(0)).value,
            "identity": (await client.get_identity()).value,
            "leader": (await client.get_slot_leader()).value,
            "leaders": (await client.get_slot_leaders(0, 2)).value,
            "nodes": (await client.get_cluster_nodes()).value,
            "leader_schedule": (await client.get_leader_schedule()).value,
            "votes": (await client.get_vote_accounts()).value,
            "governor": (await client.get_inflation_governor()).value,
            "rate": (await client.get_inflation_rate()).value,
            "reward": (await client.get_inflation_reward([BOB.pubkey()], epoch=0)).value,
            "minimum_slot": (await client.get_minimum_ledger_slot()).value,
        }

    seen = await on_solana(scenario)
    identity = seen["identity"].identity
    assert [fee.slot for fee in seen["fees"]] == [0]
    assert seen["samples"][0].num_slots >= 1
    assert seen["schedule"].slots_per_epoch == 432_000
    supply = seen["supply"]
    assert supply.total == supply.circulating + supply.non_circulating
    assert len(seen["largest"]) == 20
    assert seen["commitment"].commitment is None
    assert seen["leader"] == identity
    assert seen["leaders"] == [identity, identity]
    assert seen["nodes"][0].pubkey == identity
    assert list(seen["leader_schedule"]) == [identity]
    (vote,) = seen["votes"].current
    assert vote.node_pubkey == identity
    assert seen["votes"].delinquent == []
    assert seen["governor"].initial == 0.08
    assert seen["rate"].epoch == 0
    assert seen["reward"] == [None]
    assert seen["minimum_slot"] == 0


async def test_root_slot_updates_block_and_vote_subscriptions() -> None:
    """``SolanaWsClient``'s root, slots-updates, block and vote subscriptions see a slot with a
    transfer close (notifications decoded by solders)."""
    with trio.fail_after(60):
        async with running_broker(ServeOptions(block_time=0)) as node:

            async def run() -> dict[str, Any]:
                seen: dict[str, list[Any]] = {}
                async with (
                    AsyncClient(node.http_url(network="solana")) as client,
                    SolanaWsClient(node.ws_url(network="solana"), request_timeout=10) as ws,
                ):
                    await ws.root_subscribe()
                    await ws.slots_updates_subscribe()
                    await ws.block_subscribe(encoding="jsonParsed")
                    await ws.vote_subscribe()
                    first = await transfer_tx(client, ALICE, BOB.pubkey(), SOL)
                    signature = (await client.send_transaction(first)).value
                    # the next transaction opens slot 2, closing slot 1 with the first
                    second = await transfer_tx(client, BOB, ALICE.pubkey(), SOL)
                    await client.send_transaction(second)
                    while "BlockNotification" not in seen or len(seen["BlockNotification"]) < 2:
                        notification = await asyncio.wait_for(ws.recv(), 10)
                        seen.setdefault(type(notification).__name__, []).append(notification)
                    seen["signature"] = [signature]
                return seen

            seen = await trio.to_thread.run_sync(asyncio.run, run())

    assert [n.result for n in seen["RootNotification"]][:2] == [0, 1]
    kinds = {type(n.result).__name__ for n in seen["SlotUpdateNotification"]}
    assert {"SlotUpdateFrozen", "SlotUpdateRoot", "SlotUpdateCreatedBank"} <= kinds
    block = seen["BlockNotification"][1].result.value
    assert block.slot == 1
    (landed,) = block.block.transactions
    assert landed.transaction.signatures[0] == seen["signature"][0]
    assert landed.transaction.message.instructions[0].parsed["type"] == "transfer"
    votes = seen["VoteNotification"]
    assert votes[0].result.slots == [0]
