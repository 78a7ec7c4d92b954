"""The response store and head epochs, with plain calls."""

from __future__ import annotations

from adapters.base import CacheEpoch, Lifetime
from broker.rpc.response_cache import HeadEpochs, Recent, RecentBodies, ResponseStore

E1 = CacheEpoch(10, "0xa", 0)
E2 = CacheEpoch(11, "0xb", 0)  # the next head
R1 = CacheEpoch(10, "0xc", 1)  # a reorganisation


def key(n: int = 0) -> tuple[str, str, bytes]:
    return ("eip155:1337", "eth_getBlockByNumber", b'["0x%x",false]' % n)


def test_an_answer_until_the_next_head_is_gone_once_the_head_moves() -> None:
    store = ResponseStore(1 << 20)
    store.put(key(), b"{}", Lifetime.UNTIL_HEAD, E1)
    assert store.get(key(), E1) == b"{}"
    assert store.get(key(), E2) is None
    assert store.get(key(), E1) is None  # dropped, not just hidden
    assert (store.hits, store.misses) == (1, 2)


def test_history_stays_across_heads_and_goes_with_a_reorganisation() -> None:
    store = ResponseStore(1 << 20)
    store.put(key(), b"{}", Lifetime.UNTIL_REORG, E1)
    assert store.get(key(), E2) == b"{}"
    assert store.get(key(), R1) is None


def test_forever_survives_everything_and_never_is_not_kept() -> None:
    store = ResponseStore(1 << 20)
    store.put(key(1), b'"0x539"', Lifetime.FOREVER, E1)
    store.put(key(2), b"{}", Lifetime.NEVER, E1)
    assert store.get(key(1), R1) == b'"0x539"'
    assert store.get(key(2), E1) is None
    assert store.statistics().entries == 1


def test_the_least_recently_used_answers_go_first_and_the_bound_holds() -> None:
    store = ResponseStore(3 * 1300)
    for n in range(3):
        store.put(key(n), b"x" * 1000, Lifetime.UNTIL_REORG, E1)
    assert store.get(key(0), E1) is not None  # 0 is now the most recent
    store.put(key(3), b"x" * 1000, Lifetime.UNTIL_REORG, E1)
    assert store.get(key(1), E1) is None  # the oldest went
    assert store.get(key(0), E1) is not None
    stats = store.statistics()
    assert stats.bytes <= store.max_bytes
    assert stats.evictions == 1


def test_an_answer_larger_than_the_whole_cache_is_not_kept() -> None:
    store = ResponseStore(1000)
    store.put(key(), b"x" * 2000, Lifetime.UNTIL_REORG, E1)
    assert store.statistics().entries == 0


def test_replacing_an_answer_keeps_the_byte_count_right() -> None:
    store = ResponseStore(1 << 20)
    store.put(key(), b"x" * 100, Lifetime.UNTIL_HEAD, E1)
    store.put(key(), b"x" * 10, Lifetime.UNTIL_HEAD, E2)
    assert store.get(key(), E2) == b"x" * 10
    assert store.statistics().bytes == 10 + len(key()[2]) + 200


def test_head_epochs_count_a_head_at_or_below_the_last_and_removed_logs_as_reorgs() -> None:
    epochs = HeadEpochs()
    chain = "eip155:1"
    assert epochs.epoch(chain) is None
    epochs.on_head(chain, 5, "0x5a")
    epochs.on_head(chain, 6, "0x6a")
    assert epochs.epoch(chain) == CacheEpoch(6, "0x6a", 0)
    epochs.on_head(chain, 6, "0x6a")  # the same head again changes nothing
    assert epochs.epoch(chain) == CacheEpoch(6, "0x6a", 0)
    epochs.on_head(chain, 6, "0x6b")  # another block at the same height
    assert epochs.epoch(chain) == CacheEpoch(6, "0x6b", 1)
    epochs.on_removed(chain)
    assert epochs.epoch(chain) == CacheEpoch(6, "0x6b", 2)


def test_recent_bodies_stay_within_their_bound_and_skip_large_bodies() -> None:
    recent = RecentBodies(max_bytes=2000, max_body=64)
    for n in range(20):
        body = b'{"id":%d}' % n
        recent.keep(body, Recent(("c", "m", b"[]"), b"%d" % n, b"x" * 300, b"y" * 300))
        assert recent.get(body) is not None
        assert recent._bytes <= recent.max_bytes
    kept = sum(recent.get(b'{"id":%d}' % n) is not None for n in range(20))
    assert 1 <= kept < 20
    large = b"{" + b" " * 100 + b"}"
    recent.keep(large, Recent(("c", "m", b"[]"), b"1", b"x", b"y"))
    assert recent.get(large) is None
