"""The one-node cluster's answers (identity, vote account, leader schedule, inflation, supply,
fees, performance) and the slot feeds of PubSub (root, slot updates, blocks, votes), in Solana's
shapes."""

from __future__ import annotations

from typing import Any

import msgspec
import trio
import trio.testing
from solders.compute_budget import set_compute_unit_price
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.signature import Signature
from solders.system_program import TransferParams, transfer

from adapters._base58 import b58decode
from adapters._ed25519 import DEV_MNEMONIC, derive_keypairs
from adapters.solana._events import SolanaEvent
from adapters.solana._pubsub import Matcher, parse

from .conftest import Node
from .test_methods import SOL, rpc_error
from .test_token import send

ALICE, BOB = derive_keypairs(DEV_MNEMONIC, 2)


async def test_one_node_identity_leaders_and_votes(node: Node) -> None:
    identity = (await node("getIdentity"))["identity"]
    assert await node("getSlotLeader") == identity
    assert await node("getSlotLeaders", 0, 3) == [identity] * 3
    (contact,) = await node("getClusterNodes")
    assert contact["pubkey"] == identity
    assert contact["version"] == (await node("getVersion"))["solana-core"]
    schedule = await node("getLeaderSchedule")
    assert list(schedule) == [identity]
    assert schedule[identity][:3] == [0, 1, 2]
    assert len(schedule[identity]) == 432_000
    assert await node("getLeaderSchedule", None, {"identity": str(Keypair().pubkey())}) == {}
    assert await node("getLeaderSchedule", 432_000 * 5) is None
    await node("scopecast_advanceSlots", 3)
    votes = await node("getVoteAccounts")
    assert votes["delinquent"] == []
    (vote,) = votes["current"]
    assert vote["nodePubkey"] == identity
    assert vote["lastVote"] == vote["rootSlot"] == 2
    assert vote["epochCredits"] == [[0, 2, 0]]
    assert vote["epochVoteAccount"] is True
    commitment = await node("getBlockCommitment", 1)
    assert commitment == {"commitment": None, "totalStake": vote["activatedStake"]}
    assert (await node("getVoteAccounts", {"votePubkey": identity}))["current"] == []
    assert await node("getBlocksWithLimit", 1, 2) == [1, 2]
    assert await node("getBlocksWithLimit", 2, 10) == [2, 3]
    assert await node("minimumLedgerSlot") == 0
    error = await rpc_error(node, "getHighestSnapshotSlot")
    assert (error.code, error.message) == (-32008, "No snapshot")
    error = await rpc_error(node, "getSlotLeaders", 0, 5001)
    assert error.code == -32602


async def test_epochs_inflation_and_stake(node: Node) -> None:
    schedule = await node("getEpochSchedule")
    assert schedule == {
        "slotsPerEpoch": 432_000,
        "leaderScheduleSlotOffset": 432_000,
        "warmup": False,
        "firstNormalEpoch": 0,
        "firstNormalSlot": 0,
    }
    assert (await node("getEpochInfo"))["slotsInEpoch"] == schedule["slotsPerEpoch"]
    governor = await node("getInflationGovernor")
    assert governor == {
        "initial": 0.08,
        "terminal": 0.015,
        "taper": 0.15,
        "foundation": 0.05,
        "foundationTerm": 7.0,
    }
    rate = await node("getInflationRate")
    assert rate["epoch"] == 0
    assert rate["total"] == 0.08
    assert abs(rate["foundation"] - 0.004) < 1e-12
    assert abs(rate["validator"] + rate["foundation"] - rate["total"]) < 1e-12
    wallets = [str(ALICE.pubkey()), str(BOB.pubkey())]
    assert await node("getInflationReward", wallets, {"epoch": 0}) == [None, None]
    assert (await node("getStakeMinimumDelegation"))["value"] == 1


async def test_supply_and_largest_accounts(node: Node) -> None:
    before = (await node("getSupply"))["value"]
    assert before["total"] == before["circulating"] + before["nonCirculating"]
    (faucet,) = before["nonCirculatingAccounts"]
    assert (await node("getBalance", faucet))["value"] == before["nonCirculating"]
    signed = await send(
        node,
        [ALICE],
        transfer(TransferParams(from_pubkey=ALICE.pubkey(), to_pubkey=BOB.pubkey(), lamports=SOL)),
    )
    assert signed
    after = (await node("getSupply", {"excludeNonCirculatingAccountsList": True}))["value"]
    assert after["total"] == before["total"] - 5000  # the fee is burned
    assert after["nonCirculatingAccounts"] == []
    largest = (await node("getLargestAccounts"))["value"]
    assert largest[0] == {"address": faucet, "lamports": before["nonCirculating"]}
    circulating = (await node("getLargestAccounts", {"filter": "circulating"}))["value"]
    assert faucet not in [entry["address"] for entry in circulating]
    assert str(BOB.pubkey()) in [entry["address"] for entry in circulating]
    assert len(circulating) == 20
    lamports = [entry["lamports"] for entry in circulating]
    assert lamports == sorted(lamports, reverse=True)


