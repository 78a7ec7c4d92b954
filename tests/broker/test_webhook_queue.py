"""One webhook's deliveries, sans-io: order, retries with backoff, parking, overflow, replay."""

import pytest

from broker.events.webhooks._queue import Delivery, DeliveryQueue, RetryPolicy, Send, WaitUntil
from broker.events.webhooks._sender import judge


def deliveries(cursor: str, count: int = 1) -> list[Delivery]:
    return [Delivery(f"msg_{cursor}_{n}", cursor, n == count - 1, b"{}") for n in range(count)]


def sent(queue: DeliveryQueue, now: float) -> Delivery:
    step = queue.next(now)
    assert isinstance(step, Send), step
    return step.delivery


def test_a_failing_delivery_holds_the_ones_after_it_and_is_retried_as_itself() -> None:
    queue = DeliveryQueue(RetryPolicy(initial=1.0, longest=8.0), draw=lambda: 1.0)
    queue.offer(deliveries("1-0", 2))
    queue.offer(deliveries("2-0"))
    first = sent(queue, 0.0)
    assert queue.next(0.0) == WaitUntil(None)  # one attempt at a time
    queue.failed_head(0.0, "HTTP 500")
    assert queue.state == "retrying"
    assert queue.next(0.5) == WaitUntil(1.0)  # nothing overtakes it meanwhile
    assert sent(queue, 1.0) == first  # the same id and body
    queue.failed_head(1.0, "HTTP 500")
    assert queue.next(1.0) == WaitUntil(3.0)  # doubled
    assert sent(queue, 3.0) == first
    queue.delivered_head()
    assert queue.state == "active"
    assert queue.position is None  # the event's second notification is still owed
    second = sent(queue, 3.0)
    assert second.id == "msg_1-0_1"
    queue.delivered_head()
    assert queue.position == "1-0"
    assert sent(queue, 3.0).cursor == "2-0"


def test_backoff_is_jittered_capped_and_yields_to_retry_after() -> None:
    policy = RetryPolicy(initial=1.0, longest=4.0)
    assert policy.wait(1, lambda: 0.0) == 0.5
    assert policy.wait(10, lambda: 1.0) == 4.0
    queue = DeliveryQueue(policy, draw=lambda: 0.0)
    queue.offer(deliveries("1-0"))
    sent(queue, 0.0)
    queue.failed_head(0.0, "HTTP 429", retry_after=30.0)
    assert queue.next(0.0) == WaitUntil(30.0)


def test_a_delivery_failing_past_retry_for_parks_the_webhook_until_replayed() -> None:
    queue = DeliveryQueue(RetryPolicy(initial=1.0, retry_for=10.0), draw=lambda: 1.0)
    queue.offer(deliveries("1-0"))
    now = 0.0
    while queue.state != "failed":
        sent(queue, now)
        queue.failed_head(now, "cannot connect")
        step = queue.next(now)
        now = step.when if isinstance(step, WaitUntil) and step.when is not None else now
    assert now < 10.0
    assert [(p.id, p.cursor, p.error) for p in queue.failed_deliveries] == [
        ("msg_1-0_0", "1-0", "cannot connect")
    ]
    assert queue.offer(deliveries("2-0")) is False  # parked: not queued, replayable
    assert queue.next(now) == WaitUntil(None)
    queue.hold()
    queue.offer(deliveries("3-0"))  # live, while the replay reads its range
    queue.replay("0-0", [*deliveries("1-0"), *deliveries("2-0")])
    assert queue.state == "active"
    order = []
    while isinstance(step := queue.next(now), Send):
        order.append(step.delivery.cursor)
        queue.delivered_head()
    assert order == ["1-0", "2-0", "3-0"]
    assert queue.position == "3-0"


def test_a_refused_delivery_parks_at_once() -> None:
    queue = DeliveryQueue(RetryPolicy())
    queue.offer(deliveries("1-0"))
    sent(queue, 0.0)
    queue.failed_head(0.0, "HTTP 404", final=True)
    assert queue.state == "failed"
    assert queue.last_error == "HTTP 404"


def test_an_overflowing_backlog_parks_the_webhook() -> None:
    queue = DeliveryQueue(RetryPolicy(backlog=3))
    assert queue.offer(deliveries("1-0", 3)) is True
    assert queue.offer(deliveries("2-0")) is False
    assert queue.state == "failed"
    assert queue.backlog == 0
    assert "backlog over 3" in (queue.last_error or "")


def test_outcomes_without_an_attempt_are_refused_and_change_nothing() -> None:
    queue = DeliveryQueue(RetryPolicy())
    queue.offer(deliveries("1-0"))
    with pytest.raises(RuntimeError):
        queue.delivered_head()
    assert queue.backlog == 1
    assert queue.delivered == 0


@pytest.mark.parametrize(
    ("status", "retry_after", "ok", "retryable", "wait"),
    [
        (200, None, True, False, None),
        (204, None, True, False, None),
        (429, b"7", False, True, 7.0),
        (503, b"2", False, True, 2.0),
        (500, b"9", False, True, None),
        (408, None, False, True, None),
        (302, None, False, False, None),
        (404, None, False, False, None),
        (429, b"Wed, 21 Oct 2015 07:28:00 GMT", False, True, None),
    ],
)
def test_responses_are_judged_as_the_issue_says(
    status: int, retry_after: bytes | None, ok: bool, retryable: bool, wait: float | None
) -> None:
    outcome = judge(status, retry_after)
    assert (outcome.ok, outcome.retryable, outcome.retry_after) == (ok, retryable, wait)
