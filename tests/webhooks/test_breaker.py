"""Failing endpoints held back (the circuit breaker), their batches capped, and disabled after
sustained failure: attempts made in this process against a real receiver on 127.0.0.1."""

import uuid
from datetime import timedelta

import pytest
from django.core import mail
from django.db import transaction
from django.utils import timezone

from apps.users.models import Role
from apps.webhooks import services, transport
from apps.webhooks.models import Delivery, DeliveryStatus, WebhookEndpoint
from apps.webhooks.services import deliveries_attempt, deliveries_sweep, endpoint_save, event_emit
from tests.conftest import free_port
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _breaker(settings):
    settings.WEBHOOK_BREAKER_THRESHOLD = 3
    settings.WEBHOOK_RETRY_DELAYS = [60, 300, 1800, 7200]
    settings.WEBHOOK_BREAKER_PROBE_DELAYS = [60, 300, 1800, 7200]


@pytest.fixture
def handed_over(monkeypatch):
    """Delivery ids the outbox hands to the broker, in order (the test makes the attempts)."""
    sent: list[str] = []
    monkeypatch.setattr(services, "enqueue", lambda delivery_ids, manual=False: sent.extend(delivery_ids))
    return sent


@pytest.fixture
def emit_many(account, endpoint, handed_over):
    def do(n: int) -> list[str]:
        with transaction.atomic():
            events = [event_emit(account=account, kind="post.published", data={"n": i}) for i in range(n)]
        return [str(event.deliveries.get().pk) for event in events]

    return do


def fresh(endpoint: WebhookEndpoint) -> WebhookEndpoint:
    return WebhookEndpoint.objects.get(pk=endpoint.pk)


def due_now(*delivery_ids: str) -> None:
    Delivery.objects.filter(pk__in=delivery_ids).update(next_attempt_at=timezone.now())


def probe_due(endpoint: WebhookEndpoint) -> None:
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(next_probe_at=timezone.now() - timedelta(seconds=1))


def test_the_breaker_opens_after_the_threshold_and_holds_the_rest_unattempted(endpoint, emit_many, receiver):
    receiver.default = (500, 0)
    ids = emit_many(6)
    before = timezone.now()
    attempts = deliveries_attempt(delivery_ids=ids)
    assert [str(a.delivery_id) for a in attempts] == ids[:3]
    endpoint = fresh(endpoint)
    assert endpoint.held_back and endpoint.consecutive_failures == 3
    assert endpoint.failing_since >= before
    assert timedelta(seconds=59) < endpoint.next_probe_at - before < timedelta(seconds=70)
    held = Delivery.objects.filter(pk__in=ids[3:])
    assert all(d.status == DeliveryStatus.PENDING and d.attempts == 0 and d.locked_until is None for d in held)
    assert len(receiver.requests) == 3


def test_the_failures_that_open_the_breaker_count_against_their_deliveries_and_the_held_ones_keep_theirs(
    endpoint, emit_many, receiver
):
    receiver.default = (500, 0)
    ids = emit_many(5)
    deliveries_attempt(delivery_ids=ids)
    assert fresh(endpoint).held_back
    for delivery in Delivery.objects.filter(pk__in=ids[:3]):
        assert delivery.status == DeliveryStatus.PENDING and delivery.attempts == 1
        [attempt] = delivery.attempt_log.all()
        assert attempt.counted and attempt.response_status == 500
    # The breaker's work: the rest were not attempted, so they have all five still.
    assert [d.attempts for d in Delivery.objects.filter(pk__in=ids[3:])] == [0, 0]


def test_failures_that_leave_the_endpoint_taking_deliveries_count_against_the_schedule(endpoint, emit_many, receiver):
    receiver.default = (500, 0)
    [delivery_id] = emit_many(1)
    before = timezone.now()
    deliveries_attempt(delivery_ids=[delivery_id])
    delivery = Delivery.objects.get(pk=delivery_id)
    assert not fresh(endpoint).held_back
    assert delivery.attempts == 1 and delivery.attempt_log.get().counted
    assert timedelta(seconds=59) < delivery.next_attempt_at - before < timedelta(seconds=70)


