"""The LinkedIn destination: what a post's publication sends to LinkedIn, read back from a local fake
of LinkedIn's endpoints (tests/publishing/linkedin_fake.py), which refuses what LinkedIn refuses. Each
test drives the pipeline as the application does: a post's change writes a job, `channel_run` carries
it out against the fake."""

import logging
from datetime import timedelta
from urllib.parse import quote

import pytest
import requests
from django.utils import timezone

from apps.core.errors import InvalidInput
from apps.posts.editor_status import post_publish_now, post_set_status
from apps.posts.models import Post
from apps.posts.services import post_create, post_delete, post_update_content
from apps.publishing.linkedin.models import LinkedInConnection
from apps.publishing.linkedin.services import connection_author_set, connection_save
from apps.publishing.models import PublicationJob
from apps.publishing.services import channel_run, job_retry_now
from apps.webhooks.models import Event
from tests.factories import ApiKeyFactory, ChannelFactory, PostFactory, TagFactory, UserFactory
from tests.publishing.linkedin_fake import MAIN_FEED, little_text

pytestmark = pytest.mark.django_db

ADA = "urn:li:person:abc123"
PAGE = "urn:li:organization:2414183"


def publish(channel, **fields) -> Post:
    """A new post of the channel, published through the pipeline ("Publish now", then a run)."""
    post = post_create(channel=channel, **({"title": "Hello, world", "body": "First words.\n"} | fields))
    post_publish_now(post_id=post.pk)
    channel_run(channel.pk)
    post.refresh_from_db()
    return post


def last_job(post: Post) -> PublicationJob:
    return PublicationJob.objects.filter(post_id=post.pk).order_by("-id").first()


def connection_of(channel) -> LinkedInConnection:
    return LinkedInConnection.objects.get(channel=channel)


def creates(fake) -> list:
    """The create requests the fake received (POST /rest/posts itself, not a post's partial update)."""
    return [request for request in fake.calls("POST", "/rest/posts") if request.path == "/rest/posts"]


def make_due(job: PublicationJob) -> None:
    PublicationJob.objects.filter(pk=job.pk).update(next_attempt_at=timezone.now() - timedelta(seconds=1))


def retry(channel, job: PublicationJob) -> PublicationJob:
    """Run the job's retry now rather than at its scheduled time."""
    make_due(job)
    channel_run(channel.pk)
    job.refresh_from_db()
    return job


def events(kind: str, post: Post) -> list[Event]:
    return list(Event.objects.filter(kind=kind, post_id=post.pk))


def post_by_hand(fake, token: str, text: str, *, days_ago: int = 0) -> str:
    """A post the member made on LinkedIn itself (not through this service); its URN."""
    answer = requests.post(
        f"{fake.url}/rest/posts",
        headers={
            "Authorization": f"Bearer {token}",
            "LinkedIn-Version": fake.version,
            "X-Restli-Protocol-Version": "2.0.0",
        },
        json={
            "author": ADA,
            "commentary": text,
            "visibility": "PUBLIC",
            "distribution": MAIN_FEED,
            "lifecycleState": "PUBLISHED",
        },
        timeout=10,
    )
    assert answer.status_code == 201, answer.text
    urn = answer.headers["x-restli-id"]
    fake.posts[urn]["createdAt"] -= days_ago * 86400 * 1000
    fake.requests.clear()  # what the service sends is what the tests look at
    return urn


def shown(post_urn: str, fake) -> str:
    """The text LinkedIn shows for one of its posts."""
    return little_text(fake.posts[post_urn]["commentary"])


# --- publishing ---------------------------------------------------------------------------------


