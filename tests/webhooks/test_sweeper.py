from datetime import timedelta

import pytest
from django.utils import timezone

from apps.webhooks import services, upkeep
from apps.webhooks.models import Delivery, DeliveryStatus

pytestmark = pytest.mark.django_db


@pytest.fixture
def handed_over(monkeypatch):
    """Records what the sweeper hands to the broker (the broker itself is exercised by the
    real-worker tests in test_worker.py)."""
    calls: list[str] = []
    monkeypatch.setattr(services, "enqueue", lambda ids, manual=False: calls.extend(ids))
    return calls


def test_sweeper_hands_over_deliveries_the_broker_never_got(endpoint, emit, handed_over):
    delivery = emit().deliveries.get()
    Delivery.objects.filter(pk=delivery.pk).update(enqueued_at=None)
    assert services.deliveries_sweep() == 1
    assert handed_over == [str(delivery.id)]
    # Handed over once: a second sweep right after does not send it again.
    assert services.deliveries_sweep() == 0


def test_sweeper_leaves_recently_enqueued_and_held_and_future_deliveries(endpoint, emit, handed_over):
    recent = emit().deliveries.get()  # enqueued at emit time
    held = emit().deliveries.get()
    future = emit().deliveries.get()
    now = timezone.now()
    Delivery.objects.filter(pk=held.pk).update(enqueued_at=None, locked_until=now + timedelta(minutes=1))
    Delivery.objects.filter(pk=future.pk).update(enqueued_at=None, next_attempt_at=now + timedelta(minutes=1))
    assert services.deliveries_sweep() == 0
    assert handed_over == []
    assert recent.enqueued_at is not None


def test_sweeper_requeues_deliveries_lost_by_the_broker(endpoint, emit, handed_over, settings):
    delivery = emit().deliveries.get()
    stale = timezone.now() - timedelta(seconds=settings.WEBHOOK_REQUEUE_AFTER + 1)
    Delivery.objects.filter(pk=delivery.pk).update(enqueued_at=stale)
    assert services.deliveries_sweep() == 1


def test_sweeper_skips_finished_deliveries_and_disabled_endpoints(endpoint, emit, handed_over):
    done = emit().deliveries.get()
    Delivery.objects.filter(pk=done.pk).update(enqueued_at=None, status=DeliveryStatus.SUCCEEDED)
    waiting = emit().deliveries.get()
    Delivery.objects.filter(pk=waiting.pk).update(enqueued_at=None)
    endpoint.enabled = False
    endpoint.save()
    assert services.deliveries_sweep() == 0
    endpoint.enabled = True
    endpoint.save()
    assert services.deliveries_sweep() == 1
    assert handed_over == [str(waiting.id)]


def test_sweeper_works_in_batches(endpoint, emit, handed_over):
    for _ in range(5):
        emit()
    Delivery.objects.update(enqueued_at=None)
    assert services.deliveries_sweep(limit=2) == 5
    assert len(set(handed_over)) == 5


def test_broker_failure_at_commit_leaves_the_delivery_for_the_sweeper(endpoint, emit, monkeypatch):
    from apps.webhooks import tasks

    def broker_down(*args, **kwargs):
        raise ConnectionError("broker down")

    monkeypatch.setattr(tasks.deliver_webhook, "apply_async", broker_down)
    delivery = emit().deliveries.get()
    services.enqueue([str(delivery.id)])  # what on_commit runs; must not raise
    delivery.refresh_from_db()
    assert delivery.enqueued_at is None


def test_history_is_pruned_after_the_window_but_pending_deliveries_are_kept(endpoint, emit):
    from apps.webhooks.models import Event

    old_done, old_pending, recent = emit(), emit(), emit()
    Event.objects.filter(pk__in=[old_done.pk, old_pending.pk]).update(created_at=timezone.now() - timedelta(days=31))
    Delivery.objects.filter(event=old_done).update(status=DeliveryStatus.SUCCEEDED)
    assert upkeep.history_prune() == 1
    assert set(Event.objects.values_list("pk", flat=True)) == {old_pending.pk, recent.pk}