def test_held_deliveries_are_neither_attempted_nor_handed_over_until_the_probe_is_due(
    endpoint, emit_many, receiver, handed_over
):
    receiver.default = (500, 0)
    ids = emit_many(5)
    deliveries_attempt(delivery_ids=ids)
    handed_over.clear()
    assert deliveries_attempt(delivery_ids=ids[3:]) == []  # a message that was already at the broker
    assert deliveries_sweep() == 0
    more = emit_many(1)  # an event while held back: written, not handed over
    assert handed_over == []
    assert Delivery.objects.get(pk=more[0]).enqueued_at is None
    assert len(receiver.requests) == 3


def test_one_probe_goes_out_when_its_back_off_has_passed(endpoint, emit_many, receiver, handed_over):
    receiver.default = (500, 0)
    ids = emit_many(5)
    deliveries_attempt(delivery_ids=ids)
    probe_due(endpoint)
    handed_over.clear()
    assert deliveries_sweep() == 1
    assert handed_over == [ids[0]]  # the oldest waiting delivery
    # Every waiting delivery reaches a worker (a message from before), yet only one goes out.
    attempts = deliveries_attempt(delivery_ids=ids[1:] + ids[:1])
    assert [str(a.delivery_id) for a in attempts] == [ids[0]]
    endpoint = fresh(endpoint)
    # It failed: held back again, for the next, longer back-off.
    assert endpoint.consecutive_failures == 4
    assert timedelta(seconds=290) < endpoint.next_probe_at - timezone.now() <= timedelta(seconds=300)
    # A failed probe counts against its delivery; the next probe is the same delivery.
    assert Delivery.objects.get(pk=ids[0]).attempts == 2
    probe_due(endpoint)
    handed_over.clear()
    deliveries_sweep()
    assert handed_over == [ids[0]]


def seconds_to_probe(endpoint: WebhookEndpoint) -> float:
    return round((fresh(endpoint).next_probe_at - timezone.now()).total_seconds(), -1)


def test_the_probes_back_off_on_the_breakers_own_delays_not_the_retry_delays(
    endpoint, emit_many, receiver, handed_over, settings
):
    settings.WEBHOOK_RETRY_DELAYS = [1, 1, 1, 1]
    settings.WEBHOOK_BREAKER_PROBE_DELAYS = [60, 300, 900]
    receiver.default = (500, 0)
    ids = emit_many(8)
    deliveries_attempt(delivery_ids=ids)
    waits = [seconds_to_probe(endpoint)]
    # Their retry times come, and still nothing is handed over before the probe is due.
    due_now(*ids)
    handed_over.clear()
    assert deliveries_sweep() == 0 and handed_over == []
    for _ in range(4):
        probe_due(endpoint)
        deliveries_sweep()
        deliveries_attempt(delivery_ids=handed_over[-1:])
        waits.append(seconds_to_probe(endpoint))
    # From the opening, then after each failed probe; the last delay repeats.
    assert waits == [60, 300, 900, 900, 900]
    assert fresh(endpoint).failed_probes == 4
    assert handed_over == [ids[0]] * 4


def test_a_probe_fails_its_delivery_at_its_fifth_attempt_and_the_next_oldest_becomes_the_probe(
    endpoint, emit_many, receiver, handed_over
):
    receiver.default = (500, 0)
    ids = emit_many(4)
    deliveries_attempt(delivery_ids=ids)  # three fail, and the breaker opens
    probes = []
    for _ in range(5):
        probe_due(endpoint)
        handed_over.clear()
        deliveries_sweep()
        probes.extend(handed_over)
        deliveries_attempt(delivery_ids=handed_over)
    assert probes == [ids[0]] * 4 + [ids[1]]
    first = Delivery.objects.get(pk=ids[0])
    assert first.status == DeliveryStatus.FAILED and first.attempts == 5
    assert [r.headers["X-Service-Delivery"] for r in receiver.requests].count(ids[0]) == 5
    rest = Delivery.objects.filter(pk__in=ids[1:])
    assert {str(d.pk): (d.status, d.attempts) for d in rest} == {
        ids[1]: (DeliveryStatus.PENDING, 2),
        ids[2]: (DeliveryStatus.PENDING, 1),
        ids[3]: (DeliveryStatus.PENDING, 0),
    }