def test_a_published_post_becomes_one_linkedin_post_with_the_headers_and_body_linkedin_requires(
    linkedin, linkedin_channel, settings, client_for
):
    token = connection_of(linkedin_channel).access_token()

    post = publish(linkedin_channel, title="Hello, world", body="First words.\n")

    [sent] = creates(linkedin)
    assert sent.headers["Authorization"] == f"Bearer {token}"
    assert sent.headers["LinkedIn-Version"] == settings.LINKEDIN_API_VERSION
    assert sent.headers["X-Restli-Protocol-Version"] == "2.0.0"
    assert sent.headers["Content-Type"].startswith("application/json")
    assert {name: sent.body[name] for name in ("author", "visibility", "distribution", "lifecycleState")} == {
        "author": ADA,
        "visibility": "PUBLIC",
        "distribution": MAIN_FEED,
        "lifecycleState": "PUBLISHED",
    }
    assert little_text(sent.body["commentary"]) == "Hello, world\n\nFirst words."
    [urn] = linkedin.posts
    assert linkedin.posts[urn]["author"] == ADA
    job = last_job(post)
    assert (job.state, job.action, job.attempts, job.last_error) == ("succeeded", "publish", 1, "")
    assert (job.reference, job.url) == (urn, f"https://www.linkedin.com/feed/update/{urn}/")
    assert post.publication_status == "published" and post.published_at == job.published_at
    [event] = events("post.published", post)
    assert event.account_id == linkedin_channel.account_id
    api = client_for(ApiKeyFactory(user=UserFactory(account=linkedin_channel.account)))
    detail = api.get(f"/v1/channels/{linkedin_channel.pk}/posts/{post.pk}")
    assert detail.status_code == 200
    assert detail.json()["data"]["url"] == f"https://www.linkedin.com/feed/update/{urn}/"
    assert detail.json()["data"]["publication"]["reference"] == urn


def test_a_channel_run_again_after_the_post_was_made_posts_nothing_more(linkedin, linkedin_channel):
    post = publish(linkedin_channel)

    assert channel_run(linkedin_channel.pk) == 0
    assert len(creates(linkedin)) == 1 and len(linkedin.posts) == 1
    assert PublicationJob.objects.filter(post_id=post.pk).count() == 1


# --- the commentary -----------------------------------------------------------------------------


def test_the_text_is_the_title_then_the_body_as_plain_text_with_its_paragraphs_then_the_tags(
    linkedin, linkedin_channel
):
    tags = [TagFactory(account=linkedin_channel.account, name=name) for name in ("web-dev", "python")]
    body = "# A heading\n\nFirst *paragraph* with [a link](https://example.com/x).\n\n- item one\n- item two\n"

    publish(linkedin_channel, title="Rust & C", body=body, teaser="", tags=tags)

    [urn] = linkedin.posts
    assert shown(urn, linkedin) == (
        "Rust & C\n\nA heading\n\nFirst paragraph with a link.\n\nitem one\nitem two\n\n#python #webdev"
    )


def test_linkedins_reserved_characters_in_the_post_are_escaped_so_it_shows_them_as_written(linkedin, linkedin_channel):
    title = "C++ (and #C) @ {work} <fast> | a_b ~ [1] \\o/"
    body = "Use `a_b[0]` and x\\*y — (really) #not-a-tag, @nobody.\n"

    publish(linkedin_channel, title=title, body=body, teaser="")

    [urn] = linkedin.posts
    assert shown(urn, linkedin) == f"{title}\n\nUse a_b[0] and x*y — (really) #not-a-tag, @nobody."


def test_the_teaser_is_posted_instead_of_the_body(linkedin, linkedin_channel):
    publish(linkedin_channel, title="Release 2.0", body="The long story.\n\nMore of it.\n", teaser="What is new (2.0)")

    [urn] = linkedin.posts
    assert shown(urn, linkedin) == "Release 2.0\n\nWhat is new (2.0)"


def test_the_text_links_to_the_posts_page_on_the_accounts_blog_where_it_is_published(linkedin, linkedin_channel):
    blog = ChannelFactory(platform="blog", account=linkedin_channel.account, handle="ada-blog")
    PostFactory(channel=blog, slug="engines", publication_status="published", published_at=timezone.now())

    publish(linkedin_channel, title="Engines", slug="engines", body="On engines.\n", teaser="")

    [urn] = linkedin.posts
    page = blog.post_url("engines")
    assert page.startswith("http") and "ada-blog" in page
    assert shown(urn, linkedin) == f"Engines\n\nOn engines.\n\n{page}"


def test_no_link_is_posted_where_the_blog_post_of_that_slug_is_not_published_or_of_another_account(
    linkedin, linkedin_channel
):
    draft_blog = ChannelFactory(platform="blog", account=linkedin_channel.account, handle="ada-drafts")
    PostFactory(channel=draft_blog, slug="engines", publication_status="draft")
    other_blog = ChannelFactory(platform="blog", handle="someone-else")
    PostFactory(channel=other_blog, slug="engines", publication_status="published", published_at=timezone.now())

    publish(linkedin_channel, title="Engines", slug="engines", body="On engines.\n", teaser="")

    [urn] = linkedin.posts
    assert shown(urn, linkedin) == "Engines\n\nOn engines."


