"""The Solana RPC methods on the adapter: Solana's shapes, encodings and errors."""

from __future__ import annotations

import base64
import contextlib
from typing import Any

import pytest
import trio
import trio.testing
from solders.hash import Hash
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.system_program import ID as SYSTEM_PROGRAM
from solders.system_program import TransferParams, transfer
from solders.transaction import Transaction

from adapters._base58 import b58encode
from adapters._ed25519 import DEV_MNEMONIC, derive_keypairs
from adapters.solana import SolanaDevAdapter
from adapters.solana._pubsub import SolanaSubscriptions
from schemas.errors import MethodNotFound, RpcError

from .conftest import Node, solana_spec

SOL = 1_000_000_000
ALICE, BOB = derive_keypairs(DEV_MNEMONIC, 2)


def signed_transfer(sender: Keypair, to: Pubkey, lamports: int, blockhash: str) -> str:
    message = Message(
        [transfer(TransferParams(from_pubkey=sender.pubkey(), to_pubkey=to, lamports=lamports))],
        sender.pubkey(),
    )
    tx = Transaction([sender], message, Hash.from_string(blockhash))
    return base64.b64encode(bytes(tx)).decode()


async def blockhash(node: Node) -> str:
    latest: str = (await node("getLatestBlockhash"))["value"]["blockhash"]
    return latest


async def rpc_error(node: Node, method: str, *params: Any) -> RpcError:
    with pytest.raises(RpcError) as caught:
        await node(method, *params)
    return caught.value


async def test_node_identity(node: Node) -> None:
    genesis = await node("getGenesisHash")
    assert node.adapter.spec.chain == f"solana:{genesis[:32]}"
    assert await node("getHealth") == "ok"
    version = await node("getVersion")
    assert set(version) == {"solana-core", "feature-set"}
    assert await node("getSlot") == 0
    assert await node("getBlockHeight") == 0
    epoch = await node("getEpochInfo")
    assert epoch["absoluteSlot"] == 0
    assert epoch["slotsInEpoch"] == 432_000


async def test_dev_accounts_hold_1000_sol_each(node: Node) -> None:
    for keypair in derive_keypairs(DEV_MNEMONIC, 10):
        reply = await node("getBalance", str(keypair.pubkey()))
        assert reply == {
            "context": {"slot": 0, "apiVersion": reply["context"]["apiVersion"]},
            "value": 1000 * SOL,
        }
    assert (await node("getBalance", str(Keypair().pubkey())))["value"] == 0


async def test_account_info_encodings(node: Node) -> None:
    address = str(ALICE.pubkey())
    legacy = (await node("getAccountInfo", address))["value"]
    assert legacy == {
        "data": "",
        "executable": False,
        "lamports": 1000 * SOL,
        "owner": str(SYSTEM_PROGRAM),
        "rentEpoch": 2**64 - 1,
        "space": 0,
    }
    base64_value = (await node("getAccountInfo", address, {"encoding": "base64"}))["value"]
    assert base64_value["data"] == ["", "base64"]
    parsed = (await node("getAccountInfo", address, {"encoding": "jsonParsed"}))["value"]
    assert parsed["data"] == ["", "base64"]  # a plain system account: nothing to parse
    assert (await node("getAccountInfo", str(Keypair().pubkey())))["value"] is None
    many = await node("getMultipleAccounts", [address, str(Keypair().pubkey())])
    assert many["value"][0]["lamports"] == 1000 * SOL
    assert many["value"][1] is None


async def test_bad_input_gets_solanas_errors(node: Node) -> None:
    assert (await rpc_error(node, "getBalance", "not-base58-0OIl")).message == (
        "Invalid param: Invalid"
    )
    assert (await rpc_error(node, "getBalance", "abc")).message == "Invalid param: WrongSize"
    assert (await rpc_error(node, "getBalance")).code == -32602
    assert (await rpc_error(node, "getBalance", 7)).code == -32602
    wrong = await rpc_error(node, "getAccountInfo", str(ALICE.pubkey()), {"encoding": "hex"})
    assert wrong.code == -32602
    assert "unknown variant `hex`" in wrong.message
    assert (await rpc_error(node, "getSlot", {"commitment": "soon"})).code == -32602
    later = await rpc_error(node, "getSlot", {"minContextSlot": 99})
    assert later.code == -32016
    for garbage in ("%%%", b58encode(b"\x01\x02\x03"), "A" * 5000):
        error = await rpc_error(node, "sendTransaction", garbage)
        assert error.code == -32602, garbage
    error = await rpc_error(node, "sendTransaction", "AAAA", {"encoding": "base64"})
    assert error.message.startswith("Invalid param: failed to deserialize")
    with pytest.raises(MethodNotFound):
        await node("eth_blockNumber")


