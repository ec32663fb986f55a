"""The Mastodon destination: what a post's publication sends to the channel's instance, read back
from a local fake of Mastodon (tests/publishing/mastodon_fake.py), which counts a status's text as
Mastodon does and refuses what Mastodon refuses. Each test drives the pipeline as the application
does: a post's change writes a job, `channel_run` carries it out against the fake."""

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from apps.posts.editor_status import post_publish_now, post_set_status
from apps.posts.models import Post
from apps.posts.services import post_create, post_update_content
from apps.publishing.mastodon.models import MastodonConnection, SentStatus
from apps.publishing.mastodon.services import connection_options_set, connection_save
from apps.publishing.models import JobState, PublicationJob
from apps.publishing.services import channel_run
from tests.factories import AdminUserFactory, TagFactory
from tests.publishing.mastodon_fake import counted

pytestmark = pytest.mark.django_db


def publish(channel, **fields) -> Post:
    """A new post of the channel, published through the pipeline ("Publish now", then a run)."""
    post = post_create(channel=channel, **({"title": "Hello, world", "body": "First words.\n"} | fields))
    post_publish_now(post_id=post.pk)
    channel_run(channel.pk)
    post.refresh_from_db()
    return post


def last_job(post: Post) -> PublicationJob:
    return PublicationJob.objects.filter(post_id=post.pk).order_by("-id").first()


def retry(channel, job: PublicationJob) -> PublicationJob:
    """Run the job's retry now rather than at its scheduled time."""
    PublicationJob.objects.filter(pk=job.pk).update(next_attempt_at=timezone.now() - timedelta(seconds=1))
    channel_run(channel.pk)
    job.refresh_from_db()
    return job


def creates(fake) -> list:
    return fake.calls("POST", "/api/v1/statuses")


def only_status(fake):
    [status] = fake.statuses.values()
    return status


# --- publishing ---------------------------------------------------------------------------------


def test_a_published_post_becomes_one_status_with_the_channels_visibility_language_link_and_hashtags(
    mastodon, mastodon_channel
):
    connection = MastodonConnection.objects.get(channel=mastodon_channel)
    connection_options_set(connection=connection, visibility="unlisted", language="de")
    post = post_create(channel=mastodon_channel, title="Hallo, Welt", body="Erste Worte.\n")
    post.tags.add(
        TagFactory(account=mastodon_channel.account, name="Machine learning"),
        TagFactory(account=mastodon_channel.account, name="2024"),
    )
    post_publish_now(post_id=post.pk)
    channel_run(mastodon_channel.pk)

    [sent] = creates(mastodon)
    assert sent.headers["Authorization"] == f"Bearer {connection.access_token()}"
    assert len(sent.headers["Idempotency-Key"]) == 32
    status = only_status(mastodon)
    assert (status.visibility, status.language) == ("unlisted", "de")
    # A tag without a letter is no Mastodon hashtag: it is left out.
    assert status.text.startswith("Hallo, Welt\n\nErste Worte.") and status.text.endswith("#Machinelearning")
    job = last_job(post)
    assert (job.state, job.reference) == (JobState.SUCCEEDED, status.id)
    post.refresh_from_db()
    assert post.publication_status == "published"


def test_a_long_post_with_emoji_links_and_cjk_fits_the_instances_own_limit_as_mastodon_counts_it(
    mastodon, mastodon_channel
):
    # The instance's own limit, read from /api/v2/instance when it is stale.
    mastodon.limits.update(max_characters=140, characters_reserved_per_url=23)
    MastodonConnection.objects.filter(channel=mastodon_channel).update(limits_read_at=None)
    link = "https://example.com/" + "a-very-long-path/" * 12
    body = f"👍🏽🇯🇵👩‍👩‍👧‍👦 See {link} for more. " + "日本語の文章です。" * 20

    publish(mastodon_channel, title="長い投稿 🎉", body=body)

    text = only_status(mastodon).text
    assert counted(text, 23) <= 140 < len(text)  # links count 23 and clusters one, not code points
    assert text.startswith(f"長い投稿 🎉\n\n👍🏽🇯🇵👩‍👩‍👧‍👦 See {link} for more. 日本語の文章です。")
    assert text.endswith("…") and counted(text, 23) >= 135  # shortened to the limit, not far below it
    assert MastodonConnection.objects.get(channel=mastodon_channel).max_characters == 140


def test_a_limit_larger_than_mastodons_default_posts_the_whole_text(mastodon, mastodon_channel):
    mastodon.limits["max_characters"] = 5000
    MastodonConnection.objects.filter(channel=mastodon_channel).update(limits_read_at=None)
    body = "A sentence of some length. " * 60  # 1,620 characters: more than 500

    publish(mastodon_channel, title="Long", body=body)

    assert body.strip() in only_status(mastodon).text


# --- never twice ----------------------------------------------------------------------------------


def test_a_lost_answer_is_looked_up_on_the_retry_and_the_status_is_posted_once(mastodon, mastodon_channel):
    mastodon.drop_after_create()

    post = publish(mastodon_channel)

    job = last_job(post)
    assert job.state == JobState.QUEUED and "tried again" in job.last_error
    assert len(mastodon.statuses) == 1 and SentStatus.objects.get(job_id=job.pk).status_id == ""
    job = retry(mastodon_channel, job)
    assert job.state == JobState.SUCCEEDED, job.last_error
    status = only_status(mastodon)
    assert job.reference == status.id and len(creates(mastodon)) == 1  # found, not sent again
    assert len(mastodon.calls("GET", "/api/v1/accounts/109/statuses")) == 1


