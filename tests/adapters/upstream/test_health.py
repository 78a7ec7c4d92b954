"""The health board (sans-io): benching, backoff, probing back, priority order."""

from collections.abc import Callable

import pytest

from adapters.upstream._health import Backoff, HealthBoard, IllegalTransition, State


def board(count: int = 3, bench_after: int = 2) -> HealthBoard:
    """All upstreams verified and healthy, as after a successful start."""
    health = HealthBoard(
        [f"u{i}" for i in range(count)], bench_after=bench_after, bench_base=1.0, bench_max=8.0
    )
    for index in range(count):
        health.claim_probe(index, 0.0)
        health.probe_ok(index, verified=True)
    return health


def test_backoff_doubles_up_to_the_cap_and_resets() -> None:
    backoff = Backoff(0.5, 3.0)
    assert [backoff.failed(0.0) for _ in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert not backoff.due(2.9)
    assert backoff.due(3.0)
    backoff.succeeded()
    assert backoff.failed(10.0) == 0.5


def test_unverified_upstreams_get_no_traffic_until_probed() -> None:
    health = HealthBoard(["a", "b"], bench_after=1, bench_base=1.0, bench_max=2.0)
    assert health.order() == []
    assert health.due_probes(0.0) == [0, 1]
    health.claim_probe(1, 0.0)
    health.probe_ok(1, verified=True)
    assert health.order() == [1]


def test_order_is_config_order_with_benched_ones_as_last_resort() -> None:
    health = board()
    assert health.order() == [0, 1, 2]
    assert health.failure(0, 0.0) is None
    assert health.order() == [0, 1, 2]  # one failure does not bench
    assert health.failure(0, 0.0) == 1.0
    assert health.state(0) is State.BENCHED
    assert health.order() == [1, 2, 0]
    assert health.order(prefer=2) == [2, 1, 0]


def test_a_success_resets_the_count_of_consecutive_failures() -> None:
    health = board()
    health.failure(0, 0.0)
    health.success(0)
    assert health.failure(0, 0.0) is None
    assert health.state(0) is State.HEALTHY


def test_bench_grows_on_failed_probes_and_resets_when_one_answers() -> None:
    health = board()
    health.failure(0, 0.0)
    assert health.failure(0, 0.0) == 1.0
    assert health.due_probes(0.5) == []
    assert health.next_probe_at() == 1.0
    assert health.due_probes(1.0) == [0]
    health.claim_probe(0, 1.0)
    assert health.due_probes(1.0) == []  # one prober at a time
    assert health.probe_failed(0, 1.0) == 2.0
    health.claim_probe(0, 3.0)
    assert health.probe_failed(0, 3.0) == 4.0
    health.claim_probe(0, 7.0)
    health.probe_ok(0)
    assert health.order() == [0, 1, 2]
    health.failure(0, 10.0)
    assert health.failure(0, 10.0) == 1.0  # back to the base bench


def test_a_released_probe_is_due_again_at_once() -> None:
    health = board()
    health.failure(0, 0.0)
    health.failure(0, 0.0)
    health.claim_probe(0, 1.0)
    health.release_probe(0)
    assert health.state(0) is State.BENCHED
    assert health.due_probes(1.0) == [0]


def test_any_answer_revives_a_benched_upstream() -> None:
    health = board()
    health.failure(1, 0.0)
    health.failure(1, 0.0)
    assert health.success(1) is True
    assert health.state(1) is State.HEALTHY
    assert health.success(1) is False


def test_a_probe_racing_a_successful_request_is_harmless() -> None:
    health = board()
    health.failure(0, 0.0)
    health.failure(0, 0.0)
    health.claim_probe(0, 1.0)
    health.success(0)
    health.probe_ok(0)
    assert health.state(0) is State.HEALTHY


def test_excluded_upstreams_are_never_used_again() -> None:
    health = HealthBoard(["a", "b"], bench_after=1, bench_base=1.0, bench_max=2.0)
    health.claim_probe(0, 0.0)
    health.exclude(0)
    assert health.state(0) is State.EXCLUDED
    assert health.order() == []
    assert health.due_probes(100.0) == [1]
    with pytest.raises(IllegalTransition):
        health.success(0)
    assert health.state(0) is State.EXCLUDED


@pytest.mark.parametrize(
    ("action", "state"),
    [
        (lambda h: h.claim_probe(0, 0.0), State.HEALTHY),
        (lambda h: h.probe_ok(1), State.BENCHED),
        (lambda h: h.probe_failed(1, 0.0), State.BENCHED),
        (lambda h: h.release_probe(1), State.BENCHED),
        (lambda h: h.claim_probe(1, 0.5), State.BENCHED),  # bench not over yet
    ],
)
def test_illegal_transitions_raise_and_change_nothing(
    action: Callable[[HealthBoard], object], state: State
) -> None:
    health = board(bench_after=1)
    health.failure(1, 0.0)
    before = health.statistics()
    with pytest.raises(IllegalTransition):
        action(health)
    assert health.statistics() == before
    assert health.state(0 if state is State.HEALTHY else 1) is state


def test_statistics_count_requests_and_failures() -> None:
    health = board(count=1, bench_after=5)
    health.success(0)
    health.failure(0, 0.0)
    (status,) = health.statistics()
    assert (status.requests, status.failures, status.consecutive_failures) == (2, 1, 1)
    assert status.state is State.HEALTHY
    assert status.verified