async def test_a_transfer_lands_in_a_new_slot_and_is_confirmed(node: Node) -> None:
    before = await node("getSlot")
    tx = signed_transfer(ALICE, BOB.pubkey(), 2 * SOL, await blockhash(node))
    signature = await node("sendTransaction", tx, {"encoding": "base64"})
    assert await node("getSlot") == before + 1
    assert (await node("getBalance", str(BOB.pubkey())))["value"] == 1002 * SOL
    assert (await node("getBalance", str(ALICE.pubkey())))["value"] == 998 * SOL - 5000
    (status,) = (await node("getSignatureStatuses", [signature]))["value"]
    assert status == {
        "slot": before + 1,
        "confirmations": None,
        "err": None,
        "status": {"Ok": None},
        "confirmationStatus": "finalized",
    }
    found = await node("getTransaction", signature)
    assert found["slot"] == before + 1
    assert found["meta"]["fee"] == 5000
    assert found["meta"]["preBalances"][:2] == [1000 * SOL, 1000 * SOL]
    assert found["meta"]["postBalances"][:2] == [998 * SOL - 5000, 1002 * SOL]
    assert found["transaction"]["signatures"] == [signature]
    assert found["transaction"]["message"]["accountKeys"][:2] == [
        str(ALICE.pubkey()),
        str(BOB.pubkey()),
    ]
    assert "version" not in found
    versioned = await node("getTransaction", signature, {"maxSupportedTransactionVersion": 0})
    assert versioned["version"] == "legacy"
    wire = await node("getTransaction", signature, {"encoding": "base64"})
    assert wire["transaction"] == [tx, "base64"]
    history = await node("getSignaturesForAddress", str(BOB.pubkey()))
    assert [entry["signature"] for entry in history] == [signature]
    assert history[0]["confirmationStatus"] == "finalized"
    # The same transaction again: Solana's preflight says it was processed.
    again = await rpc_error(node, "sendTransaction", tx, {"encoding": "base64"})
    assert again.code == -32002
    assert again.data["err"] == "AlreadyProcessed"


async def test_a_failing_transaction_is_a_preflight_failure_with_logs(node: Node) -> None:
    tx = signed_transfer(ALICE, BOB.pubkey(), 10_000 * SOL, await blockhash(node))
    error = await rpc_error(node, "sendTransaction", tx, {"encoding": "base64"})
    assert error.code == -32002
    assert error.message == (
        "Transaction simulation failed: Error processing Instruction 0: custom program error: 0x1"
    )
    assert error.data["err"] == {"InstructionError": [0, {"Custom": 1}]}
    assert any("insufficient lamports" in line for line in error.data["logs"])
    assert await node("getSlot") == 0  # nothing landed
    simulated = (await node("simulateTransaction", tx, {"encoding": "base64"}))["value"]
    assert simulated["err"] == {"InstructionError": [0, {"Custom": 1}]}
    # With preflight skipped it lands, failed, and its status says why.
    signature = await node("sendTransaction", tx, {"encoding": "base64", "skipPreflight": True})
    (status,) = (await node("getSignatureStatuses", [signature]))["value"]
    assert status["err"] == {"InstructionError": [0, {"Custom": 1}]}
    assert status["status"] == {"Err": status["err"]}


async def test_a_forged_signature_is_rejected(node: Node) -> None:
    raw = bytearray(
        base64.b64decode(signed_transfer(ALICE, BOB.pubkey(), 1, await blockhash(node)))
    )
    raw[1] ^= 0xFF  # inside the signature
    error = await rpc_error(
        node, "sendTransaction", base64.b64encode(raw).decode(), {"encoding": "base64"}
    )
    assert error.code == -32003
    assert error.message == "Transaction signature verification failure"


async def test_an_expired_blockhash_is_blockhash_not_found(node: Node) -> None:
    old = await blockhash(node)
    assert (await node("isBlockhashValid", old))["value"] is True
    assert await node("scopecast_advanceSlots", 151) == 151
    assert (await node("isBlockhashValid", old))["value"] is False
    error = await rpc_error(
        node,
        "sendTransaction",
        signed_transfer(ALICE, BOB.pubkey(), 1, old),
        {"encoding": "base64"},
    )
    assert error.code == -32002
    assert error.message == "Transaction simulation failed: Blockhash not found"
    assert error.data["err"] == "BlockhashNotFound"
    latest = (await node("getLatestBlockhash"))["value"]
    assert latest["lastValidBlockHeight"] == 151 + 150
    assert (await rpc_error(node, "scopecast_advanceSlots", 0)).code == -32602