def test_a_post_too_long_for_linkedin_fails_at_once_without_a_request_and_a_short_teaser_publishes_it(
    linkedin, linkedin_channel
):
    asked = len(linkedin.requests)

    post = publish(linkedin_channel, title="Long", body="word " * 700, teaser="")

    job = last_job(post)
    assert (job.state, job.attempts) == ("failed", 1)
    assert "3,000" in job.last_error and "teaser" in job.last_error
    assert len(linkedin.requests) == asked and linkedin.posts == {}
    assert post.publication_status == "draft"
    [event] = events("post.failed", post)
    assert job.last_error in event.body

    post_update_content(post=post, teaser="The short of it.")
    post_publish_now(post_id=post.pk)
    channel_run(linkedin_channel.pk)

    [urn] = linkedin.posts
    assert shown(urn, linkedin) == "Long\n\nThe short of it."
    assert last_job(post).state == "succeeded"


# --- whom posts appear as -----------------------------------------------------------------------


def test_a_channel_set_to_post_as_a_page_the_member_administers_posts_as_that_page(linkedin, linkedin_channel):
    connection_author_set(connection=connection_of(linkedin_channel), organization=PAGE)

    post = publish(linkedin_channel)

    [sent] = creates(linkedin)
    assert sent.body["author"] == PAGE
    [urn] = linkedin.posts
    assert linkedin.posts[urn]["author"] == PAGE and last_job(post).reference == urn


def test_a_page_the_member_does_not_administer_is_refused(linkedin, linkedin_channel):
    with pytest.raises(InvalidInput, match="does not administer"):
        connection_author_set(connection=connection_of(linkedin_channel), organization="urn:li:organization:999")

    assert connection_of(linkedin_channel).organization_urn == ""


# --- updates and take-downs ---------------------------------------------------------------------


def test_a_text_change_of_a_published_post_updates_the_same_linkedin_post(linkedin, linkedin_channel):
    post = publish(linkedin_channel, title="Hello", body="First words.\n", teaser="")
    [urn] = linkedin.posts

    post_update_content(post=post, body="Better words (now).\n")
    channel_run(linkedin_channel.pk)

    [update] = linkedin.calls("POST", f"/rest/posts/{quote(urn, safe='')}")
    assert update.headers["X-RestLi-Method"] == "PARTIAL_UPDATE"
    assert set(update.body) == {"patch"} and list(update.body["patch"]["$set"]) == ["commentary"]
    assert len(creates(linkedin)) == 1 and list(linkedin.posts) == [urn]
    assert shown(urn, linkedin) == "Hello\n\nBetter words (now)."
    job = last_job(post)
    assert (job.action, job.state, job.reference) == ("update", "succeeded", urn)


def test_an_update_of_a_post_deleted_on_linkedin_fails_at_once_saying_so(linkedin, linkedin_channel):
    post = publish(linkedin_channel)
    [urn] = linkedin.posts
    del linkedin.posts[urn]  # deleted by its author on LinkedIn

    post_update_content(post=post, body="Other words.\n")
    channel_run(linkedin_channel.pk)

    job = last_job(post)
    assert (job.action, job.state, job.attempts) == ("update", "failed", 1)
    assert "no longer on LinkedIn" in job.last_error
    assert linkedin.posts == {} and len(creates(linkedin)) == 1
    assert len(events("post.failed", post)) == 1


def test_setting_a_published_post_back_to_draft_deletes_it_on_linkedin(linkedin, linkedin_channel):
    post = publish(linkedin_channel)
    [urn] = linkedin.posts

    post_set_status(post_id=post.pk, status="draft")
    channel_run(linkedin_channel.pk)

    [delete] = linkedin.calls("DELETE")
    assert delete.path == f"/rest/posts/{quote(urn, safe='')}"
    assert linkedin.posts == {} and list(linkedin.deleted_posts) == [urn]
    job = last_job(post)
    assert (job.action, job.state, job.last_error) == ("unpublish", "succeeded", "")


def test_deleting_a_published_post_deletes_it_on_linkedin(linkedin, linkedin_channel):
    post = publish(linkedin_channel)
    [urn] = linkedin.posts

    post_delete(post_id=post.pk)
    channel_run(linkedin_channel.pk)

    assert [call.path for call in linkedin.calls("DELETE")] == [f"/rest/posts/{quote(urn, safe='')}"]
    assert linkedin.posts == {} and list(linkedin.deleted_posts) == [urn]
    assert last_job(post).state == "succeeded"