def test_a_lost_answer_the_look_up_cannot_see_is_answered_by_the_idempotency_key(mastodon, mastodon_channel):
    mastodon.drop_after_create()
    post = publish(mastodon_channel)
    for n in range(25):  # more statuses since than the look-up reads
        mastodon.post_by_hand(f"By hand {n}")

    job = retry(mastodon_channel, last_job(post))

    assert job.state == JobState.SUCCEEDED, job.last_error
    first, second = creates(mastodon)
    assert first.headers["Idempotency-Key"] == second.headers["Idempotency-Key"]
    made = [status for status in mastodon.statuses.values() if status.text.startswith("Hello, world")]
    assert [status.id for status in made] == [job.reference]


def test_a_post_edited_between_a_lost_answer_and_the_retry_edits_the_status_it_made(mastodon, mastodon_channel):
    mastodon.drop_after_create()
    post = publish(mastodon_channel)
    job = last_job(post)
    post_update_content(post=post, body="Better words.\n")

    channel_run(mastodon_channel.pk)
    retry(mastodon_channel, job)

    status = only_status(mastodon)
    assert "Better words." in status.text and len(creates(mastodon)) == 1


# --- errors -------------------------------------------------------------------------------------


def test_429_waits_until_the_rate_limit_resets(mastodon, mastodon_channel):
    reset = datetime.now(UTC) + timedelta(minutes=20)
    mastodon.fail_next(
        429,
        method="POST",
        path="/api/v1/statuses",
        message="Too many requests",
        headers={"X-RateLimit-Reset": reset.isoformat(timespec="milliseconds").replace("+00:00", "Z")},
    )

    post = publish(mastodon_channel)

    job = last_job(post)
    assert job.state == JobState.QUEUED and "429" in job.last_error
    assert job.next_attempt_at >= reset - timedelta(seconds=2)
    assert not SentStatus.objects.filter(job_id=job.pk).exists()
    job = retry(mastodon_channel, job)
    assert job.state == JobState.SUCCEEDED and len(mastodon.statuses) == 1


def test_401_stops_the_channel_until_it_is_reconnected_and_its_jobs_resume_then(
    mastodon, mastodon_channel, mailoutbox, django_capture_on_commit_callbacks
):
    AdminUserFactory(account=mastodon_channel.account, email="admin@example.com")
    connection = MastodonConnection.objects.get(channel=mastodon_channel)
    mastodon.revoke(connection.access_token())

    with django_capture_on_commit_callbacks(execute=True):
        first = publish(mastodon_channel, title="First")
        second = publish(mastodon_channel, title="Second")

    connection.refresh_from_db()
    assert connection.needs_reconnect and "revoked" in connection.reconnect_reason
    for post in (first, second):
        job = last_job(post)
        assert job.state == JobState.FAILED and job.last_error.startswith("Reconnect Mastodon:")
    # The second job was not even tried: the channel waits for its reconnection.
    assert len(creates(mastodon)) == 1
    [mail] = [m for m in mailoutbox if "Reconnect Mastodon" in m.subject]  # once, not once a job
    assert mail.to == ["admin@example.com"] and "revoked" in mail.body

    with django_capture_on_commit_callbacks(execute=True):
        connection_save(channel=mastodon_channel, app=connection.app, token=mastodon.issue_token(), connected_by="t")
    channel_run(mastodon_channel.pk)

    assert sorted(s.text.split("\n")[0] for s in mastodon.statuses.values()) == ["First", "Second"]
    assert all(last_job(post).state == JobState.SUCCEEDED for post in (first, second))


def test_a_refused_status_fails_with_the_instances_words(mastodon, mastodon_channel):
    mastodon.fail_next(422, method="POST", path="/api/v1/statuses", message="Validation failed: Text is spam")

    job = last_job(publish(mastodon_channel))

    assert job.state == JobState.FAILED
    assert job.last_error == "The instance refused the new status (422): Validation failed: Text is spam"


# --- edits and unpublishing -------------------------------------------------------------------


def test_an_edit_puts_the_new_text_and_an_unpublish_deletes_the_status(mastodon, mastodon_channel):
    post = publish(mastodon_channel)
    status = only_status(mastodon)

    post_update_content(post=post, body="Second thoughts.\n")
    channel_run(mastodon_channel.pk)

    [edit] = mastodon.calls("PUT", f"/api/v1/statuses/{status.id}")
    assert "visibility" not in edit.body  # Mastodon keeps it
    assert "Second thoughts." in status.text and len(creates(mastodon)) == 1
    assert last_job(post).state == JobState.SUCCEEDED

    post_set_status(post_id=post.pk, status="draft")
    channel_run(mastodon_channel.pk)

    assert mastodon.statuses == {} and status.id in mastodon.deleted
    assert last_job(post).state == JobState.SUCCEEDED


def test_an_edit_of_a_status_deleted_on_mastodon_says_so(mastodon, mastodon_channel):
    post = publish(mastodon_channel)
    mastodon.statuses.clear()

    post_update_content(post=post, body="Second thoughts.\n")
    channel_run(mastodon_channel.pk)

    job = last_job(post)
    assert job.state == JobState.FAILED and job.last_error.startswith("The status is no longer on Mastodon")
