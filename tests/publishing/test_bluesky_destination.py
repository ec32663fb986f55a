"""The Bluesky destination: what a post's publication writes in the account's repository, read back
from the local fake PDS (tests/publishing/bluesky_fake.py), which refuses what Bluesky refuses. The
pipeline drives the jobs as the application does (a post's change writes a job, `channel_run`
carries it out), or the publisher is given Documents with real images."""

import hashlib
import io
import time
from datetime import timedelta

import PIL.Image
import pytest
from django.core import mail
from django.utils import timezone

from apps.core.destinations import Document, Image, JobContext, PublishError
from apps.posts.editor_status import post_publish_now, post_set_status
from apps.posts.models import Post, PublicationStatus
from apps.posts.services import post_create, post_update_content
from apps.publishing.bluesky.destination import load
from apps.publishing.bluesky.models import BlueskyConnection, SentBlob, SentRecord
from apps.publishing.bluesky.services import connection_save
from apps.publishing.models import JobState, PublicationJob
from apps.publishing.services import channel_run
from tests.factories import AdminUserFactory, TagFactory
from tests.publishing.bluesky_fake import DID, HANDLE

pytestmark = pytest.mark.django_db

NEW_PASSWORD = "wxyz-wxyz-wxyz-wxyz"


def publish(channel, **fields) -> Post:
    post = post_create(channel=channel, **({"title": "Hello, world", "body": "First words.\n"} | fields))
    post_publish_now(post_id=post.pk)
    channel_run(channel.pk)
    post.refresh_from_db()
    return post


def last_job(post: Post) -> PublicationJob:
    return PublicationJob.objects.filter(post_id=post.pk).order_by("-id").first()


def retry(channel, job: PublicationJob) -> PublicationJob:
    PublicationJob.objects.filter(pk=job.pk).update(next_attempt_at=timezone.now() - timedelta(seconds=1))
    channel_run(channel.pk)
    job.refresh_from_db()
    return job


def creates(pds) -> list:
    return pds.calls("POST", "/xrpc/com.atproto.repo.createRecord")


def picture(size=(64, 48), color="red") -> bytes:
    out = io.BytesIO()
    PIL.Image.new("RGB", size, color).save(out, format="PNG")
    return out.getvalue()


def image(medium_id: int, data: bytes, *, alt_text: str = "", mime_type: str = "image/png") -> Image:
    name = f"{hashlib.sha256(data).hexdigest()}.png"
    return Image(
        medium_id=medium_id,
        name=name,
        src=f"/media/{name}",
        url=f"http://testserver/media/{name}",
        mime_type=mime_type,
        width=64,
        height=48,
        size=len(data),
        alt_text=alt_text,
        uploaded_at=timezone.now(),
        read=lambda: data,
    )


def document(*images: Image, link: str | None = None, **fields) -> Document:
    base = {"post_id": 1, "title": "Hello, world", "slug": "hello", "body": "First words.\n"}
    return Document(**(base | fields), published_at=timezone.now(), images=images, link=link)


def job(job_id: int, previous_path: str = "") -> JobContext:
    return JobContext(job_id, 1, "publish", "Hello, world", previous_path, deadline=time.monotonic() + 30)


# --- publishing ---------------------------------------------------------------------------------


def test_a_published_post_is_one_post_record_in_the_accounts_repository(bluesky, bluesky_channel):
    post = publish(bluesky_channel, tags=[TagFactory(account=bluesky_channel.account, name="news")])

    [rkey] = bluesky.posts()
    record = bluesky.posts()[rkey]
    assert record["text"] == "Hello, world\n\nFirst words.\n\n#news"
    assert record["facets"][0]["features"] == [{"$type": "app.bsky.richtext.facet#tag", "tag": "news"}]
    [sent] = creates(bluesky)
    assert (sent.body["repo"], sent.body["collection"], sent.body["rkey"]) == (DID, "app.bsky.feed.post", rkey)
    job = last_job(post)
    assert job.state == JobState.SUCCEEDED
    assert job.reference == f"at://{DID}/app.bsky.feed.post/{rkey}"
    assert job.url == f"https://bsky.app/profile/{HANDLE}/post/{rkey}"
    assert post.publication_status == PublicationStatus.PUBLISHED


def test_the_blog_link_is_an_external_card_with_title_description_and_the_first_image_as_thumbnail(
    bluesky, bluesky_channel
):
    data = picture()
    outcome = load(bluesky_channel.pk).publish(
        job(1),
        document(image(7, data, alt_text="Red"), link="https://blog.example.com/p/hello/", description="About it."),
    )

    record = bluesky.posts()[outcome.path.rsplit("/", 1)[1]]
    card = record["embed"]["external"]
    assert record["embed"]["$type"] == "app.bsky.embed.external"
    assert (card["uri"], card["title"], card["description"]) == (
        "https://blog.example.com/p/hello/",
        "Hello, world",
        "About it.",
    )
    assert bluesky.blobs[card["thumb"]["ref"]["$link"]] == data
    assert "https://blog.example.com" not in record["text"]


