"""``signatureStatusSubscribe``'s sans-io core: what the node says in, the steps to notify out."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.solana._pubsub import SolanaSubscriptions
from adapters.solana._signature_life import (
    SENT_MARGIN,
    Landed,
    Observation,
    SentTransactions,
    SignatureLife,
    SignatureStatusMatcher,
    SignatureStep,
)
from schemas.errors import InvalidParams

SIGNATURE = "5" * 88


def brief(results: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    return [(r["status"], r["commitment"]) for r in results]


def test_each_commitment_is_a_step_in_order() -> None:
    life = SignatureLife(SIGNATURE)
    assert life.step(Observation(None)) == []
    included = life.step(Observation(Landed(7, "processed", 0, None)))
    assert included == [
        {
            "hash": SIGNATURE,
            "status": "included",
            "commitment": "processed",
            "blockNumber": "0x7",
            "slot": 7,
            "blockHash": None,
            "depth": 0,
            "receiptStatus": "0x1",
            "err": None,
        }
    ]
    assert life.step(Observation(Landed(7, "processed", 1, None))) == []
    assert brief(life.step(Observation(Landed(7, "confirmed", 2, None)))) == [
        ("confirmed", "confirmed")
    ]
    assert not life.ended
    assert brief(life.step(Observation(Landed(7, "finalized", None, None)))) == [
        ("finalized", "finalized")
    ]
    assert life.ended
    assert life.step(Observation(Landed(7, "finalized", None, None))) == []


def test_a_signature_final_at_once_still_gives_every_step() -> None:
    life = SignatureLife(SIGNATURE)
    err = {"InstructionError": [0, {"Custom": 1}]}
    steps = life.step(Observation(Landed(3, "finalized", None, err)))
    assert brief(steps) == [
        ("included", "processed"),
        ("confirmed", "confirmed"),
        ("finalized", "finalized"),
    ]
    assert {r["receiptStatus"] for r in steps} == {"0x0"}
    assert {str(r["err"]) for r in steps} == {str(err)}
    assert life.ended


def test_a_slot_that_left_the_chain_is_removed_then_included_again() -> None:
    life = SignatureLife(SIGNATURE)
    life.step(Observation(Landed(9, "processed", 0, None)))
    removed = life.step(Observation(None))
    assert brief(removed) == [("removed", None)]
    assert removed[0]["slot"] == 9
    again = life.step(Observation(Landed(11, "confirmed", 1, None)))
    assert brief(again) == [("included", "processed"), ("confirmed", "confirmed")]
    assert again[0]["slot"] == 11


def test_dropped_once_the_finalized_height_passes_the_last_valid_one() -> None:
    life = SignatureLife(SIGNATURE, last_valid=150)
    assert life.step(Observation(None, finalized_height=150)) == []
    assert not life.ended
    dropped = life.step(Observation(None, finalized_height=151))
    assert brief(dropped) == [("dropped", None)]
    assert dropped[0]["slot"] is None
    assert life.ended
    # Without the height it was built for, a signature is never called dropped.
    unbounded = SignatureLife(SIGNATURE)
    assert unbounded.step(Observation(None, finalized_height=10**9)) == []


def test_a_landed_signature_is_not_dropped_past_its_height() -> None:
    life = SignatureLife(SIGNATURE, last_valid=150)
    life.step(Observation(Landed(140, "confirmed", 1, None)))
    assert brief(life.step(Observation(Landed(140, "finalized", None, None), 200))) == [
        ("finalized", "finalized")
    ]


def test_a_sent_transaction_lends_its_height_to_a_subscription_without_one() -> None:
    family = SolanaSubscriptions()
    family.sent.remember(SIGNATURE, 160, 10)
    remembered = family.parse("signatureStatusSubscribe", [SIGNATURE])
    assert isinstance(remembered, SignatureStatusMatcher)
    assert remembered.life.last_valid == 160
    named = family.parse("signatureStatusSubscribe", [SIGNATURE, {"lastValidBlockHeight": 170}])
    assert isinstance(named, SignatureStatusMatcher)
    assert named.life.last_valid == 170  # the subscriber's own height wins
    other = family.parse("signatureStatusSubscribe", ["4" * 88])
    assert isinstance(other, SignatureStatusMatcher)
    assert other.life.last_valid is None  # not sent here: never called dropped


def test_sent_transactions_are_bounded_and_expire_after_their_height() -> None:
    sent = SentTransactions(limit=3)
    for n in range(4):
        sent.remember(f"sig{n}", 150 + n, n)
    assert len(sent) == 3
    assert sent.last_valid("sig0") is None  # the oldest went first
    assert sent.last_valid("sig3") == 153
    # Once the chain passed a height by the margin, its transaction is forgotten.
    sent.remember("late", 400, 151 + SENT_MARGIN)
    assert sent.last_valid("sig1") is None
    assert sent.last_valid("sig2") == 152
    assert sent.last_valid("late") == 400


@pytest.mark.parametrize(
    "params",
    [
        [],
        ["not a signature"],
        [SIGNATURE, {"lastValidBlockHeight": -1}],
        [SIGNATURE, {"lastValidBlockHeight": "12"}],
        [SIGNATURE, {"blockhash": "x"}],
        [SIGNATURE, {}, 3],
    ],
)
def test_bad_params_are_solanas_invalid_params(params: list[Any]) -> None:
    with pytest.raises(InvalidParams):
        SolanaSubscriptions().parse("signatureStatusSubscribe", params)


def test_the_index_gives_each_step_to_its_own_subscription_and_ends_it() -> None:
    family = SolanaSubscriptions()
    first = family.parse("signatureStatusSubscribe", [SIGNATURE])
    second = family.parse("signatureStatusSubscribe", [SIGNATURE, {"lastValidBlockHeight": 5}])
    assert isinstance(first, SignatureStatusMatcher)
    assert isinstance(second, SignatureStatusMatcher)
    assert first.key != second.key
    index = family.new_index()
    index.add("a", first)
    index.add("b", second)
    step = SignatureStep(first, b'{"status":"finalized"}', True)
    assert [(list(subs), payload) for subs, payload in index.matching(step)] == [
        (["a"], b'{"status":"finalized"}')
    ]
    assert list(index.ended(step)) == ["a"]
    assert list(index.ended(SignatureStep(second, b"{}", False))) == []
    index.remove("a", first)
    assert list(index.matching(step)) == []