async def test_simulation_reports_accounts_and_replaces_the_blockhash(node: Node) -> None:
    stale = signed_transfer(ALICE, BOB.pubkey(), SOL, str(Hash.new_unique()))
    plain = (await node("simulateTransaction", stale, {"encoding": "base64"}))["value"]
    assert plain["err"] == "BlockhashNotFound"
    replaced = (
        await node(
            "simulateTransaction",
            stale,
            {
                "encoding": "base64",
                "replaceRecentBlockhash": True,
                "accounts": {"addresses": [str(BOB.pubkey())], "encoding": "base64"},
            },
        )
    )["value"]
    assert replaced["err"] is None
    assert replaced["unitsConsumed"] > 0
    assert replaced["replacementBlockhash"]["blockhash"] == await blockhash(node)
    assert replaced["accounts"][0]["lamports"] == 1001 * SOL
    assert (await node("getBalance", str(BOB.pubkey())))["value"] == 1000 * SOL  # unchanged
    conflict = await rpc_error(
        node,
        "simulateTransaction",
        stale,
        {"encoding": "base64", "replaceRecentBlockhash": True, "sigVerify": True},
    )
    assert conflict.code == -32602


async def test_airdrop_fees_and_rent(node: Node) -> None:
    someone = str(Keypair().pubkey())
    signature = await node("requestAirdrop", someone, 5 * SOL)
    assert (await node("getBalance", someone))["value"] == 5 * SOL
    assert (await node("getTransaction", signature))["meta"]["err"] is None
    assert await node("getMinimumBalanceForRentExemption", 0) == 890_880
    one_lamport = [
        transfer(TransferParams(from_pubkey=ALICE.pubkey(), to_pubkey=BOB.pubkey(), lamports=1))
    ]
    stale = Message.new_with_blockhash(one_lamport, ALICE.pubkey(), Hash.new_unique())
    current = Message.new_with_blockhash(
        one_lamport, ALICE.pubkey(), Hash.from_string(await blockhash(node))
    )
    encoded = base64.b64encode(bytes(current)).decode()
    assert (await node("getFeeForMessage", encoded))["value"] == 5000
    stale_message = base64.b64encode(bytes(stale)).decode()
    assert (await node("getFeeForMessage", stale_message))["value"] is None


async def test_program_accounts_with_filters(node: Node) -> None:
    system = str(SYSTEM_PROGRAM)
    found = await node("getProgramAccounts", system, {"encoding": "base64"})
    addresses = {entry["pubkey"] for entry in found}
    assert str(ALICE.pubkey()) in addresses
    assert await node("getProgramAccounts", system, {"filters": [{"dataSize": 80}]}) == []
    wrapped = await node(
        "getProgramAccounts", system, {"withContext": True, "filters": [{"dataSize": 0}]}
    )
    assert wrapped["context"]["slot"] == 0
    assert (
        await rpc_error(node, "getProgramAccounts", system, {"filters": [{"weird": 1}]})
    ).code == -32602


async def test_timed_slots_carry_demo_transfers(autojump_clock: trio.testing.MockClock) -> None:
    adapter = SolanaDevAdapter(solana_spec(block_time=2))
    await adapter.start()
    node = Node(adapter)

    async with trio.open_nursery() as nursery:
        await nursery.start(adapter.serve_slots, adapter.spec.chain)
        await trio.sleep(7)
        nursery.cancel_scope.cancel()
    assert await node("getSlot") == 3
    assert (await node("getEpochInfo"))["transactionCount"] == 6
    # A transaction waits for the next timed slot instead of opening one.
    tx = signed_transfer(ALICE, BOB.pubkey(), 1, await blockhash(node))
    await node("sendTransaction", tx, {"encoding": "base64"})
    assert await node("getSlot") == 3


async def test_the_history_is_bounded(node: Node, monkeypatch: pytest.MonkeyPatch) -> None:
    from adapters.solana import _ledger

    monkeypatch.setattr(_ledger, "MAX_HISTORY", 3)
    signatures = [await node("requestAirdrop", str(BOB.pubkey()), n + 1) for n in range(5)]
    statuses = (await node("getSignatureStatuses", signatures))["value"]
    assert [status is not None for status in statuses] == [False, False, True, True, True]
    history = await node("getSignaturesForAddress", str(BOB.pubkey()))
    assert [entry["signature"] for entry in history] == signatures[:1:-1]
    assert len(node.adapter.ledger.slots) == 3