def test_images_without_a_blog_link_are_at_most_four_with_their_alt_text_and_uploaded_once(bluesky, bluesky_channel):
    pictures = [
        image(n, picture(color=color), alt_text=f"Alt {n}")
        for n, color in enumerate(["red", "green", "blue", "gray", "white"])
    ]
    publisher = load(bluesky_channel.pk)

    first = publisher.publish(job(1), document(*pictures))
    publisher.publish(job(2), document(*pictures, title="Again"))

    embed = bluesky.posts()[first.path.rsplit("/", 1)[1]]["embed"]
    assert embed["$type"] == "app.bsky.embed.images"
    assert [entry["alt"] for entry in embed["images"]] == ["Alt 0", "Alt 1", "Alt 2", "Alt 3"]
    assert embed["images"][0]["aspectRatio"] == {"width": 64, "height": 48}
    assert len(bluesky.calls("POST", "/xrpc/com.atproto.repo.uploadBlob")) == 4
    assert SentBlob.objects.filter(channel=bluesky_channel).count() == 4


def test_an_image_over_a_million_bytes_is_shrunk_below_it_before_the_upload(bluesky, bluesky_channel):
    noise = PIL.Image.effect_noise((1400, 1400), 100).convert("RGB")
    out = io.BytesIO()
    noise.save(out, format="PNG")
    big = out.getvalue()
    assert len(big) > 1_000_000

    load(bluesky_channel.pk).publish(job(1), document(image(9, big)))

    [upload] = bluesky.calls("POST", "/xrpc/com.atproto.repo.uploadBlob")
    assert len(upload.raw) <= 1_000_000 and upload.headers["Content-Type"] == "image/jpeg"
    assert PIL.Image.open(io.BytesIO(upload.raw)).format == "JPEG"


# --- never twice --------------------------------------------------------------------------------


def test_a_lost_answer_after_the_record_was_made_posts_once_the_retry_finds_it_at_its_key(bluesky, bluesky_channel):
    bluesky.drop_after_create()

    post = publish(bluesky_channel)

    job = last_job(post)
    assert job.state == JobState.QUEUED and "Bluesky could not be reached" in job.last_error
    sent = SentRecord.objects.get(job_id=job.pk)
    assert list(bluesky.posts()) == [sent.rkey] and not sent.confirmed

    job = retry(bluesky_channel, job)

    assert job.state == JobState.SUCCEEDED, job.last_error
    assert len(creates(bluesky)) == 1 and list(bluesky.posts()) == [sent.rkey]
    assert job.reference.endswith(f"/{sent.rkey}")
    assert len(bluesky.calls("GET", "/xrpc/com.atproto.repo.getRecord")) == 1


def test_a_5xx_without_a_record_made_is_sent_again_under_the_same_key(bluesky, bluesky_channel):
    bluesky.fail_next(502, method="POST", path="/xrpc/com.atproto.repo.createRecord")
    post = publish(bluesky_channel)
    key = SentRecord.objects.get(job_id=last_job(post).pk).rkey

    job = retry(bluesky_channel, last_job(post))

    assert job.state == JobState.SUCCEEDED
    assert [request.body["rkey"] for request in creates(bluesky)] == [key, key]
    assert list(bluesky.posts()) == [key]


def test_a_429_waits_until_bluesky_says_the_limit_resets(bluesky, bluesky_channel):
    reset = int(time.time()) + 3600
    bluesky.fail_next(
        429, method="POST", path="/xrpc/com.atproto.repo.createRecord", headers={"RateLimit-Reset": str(reset)}
    )

    post = publish(bluesky_channel)

    job = last_job(post)
    assert job.state == JobState.QUEUED and job.last_error.startswith("Bluesky is limiting requests (429)")
    assert abs(job.next_attempt_at.timestamp() - reset) < 5
    assert bluesky.posts() == {}


# --- the session --------------------------------------------------------------------------------


def test_an_expired_access_token_is_renewed_with_the_refresh_token_and_the_post_made(bluesky, bluesky_channel):
    bluesky.expire_access()

    post = publish(bluesky_channel)

    assert last_job(post).state == JobState.SUCCEEDED
    assert len(bluesky.calls("POST", "/xrpc/com.atproto.server.refreshSession")) == 1
    assert len(bluesky.calls("POST", "/xrpc/com.atproto.server.createSession")) == 1  # only the connection's


def test_when_the_refresh_token_ended_too_a_new_session_is_made_from_the_app_password(bluesky, bluesky_channel):
    bluesky.expire_access()
    bluesky.expire_refresh()

    post = publish(bluesky_channel)

    assert last_job(post).state == JobState.SUCCEEDED
    assert len(bluesky.calls("POST", "/xrpc/com.atproto.server.createSession")) == 2


