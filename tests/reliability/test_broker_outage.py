"""Redis, the broker, stops while posts are published, then comes back: the outbox loses nothing and
sends nothing twice."""

import time
from collections import Counter

import pytest

from apps.webhooks.models import Delivery, DeliveryStatus
from apps.webhooks.services import deliveries_sweep
from tests.conftest import requires_broker, wait_until

pytestmark = [pytest.mark.reliability, requires_broker, pytest.mark.django_db(transaction=True)]


def test_posts_published_while_the_broker_is_down_are_delivered_once_per_endpoint_when_it_is_back(
    workflow, receiver, private_redis, use_broker, start_worker
):
    use_broker(private_redis.url)
    worker = start_worker(private_redis.url)
    before, *during = [workflow.pending() for _ in range(5)]
    assert workflow.publish(before).status_code == 200
    wait_until(lambda: Delivery.objects.filter(status=DeliveryStatus.SUCCEEDED).count() == 2)
    # Let the worker acknowledge that task: the outage starts with nothing in flight (kombu 5.7's Redis
    # transport crashes the worker when the connection drops while it holds unacknowledged messages).
    time.sleep(1)

    private_redis.stop()
    for post in during:
        started = time.monotonic()
        response = workflow.publish(post)
        # Publishing neither fails nor waits for the broker: the deliveries stay in the database.
        assert response.status_code == 200
        assert time.monotonic() - started < 5
    left_for_the_sweeper = Delivery.objects.filter(status=DeliveryStatus.PENDING, enqueued_at__isnull=True)
    assert left_for_the_sweeper.count() == 2 * len(during)

    private_redis.start()
    # The running worker reconnects by itself; the sweeper (beat's job) hands over what the broker missed.
    try:
        wait_until(
            lambda: Delivery.objects.filter(status=DeliveryStatus.SUCCEEDED).count() == 10,
            timeout=60,
            step=0.5,
            action=deliveries_sweep,
        )
    except AssertionError as exc:
        raise AssertionError(f"not all delivered; the worker's log ends:\n{worker.log_tail()}") from exc
    deliveries_sweep()
    time.sleep(1)  # anything sent twice would arrive now
    assert worker.process.poll() is None, f"the worker died:\n{worker.log_tail()}"

    received = Counter((r.path.rsplit("/", 1)[1], r.headers["X-Service-Delivery"]) for r in receiver.requests)
    expected = {(d.endpoint.url.rsplit("/", 1)[1], str(d.id)) for d in Delivery.objects.select_related("endpoint")}
    assert set(received) == expected
    assert set(received.values()) == {1}
    # One delivery per endpoint for each of the five published posts.
    published = Delivery.objects.filter(event__kind="post.published")
    assert sorted(published.values_list("event__post_id", flat=True)) == sorted(
        [post.id for post in [before, *during] for _ in workflow.endpoints]
    )