@pytest.mark.parametrize("dead", ["answers 500", "refuses connections"])
def test_a_lone_delivery_to_an_endpoint_that_always_fails_is_attempted_exactly_five_times_and_failed(
    endpoint, emit_many, receiver, handed_over, settings, dead
):
    settings.WEBHOOK_BREAKER_THRESHOLD = 5
    settings.WEBHOOK_RETRY_DELAYS = [1, 1, 1, 1]
    receiver.default = (500, 0)
    if dead == "refuses connections":
        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(url=f"http://127.0.0.1:{free_port()}/hook")
    [delivery_id] = emit_many(1)
    made = []
    for _ in range(6):
        due_now(delivery_id)
        probe_due(endpoint)
        deliveries_sweep()
        made += deliveries_attempt(delivery_ids=[delivery_id])
    delivery = Delivery.objects.get(pk=delivery_id)
    assert len(made) == 5 and delivery.attempt_log.count() == 5
    assert delivery.status == DeliveryStatus.FAILED and delivery.attempts == 5
    if dead == "answers 500":
        assert [r.headers["X-Service-Delivery"] for r in receiver.requests] == [delivery_id] * 5


def test_an_attempt_in_flight_when_the_breaker_opens_is_no_probe_and_leaves_the_probes_time(
    endpoint, emit_many, receiver, monkeypatch
):
    receiver.default = (500, 0)
    [in_flight] = emit_many(1)
    first_probe_at = timezone.now() + timedelta(seconds=60)
    send = transport.send

    def send_while_another_batch_opens_the_breaker(**request):
        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
            consecutive_failures=3, failing_since=timezone.now(), next_probe_at=first_probe_at
        )
        return send(**request)

    monkeypatch.setattr(transport, "send", send_while_another_batch_opens_the_breaker)
    deliveries_attempt(delivery_ids=[in_flight])
    endpoint = fresh(endpoint)
    assert endpoint.consecutive_failures == 4
    assert (endpoint.next_probe_at, endpoint.failed_probes) == (first_probe_at, 0)
    assert Delivery.objects.get(pk=in_flight).attempts == 1  # counted all the same


def test_a_failing_manual_retry_is_no_probe_and_counts_for_nothing(endpoint, emit_many, receiver):
    receiver.default = (500, 0)
    ids = emit_many(4)
    deliveries_attempt(delivery_ids=ids)
    opened = fresh(endpoint)
    [attempt] = deliveries_attempt(delivery_ids=[ids[3]], manual=True)
    assert not attempt.counted and Delivery.objects.get(pk=ids[3]).attempts == 0
    endpoint = fresh(endpoint)
    assert endpoint.consecutive_failures == 4
    assert (endpoint.next_probe_at, endpoint.failed_probes) == (opened.next_probe_at, 0)


def test_a_message_without_the_oldest_waiting_delivery_sends_no_probe(endpoint, emit_many, receiver, handed_over):
    receiver.default = (500, 0)
    ids = emit_many(5)
    deliveries_attempt(delivery_ids=ids)
    probe_due(endpoint)
    assert deliveries_attempt(delivery_ids=ids[3:]) == []
    assert fresh(endpoint).next_probe_at <= timezone.now()  # still due: the sweeper sends it


def test_the_probe_is_the_oldest_delivery_even_while_its_retry_is_not_due(
    endpoint, emit_many, receiver, handed_over, settings
):
    settings.WEBHOOK_BREAKER_THRESHOLD = 2
    receiver.default = (500, 0)
    first, second, third = emit_many(3)
    deliveries_attempt(delivery_ids=[first])  # one failure: the endpoint still takes deliveries
    assert Delivery.objects.get(pk=first).next_attempt_at > timezone.now()
    deliveries_attempt(delivery_ids=[second, third])  # the second failure opens the breaker
    probe_due(endpoint)
    receiver.default = (200, 0)
    handed_over.clear()
    deliveries_sweep()
    assert handed_over == [first]
    deliveries_attempt(delivery_ids=handed_over)
    # Closed: the second and third follow it, in order, and nothing waits for a retry time.
    assert handed_over[1:] == [second, third]
    deliveries_attempt(delivery_ids=handed_over[1:])
    assert [r.headers["X-Service-Delivery"] for r in receiver.requests[-3:]] == [first, second, third]
    # The third was held when the second opened the breaker: its one attempt is the one that succeeded.
    attempts = {str(d.pk): d.attempts for d in Delivery.objects.all()}
    assert attempts == {first: 2, second: 2, third: 1}