def test_a_post_taken_down_and_published_again_is_a_new_linkedin_post(linkedin, linkedin_channel):
    post = publish(linkedin_channel)
    [old] = linkedin.posts
    post_set_status(post_id=post.pk, status="draft")
    channel_run(linkedin_channel.pk)

    post_publish_now(post_id=post.pk)
    channel_run(linkedin_channel.pk)

    [new] = linkedin.posts
    assert new != old and list(linkedin.deleted_posts) == [old]
    assert (last_job(post).action, last_job(post).reference) == ("publish", new)
    post.refresh_from_db()
    assert post.publication_status == "published"


def test_taking_down_a_post_already_deleted_on_linkedin_counts_as_done(linkedin, linkedin_channel):
    post = publish(linkedin_channel)
    [urn] = linkedin.posts
    del linkedin.posts[urn]

    post_set_status(post_id=post.pk, status="draft")
    channel_run(linkedin_channel.pk)

    assert len(linkedin.calls("DELETE")) == 1  # answered 404
    job = last_job(post)
    assert (job.action, job.state, job.attempts, job.last_error) == ("unpublish", "succeeded", 1, "")
    assert events("post.failed", post) == []


# --- never twice ----------------------------------------------------------------------------------


@pytest.mark.parametrize("lost", ["connection reset", "timeout"])
def test_a_post_whose_answer_was_lost_is_found_and_adopted_on_the_retry_not_posted_again(
    linkedin, linkedin_channel, settings, lost
):
    if lost == "connection reset":
        linkedin.drop_after_create()
    else:
        settings.PUBLISH_TIMEOUT = 1
        # Made at once, answered after the test: the answer never comes in time.
        linkedin.hang(60, method="POST", path="/rest/posts", times=1, after_processing=True)

    post = publish(linkedin_channel)

    job = last_job(post)
    assert (job.state, job.attempts) == ("queued", 1)
    assert post.publication_status == "draft"
    [urn] = linkedin.posts  # made, though its answer never came

    job = retry(linkedin_channel, job)

    [finder] = linkedin.calls("GET", "/rest/posts")
    assert finder.query["q"] == "author" and finder.query["author"] == ADA
    assert len(creates(linkedin)) == 1 and list(linkedin.posts) == [urn]
    assert (job.state, job.reference, job.url) == ("succeeded", urn, f"https://www.linkedin.com/feed/update/{urn}/")
    post.refresh_from_db()
    assert post.publication_status == "published"
    assert len(events("post.published", post)) == 1


def test_a_post_edited_between_the_lost_answer_and_the_retry_is_adopted_with_the_new_text(linkedin, linkedin_channel):
    linkedin.drop_after_create()
    post = publish(linkedin_channel, title="Hello", body="First words.\n", teaser="")
    [urn] = linkedin.posts

    post_update_content(post=post, body="Second thoughts.\n")
    job = retry(linkedin_channel, last_job(post))

    assert (job.state, job.reference) == ("succeeded", urn)
    assert len(creates(linkedin)) == 1 and list(linkedin.posts) == [urn]
    assert shown(urn, linkedin) == "Hello\n\nSecond thoughts."


def test_the_look_up_adopts_neither_another_recent_post_nor_an_older_one_of_the_same_text(linkedin, linkedin_channel):
    token = connection_of(linkedin_channel).access_token()
    post = post_create(channel=linkedin_channel, title="Office hours", body="Today at four.\n", teaser="")
    # The same text a week ago (a weekly post), and something Ada posted by hand on LinkedIn today.
    last_week = post_by_hand(linkedin, token, "Office hours\n\nToday at four.", days_ago=7)
    by_hand = post_by_hand(linkedin, token, "Posted by hand")
    linkedin.fail_next(500)  # not made
    post_publish_now(post_id=post.pk)
    channel_run(linkedin_channel.pk)

    job = retry(linkedin_channel, last_job(post))

    assert len(linkedin.calls("GET", "/rest/posts")) == 1
    [made] = set(linkedin.posts) - {last_week, by_hand}
    assert (job.state, job.reference) == ("succeeded", made)
    assert shown(made, linkedin) == "Office hours\n\nToday at four."


