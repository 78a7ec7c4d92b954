"""Which accounts are read after a block (sans-io): subscribed ones, and for ``linger`` seconds
those whose subscribers left (they may resume), the broker's short-lived replay indexes only while
they live."""

from __future__ import annotations

import gc

from solders.keypair import Keypair

from adapters.solana._pubsub import parse
from adapters.solana.upstream._watch import UpstreamSubscriptions, WatchedAccounts

A, B, C = (str(Keypair().pubkey()) for _ in range(3))
WRITTEN = (A, B, C)
PROGRAM = "11111111111111111111111111111111"


def test_subscribed_accounts_then_lingering_ones() -> None:
    now = [0.0]
    watched = WatchedAccounts(linger=10.0)
    family = UpstreamSubscriptions(watched, lambda: now[0])
    index = family.new_index()
    on_b = parse("accountSubscribe", [B])
    index.add("sub1", on_b)
    index.add("sub2", parse("accountSubscribe", [B, {"encoding": "base64"}]))
    assert watched.wanted(WRITTEN, now[0]) == [B]
    index.remove("sub1", on_b)
    now[0] = 5.0
    index.remove("sub2", parse("accountSubscribe", [B, {"encoding": "base64"}]))
    assert watched.wanted(WRITTEN, 14.0) == [B]  # left at 5 s: read until 15 s
    assert watched.wanted(WRITTEN, 15.0) == []


def test_a_program_subscription_reads_every_written_account() -> None:
    watched = WatchedAccounts(linger=1.0)
    index = UpstreamSubscriptions(watched, lambda: 0.0).new_index()
    program = parse("programSubscribe", [PROGRAM])
    index.add("sub", program)
    assert watched.wanted(WRITTEN, 0.0) == list(WRITTEN)
    index.remove("sub", program)
    assert watched.wanted(WRITTEN, 0.5) == list(WRITTEN)
    assert watched.wanted(WRITTEN, 1.0) == []


def test_a_replay_index_counts_only_while_it_lives() -> None:
    watched = WatchedAccounts(linger=10.0)
    family = UpstreamSubscriptions(watched, lambda: 0.0)
    replay = family.new_index()
    replay.add("resumed", parse("accountSubscribe", [C]))  # never removed: dropped whole
    assert watched.wanted(WRITTEN, 0.0) == [C]
    del replay
    gc.collect()
    assert watched.wanted(WRITTEN, 0.0) == []