def test_a_successful_probe_closes_the_breaker_and_releases_the_backlog_in_order(
    endpoint, emit_many, receiver, handed_over
):
    receiver.default = (500, 0)
    ids = emit_many(7)
    deliveries_attempt(delivery_ids=ids)
    probe_due(endpoint)
    receiver.default = (200, 0)
    handed_over.clear()
    deliveries_sweep()
    [probe] = handed_over
    handed_over.clear()
    [attempt] = deliveries_attempt(delivery_ids=[probe])
    assert attempt.succeeded
    endpoint = fresh(endpoint)
    assert (endpoint.consecutive_failures, endpoint.failing_since, endpoint.next_probe_at) == (0, None, None)
    assert handed_over == ids[1:]
    # Sent now, in order, with the ids they always had; the held ones kept all their attempts.
    assert len(deliveries_attempt(delivery_ids=handed_over)) == 6
    sent = [r.headers["X-Service-Delivery"] for r in receiver.requests[-7:]]
    assert sent == ids
    attempts = dict(Delivery.objects.values_list("pk", "attempts"))
    assert [attempts[uuid.UUID(pk)] for pk in ids] == [2, 2, 2, 1, 1, 1, 1]
    assert not Delivery.objects.filter(status=DeliveryStatus.FAILED).exists()


def test_a_manual_retry_is_not_held_back_and_its_success_closes_the_breaker(endpoint, emit_many, receiver):
    receiver.default = (500, 0)
    ids = emit_many(4)
    deliveries_attempt(delivery_ids=ids)
    receiver.default = (200, 0)
    [attempt] = deliveries_attempt(delivery_ids=[ids[3]], manual=True)
    assert attempt.succeeded
    assert not fresh(endpoint).held_back


def test_an_endpoint_has_at_most_its_concurrency_in_batches_in_flight(endpoint, emit_many, receiver, settings):
    settings.WEBHOOK_ENDPOINT_CONCURRENCY = 2
    first, second, waiting = emit_many(3)
    soon = timezone.now() + timedelta(seconds=20)
    # Two batches of other workers hold the endpoint (each lease is one batch).
    Delivery.objects.filter(pk=first).update(locked_until=soon)
    Delivery.objects.filter(pk=second).update(locked_until=soon + timedelta(seconds=1))
    assert deliveries_attempt(delivery_ids=[waiting]) == []
    assert Delivery.objects.get(pk=waiting).enqueued_at is None
    assert receiver.requests == []


def test_a_batch_that_ends_hands_over_what_waited_for_its_endpoint(
    endpoint, emit_many, receiver, handed_over, settings
):
    settings.WEBHOOK_ENDPOINT_CONCURRENCY = 1
    first, waiting = emit_many(2)
    Delivery.objects.filter(pk=first).update(locked_until=timezone.now() + timedelta(seconds=20))
    deliveries_attempt(delivery_ids=[waiting])  # the endpoint is busy: it waits
    Delivery.objects.filter(pk=first).update(locked_until=None)
    handed_over.clear()
    assert len(deliveries_attempt(delivery_ids=[first])) == 1
    assert handed_over == [waiting]


def test_a_batch_stops_after_an_attempt_that_got_no_answer(endpoint, emit_many, receiver, settings, handed_over):
    settings.WEBHOOK_TIMEOUT = 1
    ids = emit_many(3)
    receiver.script = [(200, 2.5)]  # the first hangs past the timeout
    handed_over.clear()
    [attempt] = deliveries_attempt(delivery_ids=ids)
    assert "timed out" in attempt.error
    # The others were not sent behind it; back at the broker, unattempted.
    assert handed_over == ids[1:]
    assert all(d.attempts == 0 for d in Delivery.objects.filter(pk__in=ids[1:]))