def test_the_look_up_does_not_adopt_the_linkedin_post_of_another_post_with_the_same_text(linkedin, linkedin_channel):
    first = publish(linkedin_channel, title="Office hours", body="Today at four.\n", teaser="")
    linkedin.fail_next(500)  # not made
    second = publish(linkedin_channel, title="Office hours", body="Today at four.\n", teaser="")

    job = retry(linkedin_channel, last_job(second))

    assert job.state == "succeeded" and len(linkedin.posts) == 2
    assert job.reference != last_job(first).reference and job.reference in linkedin.posts


def test_a_request_that_timed_out_before_linkedin_made_the_post_is_posted_once_on_the_retry(
    linkedin, linkedin_channel, settings
):
    settings.PUBLISH_TIMEOUT = 1
    # Longer than the test: the request is still waiting, unprocessed, when the fake stops.
    linkedin.hang(60, method="POST", path="/rest/posts", times=1)

    post = publish(linkedin_channel)

    job = last_job(post)
    assert (job.state, job.attempts) == ("queued", 1) and "in time" in job.last_error
    assert linkedin.posts == {}

    job = retry(linkedin_channel, job)

    assert len(linkedin.calls("GET", "/rest/posts")) == 1  # looked first
    [urn] = linkedin.posts
    assert (job.state, job.reference) == ("succeeded", urn)


def test_a_server_error_on_the_create_is_retried_and_posts_once(linkedin, linkedin_channel):
    linkedin.fail_next(500)

    post = publish(linkedin_channel)

    job = last_job(post)
    assert (job.state, job.attempts) == ("queued", 1) and "(500)" in job.last_error
    job = retry(linkedin_channel, job)

    assert len(creates(linkedin)) == 2
    [urn] = linkedin.posts
    assert (job.state, job.reference) == ("succeeded", urn)


def test_a_lost_answer_that_linkedin_will_not_let_us_look_up_fails_asking_a_person_to_look(linkedin, linkedin_channel):
    linkedin.drop_after_create()
    post = publish(linkedin_channel)
    linkedin.fail_next(403, method="GET", path="/rest/posts")

    job = retry(linkedin_channel, last_job(post))

    assert (job.state, job.attempts) == ("failed", 2)
    assert "Look at the profile or page on LinkedIn" in job.last_error and "Retry now" in job.last_error
    assert len(creates(linkedin)) == 1 and len(linkedin.posts) == 1
    assert len(events("post.failed", post)) == 1


def test_retry_now_after_a_person_found_the_post_missing_posts_it_once(linkedin, linkedin_channel, settings):
    settings.PUBLISH_TIMEOUT = 1
    linkedin.hang(60, method="POST", path="/rest/posts", times=1)  # lost, and never made
    post = publish(linkedin_channel)
    linkedin.fail_next(403, method="GET", path="/rest/posts")
    job = retry(linkedin_channel, last_job(post))
    assert job.state == "failed" and linkedin.posts == {}

    job_retry_now(job=job)
    channel_run(linkedin_channel.pk)

    job.refresh_from_db()
    [urn] = linkedin.posts
    assert (job.state, job.reference) == ("succeeded", urn)
    post.refresh_from_db()
    assert post.publication_status == "published"


# --- LinkedIn's refusals ------------------------------------------------------------------------


@pytest.mark.parametrize("taken_back", ["back to draft", "deleted"])
def test_a_post_taken_back_after_its_answer_was_lost_is_deleted_on_linkedin(linkedin, linkedin_channel, taken_back):
    linkedin.drop_after_create()
    post = publish(linkedin_channel)
    assert last_job(post).state == "queued"
    [urn] = linkedin.posts  # made, though its answer never came

    if taken_back == "deleted":
        post_delete(post_id=post.pk)
    else:
        post_set_status(post_id=post.pk, status="draft")
    channel_run(linkedin_channel.pk)

    jobs = PublicationJob.objects.filter(post_id=post.pk).order_by("id")
    assert [(job.action, job.state) for job in jobs] == [("publish", "failed"), ("unpublish", "succeeded")]
    assert jobs[0].last_error.startswith("Canceled:")
    assert linkedin.posts == {} and list(linkedin.deleted_posts) == [urn]
    assert len(creates(linkedin)) == 1


