"""Mailing an edition through the publishing pipeline to a real SMTP server (smtp_server.py): each
confirmed subscriber once, refusals and retries, the suppression list, a message whose fate is
unknown, a provider through django-anymail, pacing, and the publication's `recipients`."""

import time

import pytest
import requests
from anymail.backends.test import EmailBackend as AnymailTestBackend
from anymail.exceptions import AnymailRequestsAPIError
from anymail.message import AnymailRecipientStatus
from django.core import mail
from django.db.models import F

from apps.core.destinations import JobContext, PublishError
from apps.posts.editor_status import post_publish_now, post_set_status
from apps.posts.models import Post
from apps.posts.services import post_create, post_update_content
from apps.publishing.models import PublicationJob
from apps.publishing.newsletter import editions
from apps.publishing.newsletter.editions import edition_send_uncertain
from apps.publishing.newsletter.models import Delivery, Edition, Subscriber, SuppressionReason
from apps.publishing.newsletter.sending import NewsletterPublisher
from apps.publishing.newsletter.services import suppress
from apps.publishing.selectors import latest_publications
from apps.publishing.services import channel_run
from tests.conftest import free_port, wait_until
from tests.factories import (
    ApiKeyFactory,
    ChannelFactory,
    NewsletterChannelFactory,
    PostFactory,
    PublicationJobFactory,
    SubscriberFactory,
    UserFactory,
)
from tests.publishing.newsletter.conftest import subscribe

pytestmark = pytest.mark.django_db


@pytest.fixture
def newsletter():
    return NewsletterChannelFactory(title="Field Notes")


def publish(channel, title: str = "Issue one", body: str = "Hello, *readers*.") -> Post:
    post = post_create(channel=channel, title=title, body=body)
    post_publish_now(post_id=post.pk)
    channel_run(channel.pk)
    return post


def edition_of(post) -> Edition:
    return Edition.objects.get(post_id=post.pk)


def states(post) -> dict[str, str]:
    """Each recipient's address and the state of its delivery record."""
    records = Delivery.objects.filter(edition__post_id=post.pk).select_related("subscriber")
    return {record.subscriber.email if record.subscriber else "erased": record.state for record in records}


def test_a_thousand_subscribers_receive_exactly_a_thousand_messages_each_address_once(
    smtp_server, newsletter, emitted, django_assert_max_num_queries, settings
):
    subscribe(newsletter, 1000)

    post = publish(newsletter)

    assert smtp_server.count_by_address() == {f"reader{n}@example.com": 1 for n in range(1000)}
    # One connection per batch of NEWSLETTER_BATCH_SIZE (100), reused for its messages.
    assert smtp_server.connections() == 1000 // settings.NEWSLETTER_BATCH_SIZE
    post.refresh_from_db()
    assert post.publication_status == "published"
    assert [body["data"]["post"]["id"] for body in emitted("post.published")] == [post.pk]
    edition = edition_of(post)
    assert edition.finished_at is not None
    assert edition.recipients() == {
        "total": 1000,
        "pending": 0,
        "sent": 1000,
        "failed": 0,
        "suppressed": 0,
        "uncertain": 0,
    }
    job = PublicationJob.objects.get(post_id=post.pk)
    assert (job.state, job.reference, job.url) == ("succeeded", f"edition:{edition.pk}", newsletter.post_url(post.slug))
    # Each record holds the Message-ID of what the server received.
    received_ids = {item.headers["Message-ID"] for item in smtp_server.received}
    assert set(Delivery.objects.values_list("message_id", flat=True)) == received_ids
    assert len(received_ids) == 1000