def test_deliveries_held_back_longer_than_the_maximum_age_are_failed(
    endpoint, emit_many, receiver, handed_over, settings
):
    settings.WEBHOOK_MAX_AGE = timedelta(days=3)
    receiver.default = (500, 0)
    old, young, *_ = ids = emit_many(4)
    deliveries_attempt(delivery_ids=ids)
    Delivery.objects.filter(pk=old).update(created_at=timezone.now() - timedelta(days=3, minutes=1))
    Delivery.objects.filter(pk=young).update(created_at=timezone.now() - timedelta(days=2, hours=23))
    probe_due(endpoint)
    handed_over.clear()
    deliveries_sweep()
    expired = Delivery.objects.get(pk=old)
    assert expired.status == DeliveryStatus.FAILED and "WEBHOOK_MAX_AGE" in expired.last_error
    assert Delivery.objects.filter(status=DeliveryStatus.PENDING).count() == 3
    assert handed_over == [young]  # the probe moves on to the oldest still waiting


def test_the_maximum_age_spares_endpoints_that_take_deliveries_and_endpoints_paused_by_hand(
    endpoint, emit_many, receiver, handed_over, settings
):
    settings.WEBHOOK_MAX_AGE = timedelta(days=3)
    ids = emit_many(2)
    Delivery.objects.filter(pk__in=ids).update(created_at=timezone.now() - timedelta(days=4))
    deliveries_sweep()
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(enabled=False, consecutive_failures=3)
    deliveries_sweep()
    assert Delivery.objects.filter(status=DeliveryStatus.PENDING).count() == 2


@pytest.fixture
def account_admin(account):
    return UserFactory(account=account, role=Role.ADMIN, email="owner@hooked.example")


def test_an_endpoint_failing_for_the_whole_window_is_disabled_and_its_admins_told(
    endpoint, emit_many, receiver, settings, account_admin, django_capture_on_commit_callbacks
):
    settings.WEBHOOK_DISABLE_AFTER = timedelta(minutes=30)
    receiver.default = (500, 0)
    UserFactory(account=account_admin.account, role=Role.EDITOR)  # not told
    ids = emit_many(3)
    deliveries_attempt(delivery_ids=ids[:1])
    assert fresh(endpoint).enabled  # failing, not yet for long
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(failing_since=timezone.now() - timedelta(minutes=31))
    with django_capture_on_commit_callbacks(execute=True):
        deliveries_attempt(delivery_ids=ids[1:2])
    endpoint = fresh(endpoint)
    assert not endpoint.enabled
    assert "every attempt failed since" in endpoint.disabled_reason
    [message] = mail.outbox
    assert message.to == ["owner@hooked.example"]
    assert endpoint.url in message.subject and endpoint.disabled_reason in message.body
    # Nothing is lost: what was pending is failed, to be re-sent on request.
    assert set(Delivery.objects.filter(status=DeliveryStatus.FAILED).values_list("pk", flat=True).iterator()) == {
        d.pk for d in Delivery.objects.filter(pk__in=ids)
    }


def test_enabling_a_disabled_endpoint_clears_its_state_and_sends_nothing_by_itself(
    endpoint, emit_many, receiver, settings, handed_over, account_admin
):
    settings.WEBHOOK_DISABLE_AFTER = timedelta(seconds=1)
    receiver.default = (500, 0)
    ids = emit_many(2)
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(failing_since=timezone.now() - timedelta(minutes=1))
    deliveries_attempt(delivery_ids=ids[:1])
    assert not fresh(endpoint).enabled
    endpoint = endpoint_save(endpoint=fresh(endpoint), account=endpoint.account, url=endpoint.url, enabled=True)
    endpoint = fresh(endpoint)
    assert endpoint.enabled and endpoint.disabled_reason == ""
    assert (endpoint.consecutive_failures, endpoint.failing_since, endpoint.next_probe_at) == (0, None, None)
    handed_over.clear()
    due_now(*ids)
    assert deliveries_sweep() == 0
    assert handed_over == []