def test_a_post_taken_back_after_linkedin_refused_it_needs_nothing_taken_down(linkedin, linkedin_channel):
    linkedin.fail_next(500)
    post = publish(linkedin_channel)
    assert last_job(post).state == "queued"
    linkedin.requests.clear()

    post_set_status(post_id=post.pk, status="draft")
    channel_run(linkedin_channel.pk)

    # The 500 made no post: the unpublish looks (nothing of this text) and deletes nothing.
    assert last_job(post).action == "unpublish" and last_job(post).state == "succeeded"
    assert linkedin.calls("DELETE") == [] and linkedin.posts == {}


def test_a_revoked_token_fails_at_once_asking_to_reconnect_and_stops_all_requests_until_then(
    linkedin, linkedin_channel, django_capture_on_commit_callbacks
):
    linkedin.revoke(connection_of(linkedin_channel).access_token())

    first = publish(linkedin_channel, title="First")

    job = last_job(first)
    assert (job.state, job.attempts) == ("failed", 1)
    assert job.last_error.startswith("Reconnect LinkedIn:")
    assert connection_of(linkedin_channel).needs_reconnect
    assert len(events("post.failed", first)) == 1
    asked = len(linkedin.requests)

    second = publish(linkedin_channel, title="Second")

    assert len(linkedin.requests) == asked
    job = last_job(second)
    assert (job.state, job.attempts) == ("failed", 1) and job.last_error.startswith("Reconnect LinkedIn:")
    assert len(events("post.failed", second)) == 1

    with django_capture_on_commit_callbacks(execute=True):
        connection_save(channel=linkedin_channel, token=linkedin.issue_token(), connected_by="tests")
    channel_run(linkedin_channel.pk)

    assert not connection_of(linkedin_channel).needs_reconnect
    assert [last_job(post).state for post in (first, second)] == ["succeeded", "succeeded"]
    assert sorted(shown(urn, linkedin).split("\n")[0] for urn in linkedin.posts) == ["First", "Second"]
    assert len(creates(linkedin)) == 3  # the refused one, then one for each post


def test_a_retired_api_version_fails_at_once_naming_the_setting(linkedin, linkedin_channel, settings):
    settings.LINKEDIN_API_VERSION = "202001"

    post = publish(linkedin_channel)

    job = last_job(post)
    assert (job.state, job.attempts) == ("failed", 1)
    assert "LINKEDIN_API_VERSION" in job.last_error and "202001" in job.last_error
    assert linkedin.posts == {} and len(events("post.failed", post)) == 1


def test_a_rate_limit_waits_as_long_as_linkedin_asks_not_the_schedules_first_delay(
    linkedin, linkedin_channel, settings
):
    settings.PUBLISH_RETRY_DELAYS = [60, 300]
    linkedin.fail_next(429, headers={"Retry-After": "7200"})
    before = timezone.now()

    post = publish(linkedin_channel)

    job = last_job(post)
    assert (job.state, job.attempts) == ("queued", 1) and "429" in job.last_error
    assert job.next_attempt_at >= before + timedelta(seconds=7200)
    assert linkedin.posts == {} and events("post.failed", post) == []


def test_server_errors_are_retried_on_the_schedule_then_given_up(linkedin, linkedin_channel, settings):
    settings.PUBLISH_RETRY_DELAYS = [60, 300]
    linkedin.fail_next(500, times=3)
    before = timezone.now()

    post = publish(linkedin_channel)

    job = last_job(post)
    assert (job.state, job.attempts) == ("queued", 1)
    assert before + timedelta(seconds=60) <= job.next_attempt_at <= timezone.now() + timedelta(seconds=60)
    before = timezone.now()
    job = retry(linkedin_channel, job)
    assert (job.state, job.attempts) == ("queued", 2)
    assert before + timedelta(seconds=300) <= job.next_attempt_at <= timezone.now() + timedelta(seconds=300)
    assert events("post.failed", post) == []

    job = retry(linkedin_channel, job)

    assert (job.state, job.attempts) == ("failed", 3)
    assert "(500)" in job.last_error and job.last_error.endswith("Gave up after 3 attempts.")
    assert linkedin.posts == {} and len(creates(linkedin)) == 3
    assert len(events("post.failed", post)) == 1


@pytest.mark.parametrize("status", [422, 403])
def test_a_refusal_fails_at_once_with_linkedins_message(linkedin, linkedin_channel, status):
    linkedin.fail_next(status, message="/commentary :: something LinkedIn did not like")

    post = publish(linkedin_channel)

    job = last_job(post)
    assert (job.state, job.attempts) == ("failed", 1)
    assert f"({status})" in job.last_error and "something LinkedIn did not like" in job.last_error
    assert linkedin.posts == {} and len(events("post.failed", post)) == 1
    assert not connection_of(linkedin_channel).needs_reconnect