def test_each_recipient_gets_the_edition_with_an_unsubscribe_link_of_their_own(smtp_server, newsletter):
    first, second = subscribe(newsletter, 2)

    publish(newsletter, title="Spring issue")

    [to_first], [to_second] = smtp_server.messages_to(first.email), smtp_server.messages_to(second.email)
    assert to_first["Subject"] == to_second["Subject"] == "Spring issue"
    assert to_first.get_content_type() == "multipart/alternative"
    assert [part.get_content_type() for part in to_first.iter_parts()] == ["text/plain", "text/html"]
    assert first.token in to_first["List-Unsubscribe"] and second.token in to_second["List-Unsubscribe"]
    assert first.token not in to_second.as_string()
    assert to_first["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"


def test_an_address_the_server_refuses_for_good_fails_and_is_suppressed_and_the_rest_are_sent(smtp_server, newsletter):
    subscribe(newsletter, 5)
    smtp_server.refuse("reader2@example.com", 550)

    post = publish(newsletter)

    assert set(smtp_server.count_by_address()) == {f"reader{n}@example.com" for n in (0, 1, 3, 4)}
    assert states(post)["reader2@example.com"] == "failed"
    record = Delivery.objects.get(subscriber__email="reader2@example.com")
    assert record.error.startswith("550") and "No such mailbox" in record.error
    [suppression] = newsletter.account.suppressions.all()
    assert (suppression.reason, suppression.channel_id) == (SuppressionReason.BOUNCE, None)
    assert "No such mailbox" in suppression.detail
    post.refresh_from_db()
    assert post.publication_status == "published"
    assert edition_of(post).recipients()["failed"] == 1

    # The next edition does not even try the bounced address.
    publish(newsletter, title="Issue two")
    assert smtp_server.refused == [("reader2@example.com", 550)]


def test_a_message_the_server_refuses_for_its_content_fails_without_suppressing_anyone(smtp_server, newsletter):
    subscribe(newsletter, 3)
    smtp_server.refuse_message("554 5.7.1 Message rejected as spam")

    post = publish(newsletter)

    assert set(states(post).values()) == {"failed"}
    assert "5.7.1" in Delivery.objects.first().error
    assert not newsletter.account.suppressions.exists()


def test_a_temporary_refusal_is_retried_later_and_then_sent(smtp_server, newsletter, settings):
    settings.PUBLISH_RETRY_DELAYS = [1, 1, 1, 1]
    subscribe(newsletter, 3)
    smtp_server.refuse("reader1@example.com", 451, times=1)

    post = publish(newsletter)

    # The other two went out; the greylisted one waits for its retry, and so does the edition.
    assert set(smtp_server.count_by_address()) == {"reader0@example.com", "reader2@example.com"}
    assert states(post)["reader1@example.com"] == "pending"
    post.refresh_from_db()
    assert post.publication_status != "published"
    job = PublicationJob.objects.get(post_id=post.pk)
    assert (job.state, job.attempts) == ("queued", 0)
    assert edition_of(post).recipients() == {
        "total": 3,
        "pending": 1,
        "sent": 2,
        "failed": 0,
        "suppressed": 0,
        "uncertain": 0,
    }

    time.sleep(1.1)
    channel_run(newsletter.pk)

    assert smtp_server.count_by_address() == {f"reader{n}@example.com": 1 for n in range(3)}
    post.refresh_from_db()
    assert post.publication_status == "published"
    assert Delivery.objects.get(subscriber__email="reader1@example.com").attempts == 2


def test_an_address_refused_temporarily_on_every_attempt_fails_after_the_schedule_without_being_suppressed(
    smtp_server, newsletter, settings
):
    settings.PUBLISH_RETRY_DELAYS = [0, 0]
    subscribe(newsletter, 2)
    smtp_server.refuse("reader0@example.com", 451)

    post = publish(newsletter)

    assert [address for address, _ in smtp_server.refused] == ["reader0@example.com"] * 3
    record = Delivery.objects.get(subscriber__email="reader0@example.com")
    assert (record.state, record.attempts) == ("failed", 3)
    assert record.error.endswith("Gave up after 3 attempts.")
    assert not newsletter.account.suppressions.exists()
    post.refresh_from_db()
    assert post.publication_status == "published"


def test_unconfirmed_unsubscribed_bounced_and_complained_addresses_receive_nothing(smtp_server, newsletter):
    account = newsletter.account
    SubscriberFactory(channel=newsletter, email="unconfirmed@example.com", status="unconfirmed")
    SubscriberFactory(channel=newsletter, email="left@example.com", status="unsubscribed")
    suppress(account_id=account.pk, channel=newsletter, email="left@example.com", reason="unsubscribed")
    for email, reason in (("bounced@example.com", "bounce"), ("complained@example.com", "complaint")):
        SubscriberFactory(channel=newsletter, email=email)
        suppress(account_id=account.pk, email=email, reason=reason)
    # Unsubscribed from another newsletter of the account: still on this one.
    SubscriberFactory(channel=newsletter, email="elsewhere@example.com")
    suppress(
        account_id=account.pk,
        channel=NewsletterChannelFactory(account=account),
        email="elsewhere@example.com",
        reason="unsubscribed",
    )
    SubscriberFactory(channel=newsletter, email="reader@example.com")
    # A complaint in another account changes nothing here.
    suppress(account_id=NewsletterChannelFactory().account_id, email="reader@example.com", reason="complaint")

    post = publish(newsletter)

    assert smtp_server.count_by_address() == {"elsewhere@example.com": 1, "reader@example.com": 1}
    assert edition_of(post).recipients()["total"] == 2


def test_people_who_leave_after_the_send_started_are_skipped_as_suppressed(smtp_server, newsletter):
    subscribe(newsletter, 4)
    post = post_create(channel=newsletter, title="Issue", body="Hi.")
    job = JobContext(job_id=1, post_id=post.pk, action="publish", title="Issue", previous_path="", deadline=0)
    document = post_subject_document(post)
    with pytest.raises(Exception, match="0 of 4 sent"):
        NewsletterPublisher(newsletter.pk).publish(job, document)  # frozen, its deadline already past
    Subscriber.objects.get(email="reader0@example.com").delete()
    Subscriber.objects.filter(email="reader1@example.com").update(status="unsubscribed")
    suppress(account_id=newsletter.account_id, email="reader2@example.com", reason="complaint")

    post_publish_now(post_id=post.pk)
    channel_run(newsletter.pk)

    assert smtp_server.count_by_address() == {"reader3@example.com": 1}
    assert edition_of(post).recipients() == {
        "total": 4,
        "pending": 0,
        "sent": 1,
        "failed": 0,
        "suppressed": 3,
        "uncertain": 0,
    }
    assert states(post) == {
        "erased": "suppressed",
        "reader1@example.com": "suppressed",
        "reader2@example.com": "suppressed",
        "reader3@example.com": "sent",
    }


def post_subject_document(post):
    from apps.core.destinations import subject

    return subject().document(post_id=post.pk, action="publish", published_at=None)


def test_a_sent_edition_is_never_sent_again_whatever_happens_to_its_post(smtp_server, newsletter):
    subscribe(newsletter, 2)
    post = publish(newsletter)
    assert len(smtp_server.received) == 2

    post_update_content(post=Post.objects.get(pk=post.pk), body="A correction.")
    channel_run(newsletter.pk)
    post_set_status(post_id=post.pk, status="draft")
    channel_run(newsletter.pk)
    post_publish_now(post_id=post.pk)
    channel_run(newsletter.pk)

    assert len(smtp_server.received) == 2
    assert list(PublicationJob.objects.filter(post_id=post.pk).order_by("id").values_list("action", "state")) == [
        ("publish", "succeeded"),
        ("update", "succeeded"),
        ("unpublish", "succeeded"),
        ("publish", "succeeded"),
    ]
    assert Edition.objects.filter(post_id=post.pk).count() == 1


def test_a_message_whose_fate_is_unknown_is_uncertain_and_never_sent_again_by_itself(smtp_server, newsletter, settings):
    settings.EMAIL_TIMEOUT = 1
    subscribe(newsletter, 4)
    smtp_server.hang_for("reader1@example.com")

    post = publish(newsletter)
    # The sender took up the rest again shortly, on a new connection.
    wait_until(lambda: edition_of(post).finished_at, timeout=10, action=lambda: channel_run(newsletter.pk))

    assert set(smtp_server.count_by_address()) == {"reader0@example.com", "reader2@example.com", "reader3@example.com"}
    record = Delivery.objects.get(subscriber__email="reader1@example.com")
    assert record.state == "uncertain" and "may or may not have arrived" in record.error
    post.refresh_from_db()
    assert post.publication_status == "published"
    assert edition_of(post).recipients() == {
        "total": 4,
        "pending": 0,
        "sent": 3,
        "failed": 0,
        "suppressed": 0,
        "uncertain": 1,
    }

    # The account decides to send it anyway: only that person is mailed, the post stays published.
    smtp_server.stop_hanging()
    assert edition_send_uncertain(edition=edition_of(post)) == 1
    channel_run(newsletter.pk)

    assert smtp_server.count_by_address() == {f"reader{n}@example.com": 1 for n in range(4)}
    assert edition_of(post).recipients()["sent"] == 4
    post.refresh_from_db()
    assert post.publication_status == "published"
    assert edition_send_uncertain(edition=edition_of(post)) == 0


def test_a_mail_server_that_cannot_be_reached_retries_the_job_and_makes_nobody_uncertain(
    smtp_server, newsletter, settings
):
    subscribe(newsletter, 3)
    settings.EMAIL_PORT = free_port()  # nothing listens there

    post = publish(newsletter)

    job = PublicationJob.objects.get(post_id=post.pk)
    assert (job.state, job.attempts) == ("queued", 1)
    assert job.last_error.startswith("The mail server could not be reached")
    assert set(states(post).values()) == {"pending"}

    settings.EMAIL_PORT = smtp_server.port
    PublicationJob.objects.filter(pk=job.pk).update(next_attempt_at=job.created_at)  # its retry is due
    channel_run(newsletter.pk)

    assert smtp_server.count_by_address() == {f"reader{n}@example.com": 1 for n in range(3)}


def test_the_send_rate_paces_the_messages_of_a_channel(smtp_server, newsletter, settings):
    settings.NEWSLETTER_SEND_RATE = 20
    subscribe(newsletter, 11)

    started = time.monotonic()
    publish(newsletter)

    assert len(smtp_server.received) == 11
    assert time.monotonic() - started >= 10 / 20


class ProviderBackend(AnymailTestBackend):
    """An e-mail provider through django-anymail (its test backend), which rejects, throttles or
    fails the addresses the test names, as providers' APIs answer."""

    answers: dict = {}

    def post_to_esp(self, payload, message):
        answer = self.answers.get(message.to[0].rpartition("<")[2].rstrip(">"))
        if answer == "rejected":
            rejected = AnymailRecipientStatus(None, "rejected")
            message.anymail_test_response = {
                "recipient_status": {email: rejected for email in payload.recipient_emails}
            }
        elif answer is not None:
            response = requests.Response()
            response.status_code, response.reason, response._content = answer, "Refused", b'{"error": "refused"}'
            message.anymail_test_response = AnymailRequestsAPIError(response=response, backend=self)
        return super().post_to_esp(payload, message)


def test_a_provider_through_anymail_gets_each_message_and_its_refusals_are_understood(newsletter, settings):
    settings.EMAIL_BACKEND = f"{__name__}.ProviderBackend"
    settings.PUBLISH_RETRY_DELAYS = [60]
    settings.NEWSLETTER_SEND_RATE = 0
    subscribe(newsletter, 5)
    ProviderBackend.answers = {
        "reader1@example.com": "rejected",
        "reader2@example.com": 429,
        "reader3@example.com": 400,
    }
    mail.outbox = []

    post = publish(newsletter)

    assert states(post) == {
        "reader0@example.com": "sent",
        "reader1@example.com": "failed",
        "reader2@example.com": "pending",
        "reader3@example.com": "failed",
        "reader4@example.com": "sent",
    }
    # The provider's own message ids are kept: its bounce and complaint events name them.
    sent = Delivery.objects.filter(state="sent").order_by("id")
    assert list(sent.values_list("message_id", flat=True)) == ["0", "4"]
    # A rejected address is suppressed; a refusal of the request (400) is not the address's fault.
    assert list(newsletter.account.suppressions.values_list("reason", flat=True)) == ["bounce"]


def test_check_says_which_mail_server_sends_and_whether_it_answers(smtp_server, newsletter, settings):
    subscribe(newsletter, 2)
    subscribe(newsletter, 1, status="unconfirmed", prefix="maybe")

    said = NewsletterPublisher(newsletter.pk).check()

    assert said.startswith(f"Connected to the mail server 127.0.0.1:{smtp_server.port}")
    assert "2 confirmed subscribers" in said
    settings.EMAIL_PORT = free_port()
    with pytest.raises(PublishError, match="could not be reached"):
        NewsletterPublisher(newsletter.pk).check()


def test_the_publication_shows_the_recipient_counts_as_the_send_goes_on(smtp_server, newsletter, client_for, settings):
    settings.PUBLISH_RETRY_DELAYS = [1, 1, 1, 1]
    api = client_for(ApiKeyFactory(user=UserFactory(account=newsletter.account)))
    subscribe(newsletter, 3)
    smtp_server.refuse("reader2@example.com", 451, times=1)
    git_post = post_create(channel=ChannelFactory(platform="git", account=newsletter.account), title="Elsewhere")
    post_publish_now(post_id=git_post.pk)
    url = f"/v1/channels/{newsletter.pk}/posts/{{}}"

    post = publish(newsletter)
    during = api.get(url.format(post.pk)).json()["data"]["publication"]
    time.sleep(1.1)
    channel_run(newsletter.pk)
    after = api.get(url.format(post.pk)).json()["data"]["publication"]

    assert during["recipients"] == {"total": 3, "pending": 1, "sent": 2, "failed": 0, "suppressed": 0, "uncertain": 0}
    assert after["recipients"] == {"total": 3, "pending": 0, "sent": 3, "failed": 0, "suppressed": 0, "uncertain": 0}
    assert after["state"] == "succeeded" and after["reference"].startswith("edition:")
    git = client_for(ApiKeyFactory(user=UserFactory(account=newsletter.account)))
    assert git.get(f"/v1/posts/{git_post.pk}").json()["data"]["publication"]["recipients"] is None


def test_a_page_of_posts_reads_its_publications_in_two_queries_however_many_editions_and_recipients(
    newsletter, django_assert_num_queries
):
    posts = PostFactory.create_batch(4, channel=newsletter)
    for number, post in enumerate(posts):
        PublicationJobFactory(channel=newsletter, post_id=post.pk)
        Edition.objects.create(
            post_id=post.pk,
            channel=newsletter,
            job_id=1,
            subject="S",
            html="",
            text="",
            total=1000 * number,
            sent=10 * number,
            uncertain=number,
        )
    git_post = PostFactory(channel=ChannelFactory(platform="git"))
    PublicationJobFactory(channel=git_post.channel, post_id=git_post.pk)

    with django_assert_num_queries(2):
        latest_publications([posts[0].pk])
    with django_assert_num_queries(2):
        publications = latest_publications([*(post.pk for post in posts), git_post.pk])

    assert publications[posts[3].pk].recipients._asdict() == {
        "total": 3000,
        "pending": 2967,
        "sent": 30,
        "failed": 0,
        "suppressed": 0,
        "uncertain": 3,
    }
    assert publications[git_post.pk].recipients is None


def test_the_audience_is_frozen_chunk_by_chunk_without_the_suppressed(smtp_server, newsletter, monkeypatch):
    monkeypatch.setattr(editions, "FREEZE_CHUNK", 3)
    subscribe(newsletter, 10)
    SubscriberFactory(channel=newsletter, email="maybe@example.com", status="unconfirmed")
    for number in (1, 4, 8):
        suppress(account_id=newsletter.account_id, email=f"reader{number}@example.com", reason="bounce")

    post = publish(newsletter)

    expected = {f"reader{n}@example.com" for n in range(10)} - {
        "reader1@example.com",
        "reader4@example.com",
        "reader8@example.com",
    }
    assert set(states(post)) == expected == set(smtp_server.count_by_address())
    assert edition_of(post).recipients()["total"] == 7


def test_a_provider_that_cannot_be_reached_retries_the_job_and_makes_nobody_uncertain(newsletter, settings):
    settings.EMAIL_BACKEND = "anymail.backends.postmark.EmailBackend"
    settings.ANYMAIL = {"POSTMARK_SERVER_TOKEN": "token", "POSTMARK_API_URL": f"http://127.0.0.1:{free_port()}/"}
    settings.PUBLISH_RETRY_DELAYS = [60]
    settings.NEWSLETTER_SEND_RATE = 0
    subscribe(newsletter, 2)

    post = publish(newsletter)

    job = PublicationJob.objects.get(post_id=post.pk)
    assert (job.state, job.attempts) == ("queued", 1)
    assert job.last_error.startswith("The e-mail provider could not be reached")
    assert set(states(post).values()) == {"pending"}
    assert list(Delivery.objects.values_list("attempts", flat=True)) == [0, 0]


def test_a_change_of_an_editions_counts_alone_is_shown_at_once_by_the_cached_post(smtp_server, newsletter, client_for):
    api = client_for(ApiKeyFactory(user=UserFactory(account=newsletter.account)))
    subscribe(newsletter, 2)
    post = publish(newsletter)
    url = f"/v1/channels/{newsletter.pk}/posts/{post.pk}"
    assert api.get(url).json()["data"]["publication"]["recipients"]["failed"] == 0

    # A bounce reported later by the provider (tracking.py) moves a recipient from sent to failed.
    Edition.objects.filter(post_id=post.pk).update(sent=F("sent") - 1, failed=F("failed") + 1)

    assert api.get(url).json()["data"]["publication"]["recipients"] == {
        "total": 2,
        "pending": 0,
        "sent": 1,
        "failed": 1,
        "suppressed": 0,
        "uncertain": 0,
    }
