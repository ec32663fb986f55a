"""The outcomes of a batch's messages are committed a window at a time (marks.py), never more than a
window of messages out unmarked; after a crash, recovery makes the lowest records of each batch left
`claimed`, as many as the window written in its tag, `uncertain`, and puts the rest back. (The same
bound under a real SIGKILL is test_workers.py's.)"""

import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.publishing.newsletter import marks
from apps.publishing.newsletter.editions import recover
from apps.publishing.newsletter.message import UNSUBSCRIBE_MARK
from apps.publishing.newsletter.models import Delivery, DeliveryState, Edition
from apps.publishing.newsletter.sending import Sender
from tests.factories import NewsletterChannelFactory
from tests.publishing.newsletter.conftest import subscribe
from tests.publishing.newsletter.test_sending import publish

pytestmark = pytest.mark.django_db


def test_a_batch_tag_carries_its_window_and_a_tag_without_one_had_a_window_of_one():
    tag = marks.batch_tag(7)

    assert len(tag) == Delivery._meta.get_field("batch").max_length
    assert marks.window_of(tag) == 7
    assert marks.window_of(marks.batch_tag()) == marks.WINDOW
    assert marks.batch_tag() != marks.batch_tag()
    assert marks.window_of("0f" * 16) == marks.LEGACY_WINDOW == 1


def test_the_outcomes_are_committed_a_window_at_a_time_and_never_more_than_a_window_waits(
    smtp_server, monkeypatch, settings
):
    settings.NEWSLETTER_BATCH_SIZE = 100
    channel = NewsletterChannelFactory()
    subscribe(channel, 100)
    committed_before: list[int] = []
    send_one = Sender._send_one

    def counting(self, connection, recipient):
        committed_before.append(Delivery.objects.filter(edition=self.edition, state=DeliveryState.SENT).count())
        return send_one(self, connection, recipient)

    monkeypatch.setattr(Sender, "_send_one", counting)

    post = publish(channel)

    window = marks.WINDOW
    # Message i goes out after the outcomes of every whole window before it, and no others.
    assert committed_before == [i // window * window for i in range(100)]
    assert Edition.objects.get(post_id=post.pk).recipients()["sent"] == 100
    assert len(smtp_server.received) == 100


def _left_claimed(channel, batches: dict[str, int]) -> tuple[Edition, dict[str, list[int]]]:
    """An edition whose records a dead sender left `claimed`: `count` records under each tag, in id
    order, batch after batch."""
    subscribers = subscribe(channel, sum(batches.values()))
    edition = Edition.objects.create(post_id=1, channel=channel, job_id=1, subject="S", html="", text="")
    records = Delivery.objects.bulk_create(Delivery(edition=edition, subscriber=person) for person in subscribers)
    ids: dict[str, list[int]] = {}
    start = 0
    for tag, count in batches.items():
        ids[tag] = [record.pk for record in records[start : start + count]]
        Delivery.objects.filter(pk__in=ids[tag]).update(state=DeliveryState.CLAIMED, batch=tag)
        start += count
    return edition, ids


def test_recovery_makes_the_lowest_records_of_each_batch_uncertain_as_many_as_its_window_and_puts_back_the_rest():
    wide, narrow, legacy = marks.batch_tag(5), marks.batch_tag(2), "ab" * 16
    edition, ids = _left_claimed(NewsletterChannelFactory(), {wide: 8, narrow: 1, legacy: 3})
    # A record its sender marked before dying is settled, whatever its batch says.
    Delivery.objects.filter(pk=ids[wide][0]).update(state=DeliveryState.SENT, batch="")

    assert recover(edition.pk) == 5 + 1 + 1

    states = dict(Delivery.objects.filter(edition=edition).values_list("id", "state"))
    uncertain = {record for record, state in states.items() if state == DeliveryState.UNCERTAIN}
    assert uncertain == {*ids[wide][1:6], ids[narrow][0], ids[legacy][0]}
    assert {record for record, state in states.items() if state == DeliveryState.PENDING} == {
        *ids[wide][6:],
        *ids[legacy][1:],
    }
    assert not Delivery.objects.filter(edition=edition).exclude(batch="").exists()


def test_a_lost_batch_commits_what_it_still_holds_and_says_so(smtp_server):
    tag = marks.batch_tag(3)
    edition, ids = _left_claimed(NewsletterChannelFactory(), {tag: 3})
    recover(edition.pk)  # as a job that took the lease over would
    Delivery.objects.filter(pk=ids[tag][2]).update(state=DeliveryState.CLAIMED, batch=tag)
    pending = marks.Marks(edition_id=edition.pk, batch=tag, window=3)
    for record in ids[tag]:
        pending.add(record, DeliveryState.SENT, message_id=f"<{record}@test>", attempts=1)

    with pytest.raises(marks.Lost, match="no longer holds 2"):
        pending.commit()

    assert Delivery.objects.get(pk=ids[tag][2]).state == DeliveryState.SENT
    edition.refresh_from_db()
    assert edition.sent == 1


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the one-statement claim and marks are PostgreSQL's")
def test_on_postgresql_a_batch_takes_one_statement_to_claim_one_a_window_to_mark_and_one_to_release(
    smtp_server, settings
):
    settings.NEWSLETTER_BATCH_SIZE = 100
    channel = NewsletterChannelFactory()
    edition = Edition.objects.create(
        post_id=1, channel=channel, job_id=1, subject="S", html=f"<p>{UNSUBSCRIBE_MARK}</p>", text=UNSUBSCRIBE_MARK
    )
    Delivery.objects.bulk_create(Delivery(edition=edition, subscriber=person) for person in subscribe(channel, 200))

    sender = Sender(edition, deadline=time.monotonic() + 60)
    with CaptureQueriesContext(connection) as statements:
        sender.run()

    # Each batch: its claim (which reads its recipients too), their suppressions, one statement per
    # window (records and counters), its release; then the claim that finds nothing left.
    per_batch = 1 + 1 + 100 // marks.WINDOW + 1
    assert len(statements) == 2 * per_batch + 1
    assert not [sql for sql in (query["sql"] for query in statements) if sql.split()[0] in {"BEGIN", "SAVEPOINT"}]
    edition.refresh_from_db()
    assert (edition.sent, Delivery.objects.filter(edition=edition, state=DeliveryState.SENT).count()) == (200, 200)
    assert smtp_server.count_by_address() == {f"reader{n}@example.com": 1 for n in range(200)}