def test_posting_as_a_page_linkedin_does_not_allow_fails_at_once_with_its_message(linkedin, linkedin_channel):
    # Chosen while the member administered it, since taken away on LinkedIn.
    LinkedInConnection.objects.filter(channel=linkedin_channel).update(organization_urn="urn:li:organization:999")

    post = publish(linkedin_channel)

    job = last_job(post)
    assert (job.state, job.attempts) == ("failed", 1)
    assert "Not enough permissions to create post as author urn:li:organization:999" in job.last_error
    assert linkedin.posts == {}


def test_a_channel_not_connected_fails_its_job_and_connecting_it_publishes_the_post(
    linkedin, django_capture_on_commit_callbacks
):
    channel = ChannelFactory(platform="linkedin")

    post = publish(channel)

    job = last_job(post)
    assert (job.state, job.attempts) == ("failed", 1) and job.last_error.startswith("Connect LinkedIn:")
    assert linkedin.requests == [] and len(events("post.failed", post)) == 1

    with django_capture_on_commit_callbacks(execute=True):
        connection_save(channel=channel, token=linkedin.issue_token(), connected_by="tests")
    channel_run(channel.pk)

    job.refresh_from_db()
    [urn] = linkedin.posts
    assert (job.state, job.reference) == ("succeeded", urn)
    post.refresh_from_db()
    assert post.publication_status == "published"


# --- access that ends ---------------------------------------------------------------------------


def test_an_expired_token_is_renewed_with_the_refresh_token_before_the_job_and_stored_encrypted(
    linkedin, linkedin_channel
):
    old = connection_of(linkedin_channel).access_token()
    linkedin.expire(old)
    LinkedInConnection.objects.filter(channel=linkedin_channel).update(expires_at=timezone.now() - timedelta(hours=1))

    post = publish(linkedin_channel)

    assert [form["grant_type"] for form in linkedin.token_requests] == ["refresh_token"]
    job = last_job(post)
    assert job.state == "succeeded"
    connection = connection_of(linkedin_channel)
    new = connection.access_token()
    assert new != old and connection.expires_at > timezone.now()
    assert creates(linkedin)[0].headers["Authorization"] == f"Bearer {new}"
    stored = LinkedInConnection.objects.filter(pk=connection.pk).values_list("access_token_encrypted", flat=True)
    assert new not in stored[0] and old not in stored[0]


def test_an_expired_token_without_a_refresh_token_fails_asking_to_reconnect_without_a_post_request(
    linkedin, linkedin_channel
):
    LinkedInConnection.objects.filter(channel=linkedin_channel).update(
        expires_at=timezone.now() - timedelta(hours=1), refresh_token_encrypted=""
    )

    post = publish(linkedin_channel)

    job = last_job(post)
    assert (job.state, job.attempts) == ("failed", 1) and job.last_error.startswith("Reconnect LinkedIn:")
    assert linkedin.calls(path_prefix="/rest/posts") == [] and linkedin.token_requests == []
    assert connection_of(linkedin_channel).needs_reconnect


# --- secrets ------------------------------------------------------------------------------------


def test_tokens_are_never_logged_nor_shown_in_a_jobs_error(linkedin, linkedin_channel, caplog):
    caplog.set_level(logging.DEBUG)
    connection = connection_of(linkedin_channel)
    first, refresh = connection.access_token(), connection.refresh_token()
    LinkedInConnection.objects.filter(pk=connection.pk).update(expires_at=timezone.now() - timedelta(hours=1))

    published = publish(linkedin_channel, title="Renewed first")
    renewed = connection_of(linkedin_channel).access_token()
    linkedin.revoke(renewed)
    refused = publish(linkedin_channel, title="Refused")

    assert last_job(published).state == "succeeded" and last_job(refused).state == "failed"
    tokens = {first, refresh, renewed}
    assert len(tokens) == 3 and all(tokens)
    written = [
        caplog.text,
        *PublicationJob.objects.values_list("last_error", flat=True),
        *Event.objects.values_list("body", flat=True),
        connection_of(linkedin_channel).reconnect_reason,
    ]
    assert caplog.text and not [token for token in tokens for text in written if token in text]
