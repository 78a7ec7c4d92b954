"""Which chains' blocks carry their transactions (sans-io, with a clock given): while a source
says an activity subscription follows the chain, and ``linger`` seconds after; and the head
tracker sends a block that has transactions but no logs as a logs event, removed with it."""

from adapters.evm.blocks import ChainBlock, TransactionRecord
from adapters.evm.heads import Advanced, HeadTracker
from broker.events.activity import ActivityDemand
from broker.events.chain_events import HeadEvent, LogsEvent

CHAIN = "eip155:1337"


def test_a_chain_is_followed_while_a_source_says_so_and_linger_seconds_after() -> None:
    now = [100.0]
    following: set[str] = set()
    demand = ActivityDemand(linger=30.0, clock=lambda: now[0])
    demand.follow(lambda chain: chain in following)
    assert not demand.here(CHAIN)
    following.add(CHAIN)
    assert demand.here(CHAIN)
    assert not demand.here("eip155:1")
    following.clear()  # the last subscription went at 100
    now[0] = 129.0
    assert demand.here(CHAIN)
    now[0] = 130.0
    assert not demand.here(CHAIN)
    assert not demand.here(CHAIN)


def _block(number: int, branch: str, parent: str, *, transactions: int) -> ChainBlock:
    records = tuple(TransactionRecord("0x" + "aa" * 20, None, b"{}") for _ in range(transactions))
    return ChainBlock(number, f"0x{branch}{number}", f"0x{parent}{number - 1}", b"{}", (), records)


def test_a_block_with_transactions_and_no_logs_is_sent_and_removed_as_a_logs_event() -> None:
    tracker = HeadTracker(CHAIN)
    tracker.offer([_block(1, "a", "a", transactions=0)])
    mined = tracker.offer([_block(2, "a", "a", transactions=1)])
    assert isinstance(mined, Advanced)
    assert [type(e) for e in mined.events] == [HeadEvent, LogsEvent]
    reorg = tracker.offer([_block(2, "b", "a", transactions=0)])
    assert isinstance(reorg, Advanced)
    assert [(type(e), getattr(e, "removed", None)) for e in reorg.events] == [
        (LogsEvent, True),
        (HeadEvent, None),
    ]
    assert reorg.events[0].block.hash == "0xa2"