JSON_VALUES: list[Any] = [None, 1, -1, 2**70, 1.5, True, "", "0OIl", [], {}, [1], {"a": []}]
CONFIGS: list[Any] = [
    5,
    [],
    {"encoding": []},
    {"commitment": []},
    {"minContextSlot": "1"},
    {"dataSlice": {"offset": -1}},
    {"filters": [{"memcmp": {"offset": 0, "bytes": 5}}]},
    {"limit": "1"},
    {"accounts": {"addresses": [5]}},
]


async def test_no_input_gets_anything_but_an_rpc_error(node: Node) -> None:
    """Every method, every JSON type where an address, a transaction or a config goes."""
    valid = [str(ALICE.pubkey()), "AAAA", "1" * 88]
    for method in sorted(node.adapter.methods(node.adapter.spec.chain)):
        cases: list[list[Any]] = [[value] for value in JSON_VALUES]
        cases += [[first, config] for first in [*JSON_VALUES[:3], *valid] for config in CONFIGS]
        cases += [[first, 5, config] for first in valid for config in CONFIGS]
        for params in cases:
            with contextlib.suppress(RpcError):  # anything else fails the test
                await node(method, *params)
    assert await node("getHealth") == "ok"


async def test_each_slot_is_a_block(node: Node) -> None:
    tx = signed_transfer(ALICE, BOB.pubkey(), SOL, await blockhash(node))
    signature = await node("sendTransaction", tx, {"encoding": "base64"})
    slot = await node("getSlot")
    block = await node("getBlock", slot)
    assert block["blockHeight"] == slot
    assert block["parentSlot"] == slot - 1
    assert block["previousBlockhash"] == (await node("getBlock", slot - 1))["blockhash"]
    assert block["blockTime"] == await node("getBlockTime", slot)
    (entry,) = block["transactions"]
    assert entry["transaction"]["signatures"] == [signature]
    assert entry["meta"]["fee"] == 5000
    assert set(entry) == {"transaction", "meta"}
    assert block["rewards"] == []
    only = await node("getBlock", slot, {"transactionDetails": "signatures", "rewards": False})
    assert only["signatures"] == [signature]
    assert "rewards" not in only
    assert await node("getBlocks", 0) == list(range(slot + 1))
    assert await node("getFirstAvailableBlock") == 0
    later = await rpc_error(node, "getBlock", slot + 5)
    assert (later.code, later.message) == (-32004, f"Block not available for slot {slot + 5}")


async def test_blocks_no_longer_kept(node: Node, monkeypatch: pytest.MonkeyPatch) -> None:
    from adapters.solana import _ledger

    monkeypatch.setattr(_ledger, "MAX_HISTORY", 3)
    await node("scopecast_advanceSlots", 5)
    assert await node("getFirstAvailableBlock") == 2
    gone = await rpc_error(node, "getBlock", 1)
    assert gone.code == -32001
    assert gone.message.endswith("First available block: 2")
    assert await node("getBlocks", 0, 3) == [2, 3]


async def test_sent_transactions_are_remembered_with_their_last_valid_height(node: Node) -> None:
    family = node.adapter.subscription_family(node.adapter.spec.chain)
    assert isinstance(family, SolanaSubscriptions)
    sent = family.sent
    latest = (await node("getLatestBlockhash"))["value"]
    tx = signed_transfer(ALICE, BOB.pubkey(), SOL, latest["blockhash"])
    signature = await node("sendTransaction", tx, {"encoding": "base64"})
    assert sent.last_valid(signature) == latest["lastValidBlockHeight"]
    # Refused by preflight: not sent, not remembered.
    refused = signed_transfer(ALICE, BOB.pubkey(), 10_000 * SOL, await blockhash(node))
    await rpc_error(node, "sendTransaction", refused, {"encoding": "base64"})
    refused_signature = Transaction.from_bytes(base64.b64decode(refused)).signatures[0]
    assert sent.last_valid(str(refused_signature)) is None
    # On a blockhash the chain does not know, accepted then dropped: a height already passed.
    old = signed_transfer(ALICE, BOB.pubkey(), SOL, str(Hash.new_unique()))
    options = {"encoding": "base64", "skipPreflight": True}
    dropped = await node("sendTransaction", old, options)
    assert (await node("getSignatureStatuses", [dropped]))["value"] == [None]
    assert sent.last_valid(dropped) == await node("getBlockHeight") - 1