async def test_prioritization_fees_and_performance_samples(node: Node) -> None:
    payee = Keypair().pubkey()
    await send(
        node,
        [ALICE],
        set_compute_unit_price(25),
        transfer(TransferParams(from_pubkey=ALICE.pubkey(), to_pubkey=payee, lamports=SOL)),
    )
    await send(
        node,
        [BOB],
        transfer(
            TransferParams(from_pubkey=BOB.pubkey(), to_pubkey=Keypair().pubkey(), lamports=SOL)
        ),
    )
    await node("scopecast_advanceSlots", 1)
    # slot 1 holds Alice's priced transfer, slot 2 Bob's unpriced one
    fees = await node("getRecentPrioritizationFees")
    assert fees == [
        {"slot": 0, "prioritizationFee": 0},
        {"slot": 1, "prioritizationFee": 25},
        {"slot": 2, "prioritizationFee": 0},
    ]
    mentioning = await node("getRecentPrioritizationFees", [str(payee)])
    assert [fee["prioritizationFee"] for fee in mentioning] == [0, 25, 0]
    error = await rpc_error(node, "getRecentPrioritizationFees", [str(payee)] * 129)
    assert error.code == -32602
    (sample,) = await node("getRecentPerformanceSamples", 5)
    assert sample == {
        "slot": 2,
        "numTransactions": 2,
        "numNonVoteTransactions": 2,
        "numSlots": 3,
        "samplePeriodSecs": 60,
    }


async def slot_events(node: Node) -> list[SolanaEvent]:
    """The events of a transfer landing in slot 1 and slot 1 closing."""
    seen: list[SolanaEvent] = []

    async def keep(event: SolanaEvent) -> None:
        seen.append(event)

    adapter = node.adapter
    async with trio.open_nursery() as nursery:
        await nursery.start(adapter.serve_events, adapter.spec.chain, keep)
        await send(
            node,
            [ALICE],
            transfer(
                TransferParams(from_pubkey=ALICE.pubkey(), to_pubkey=BOB.pubkey(), lamports=SOL)
            ),
        )
        await node("scopecast_advanceSlots", 1)
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()
    return seen


def all_rendered(matcher: Matcher, events: list[SolanaEvent]) -> list[Any]:
    return [msgspec.json.decode(result) for e in events for result in matcher.render_all(e)]


async def test_root_slot_updates_block_and_vote_feeds(node: Node) -> None:
    events = await slot_events(node)
    assert all_rendered(parse("rootSubscribe", []), events) == [0, 1]
    updates = all_rendered(parse("slotsUpdatesSubscribe", []), events)
    assert [(u["type"], u["slot"]) for u in updates] == [
        ("frozen", 0),
        ("optimisticConfirmation", 0),
        ("root", 0),
        ("createdBank", 1),
        ("frozen", 1),
        ("optimisticConfirmation", 1),
        ("root", 1),
        ("createdBank", 2),
    ]
    assert updates[3]["parent"] == 0
    assert updates[4]["stats"] == {
        "numTransactionEntries": 1,
        "numSuccessfulTransactions": 1,
        "numFailedTransactions": 0,
        "maxTransactionsPerEntry": 1,
    }
    assert isinstance(updates[0]["timestamp"], int)

    blocks = all_rendered(
        parse("blockSubscribe", ["all", {"encoding": "jsonParsed", "showRewards": False}]), events
    )
    assert [b["value"]["slot"] for b in blocks] == [0, 1]
    block = blocks[1]
    assert block["context"] == {"slot": 1}
    assert block["value"]["err"] is None
    assert block["value"]["block"] == await node(
        "getBlock", 1, {"encoding": "jsonParsed", "rewards": False}
    )
    (landed,) = block["value"]["block"]["transactions"]
    assert landed["transaction"]["message"]["instructions"][0]["parsed"]["type"] == "transfer"
    mentioning = parse(
        "blockSubscribe",
        [{"mentionsAccountOrProgram": str(BOB.pubkey())}, {"transactionDetails": "signatures"}],
    )
    (only,) = all_rendered(mentioning, events)
    assert only["value"]["block"]["signatures"] == [landed["transaction"]["signatures"][0]]
    assert "rewards" in only["value"]["block"]

    votes = all_rendered(parse("voteSubscribe", []), events)
    assert [v["slots"] for v in votes] == [[0], [1]]
    identity = Pubkey.from_string((await node("getIdentity"))["identity"])
    vote = votes[1]
    assert vote["votePubkey"] == (await node("getVoteAccounts"))["current"][0]["votePubkey"]
    assert vote["hash"] == block["value"]["block"]["blockhash"]
    message = vote["votePubkey"].encode() + (1).to_bytes(8, "little") + vote["hash"].encode()
    assert Signature.from_bytes(b58decode(vote["signature"])).verify(identity, message)
