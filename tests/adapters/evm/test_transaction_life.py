"""A transaction's life, sans-io: observations in, the statuses to notify out."""

from adapters.evm.transactions import Inclusion, Observation, TransactionLife

HASH = "0x" + "ab" * 32
BLOCK = Inclusion(10, "0x" + "01" * 32, 1)
OTHER = Inclusion(11, "0x" + "02" * 32, 0)


def seen(
    now: float,
    head: int,
    inclusion: Inclusion | None = None,
    *,
    pool: bool = False,
    final: int | None = None,
) -> Observation:
    return Observation(now, head, inclusion, pool, final)


def names(results: list[dict[str, object]]) -> list[tuple[object, object]]:
    return [(r["status"], r["depth"]) for r in results]


def test_pending_included_confirmed_at_each_depth_then_finalized() -> None:
    life = TransactionLife(HASH)
    assert names(life.step(seen(0, 9, pool=True))) == [("pending", None)]
    assert life.step(seen(1, 9, pool=True)) == []  # said once
    included = life.step(seen(2, 10, BLOCK))
    assert included == [
        {
            "hash": HASH,
            "status": "included",
            "blockNumber": "0xa",
            "blockHash": BLOCK.hash,
            "depth": 0,
            "receiptStatus": "0x1",
        }
    ]
    assert names(life.step(seen(3, 17, BLOCK))) == [("confirmed", 1), ("confirmed", 6)]
    # the chain calls block 10 finalized, but 12 deep has not come yet
    assert life.step(seen(4, 18, BLOCK, final=18)) == []
    assert names(life.step(seen(5, 22, BLOCK, final=20))) == [("confirmed", 12), ("finalized", 12)]
    assert life.ended
    assert life.step(seen(6, 23, BLOCK, final=23)) == []


def test_a_reorg_removes_then_includes_again_from_depth_zero() -> None:
    life = TransactionLife(HASH, depths=(1, 2))
    life.step(seen(0, 12, BLOCK))
    assert names(life.step(seen(1, 12, OTHER))) == [
        ("removed", None),
        ("included", 0),
        ("confirmed", 1),
    ]
    removed = life.step(seen(2, 12, None, pool=True))
    assert names(removed) == [("removed", None), ("pending", None)]
    assert removed[0]["blockHash"] == OTHER.hash


def test_unknown_for_drop_after_seconds_is_dropped() -> None:
    life = TransactionLife(HASH, drop_after=60)
    assert names(life.step(seen(0, 1, pool=True))) == [("pending", None)]
    assert life.step(seen(10, 1)) == []  # left the pool: the clock starts
    assert life.step(seen(69, 1)) == []
    assert names(life.step(seen(70, 1))) == [("dropped", None)]
    assert life.ended