def test_a_revoked_app_password_stops_the_channel_once_and_reconnecting_publishes_the_post(
    bluesky, bluesky_channel, django_capture_on_commit_callbacks
):
    AdminUserFactory(account=bluesky_channel.account)
    bluesky.revoke()
    bluesky.accounts[DID]["passwords"].add(NEW_PASSWORD)

    with django_capture_on_commit_callbacks(execute=True):
        post = publish(bluesky_channel)
        second = publish(bluesky_channel, title="Second")

    job = last_job(post)
    assert job.state == JobState.FAILED and job.last_error.startswith("Reconnect Bluesky: Bluesky refused the app")
    assert last_job(second).last_error.startswith("Reconnect Bluesky:")
    assert BlueskyConnection.objects.get(channel=bluesky_channel).needs_reconnect
    assert [message.subject for message in mail.outbox if "Reconnect Bluesky" in message.subject] == [
        f"Reconnect Bluesky: the channel “{bluesky_channel.title}” cannot publish"
    ]
    assert bluesky.posts() == {}

    with django_capture_on_commit_callbacks(execute=True):
        connection_save(channel=bluesky_channel, handle=HANDLE, app_password=NEW_PASSWORD, connected_by="tests")
    channel_run(bluesky_channel.pk)

    assert last_job(post).state == JobState.SUCCEEDED and last_job(second).state == JobState.SUCCEEDED
    assert len(bluesky.posts()) == 2


# --- edits and unpublishing ---------------------------------------------------------------------


def test_an_edit_that_changes_the_text_replaces_the_record_and_one_that_does_not_sends_nothing(
    bluesky, bluesky_channel
):
    post = publish(bluesky_channel)
    [first] = bluesky.posts()

    post_update_content(post=post, body="Other words.\n")
    channel_run(bluesky_channel.pk)

    [second] = bluesky.posts()
    assert second != first and bluesky.deleted == [(DID, first)]
    assert bluesky.posts()[second]["text"] == "Hello, world\n\nOther words."
    assert last_job(post).reference.endswith(f"/{second}")
    calls = len(bluesky.requests)

    post_update_content(post=post, slug="a-new-slug")
    channel_run(bluesky_channel.pk)

    assert PublicationJob.objects.filter(post_id=post.pk, action="update", state=JobState.SUCCEEDED).count() == 2
    assert list(bluesky.posts()) == [second] and len(bluesky.requests) == calls


def test_unpublishing_deletes_the_record(bluesky, bluesky_channel):
    post = publish(bluesky_channel)
    [rkey] = bluesky.posts()

    post_set_status(post_id=post.pk, status=PublicationStatus.DRAFT)
    channel_run(bluesky_channel.pk)

    assert bluesky.posts() == {} and bluesky.deleted == [(DID, rkey)]
    assert last_job(post).state == JobState.SUCCEEDED
    assert not SentRecord.objects.filter(rkey=rkey).exists()


def test_a_post_taken_back_while_its_answer_was_lost_has_its_record_deleted(bluesky, bluesky_channel):
    bluesky.drop_after_create()
    post = publish(bluesky_channel)
    [rkey] = bluesky.posts()

    post_set_status(post_id=post.pk, status=PublicationStatus.DRAFT)
    channel_run(bluesky_channel.pk)

    assert bluesky.posts() == {} and bluesky.deleted == [(DID, rkey)]


def test_a_server_failing_while_renewing_the_session_is_retried_and_loses_no_connection(bluesky, bluesky_channel):
    bluesky.expire_access()
    bluesky.fail_next(503, method="POST", path="/xrpc/com.atproto.server.refreshSession")

    post = publish(bluesky_channel)

    job = last_job(post)
    assert job.state == JobState.QUEUED and job.last_error.startswith("Bluesky failed the new post (503)")
    assert not BlueskyConnection.objects.get(channel=bluesky_channel).needs_reconnect
    assert retry(bluesky_channel, job).state == JobState.SUCCEEDED


def test_a_blob_the_server_no_longer_has_is_uploaded_again_on_the_next_attempt(bluesky, bluesky_channel):
    publisher = load(bluesky_channel.pk)
    red = image(5, picture())
    publisher.publish(job(1), document(red))
    bluesky.blobs.clear()  # collected by the server

    with pytest.raises(PublishError, match="Could not find blob"):
        publisher.publish(job(2), document(red, title="Again"))
    assert not SentBlob.objects.filter(channel=bluesky_channel).exists()
    publisher.publish(job(2), document(red, title="Again"))

    assert len(bluesky.calls("POST", "/xrpc/com.atproto.repo.uploadBlob")) == 2
    assert len(bluesky.posts()) == 2


def test_a_replacement_whose_old_record_could_not_be_removed_leaves_nothing_behind_once_unpublished(
    bluesky, bluesky_channel
):
    post = publish(bluesky_channel)
    [first] = bluesky.posts()
    bluesky.fail_next(400, method="POST", path="/xrpc/com.atproto.repo.deleteRecord", message="Try later")
    post_update_content(post=post, body="Other words.\n")
    channel_run(bluesky_channel.pk)
    assert last_job(post).state == JobState.FAILED and len(bluesky.posts()) == 2

    post_set_status(post_id=post.pk, status=PublicationStatus.DRAFT)
    channel_run(bluesky_channel.pk)

    assert last_job(post).state == JobState.SUCCEEDED, last_job(post).last_error
    assert bluesky.posts() == {} and first in {rkey for _did, rkey in bluesky.deleted}
    assert not SentRecord.objects.filter(channel=bluesky_channel).exists()
