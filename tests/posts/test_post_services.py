from datetime import timedelta

import pytest
from django.utils import timezone

from apps.core.errors import DomainError, InvalidInput, NotFound
from apps.posts.api_workflow import post_mark_publishing_pending, post_publish, post_unpublish
from apps.posts.editor_status import post_set_status
from apps.posts.models import ApiPublication, Media, Post
from apps.posts.services import MediaInput, post_create, post_update_content
from tests.factories import (
    AccountFactory,
    ApiPublicationFactory,
    ChannelFactory,
    MediaFactory,
    PostFactory,
    TagFactory,
)

pytestmark = pytest.mark.django_db


def stored(post: Post) -> Post:
    return Post.objects.get(pk=post.pk)


# --- post_create and post_update_content ---


def test_create_makes_a_draft_with_tags_and_media_in_order():
    channel = ChannelFactory()
    tag = TagFactory(account=channel.account)
    post = post_create(
        channel=channel,
        title="Hello",
        body="Body",
        teaser="",
        slug="hello",
        tags=[tag],
        media=[
            MediaInput(url="https://cdn.example.com/b.png"),
            MediaInput(url="https://cdn.example.com/a.mp4", kind="video"),
        ],
    )
    post = stored(post)
    assert post.publication_status == "draft"
    assert post.teaser == ""  # the spec types the teaser as a string
    assert list(post.tags.all()) == [tag]
    assert [(m.url, m.kind, m.position) for m in post.media.all()] == [
        ("https://cdn.example.com/b.png", "image", 0),
        ("https://cdn.example.com/a.mp4", "video", 1),
    ]


@pytest.mark.parametrize(
    ("changes", "field", "rule"),
    [
        ({"title": ""}, "title", "blank"),
        ({"title": "x" * 301}, "title", "max_length"),
        ({"slug": "not a slug!"}, "slug", "invalid"),
        ({"meta_title": "x" * 301}, "meta_title", "max_length"),
    ],
)
def test_update_validates_with_the_models_rules(changes, field, rule):
    post = PostFactory()
    with pytest.raises(InvalidInput) as caught:
        post_update_content(post=post, **changes)
    assert caught.value.details["field"] == field
    assert caught.value.details["rule"] == rule
    assert stored(post).title == post.title


def test_slug_is_unique_within_a_channel_only():
    first = PostFactory(slug="taken")
    other_channel_post = PostFactory(slug="free")
    post_update_content(post=other_channel_post, slug="taken")  # another channel: fine
    second = PostFactory(channel=first.channel)
    with pytest.raises(InvalidInput) as caught:
        post_update_content(post=second, slug="taken")
    assert caught.value.details["rule"] == "unique"


def test_update_reports_exactly_what_changed_and_moves_updated_at():
    post = PostFactory(title="Old", body="Same")
    before = stored(post).updated_at
    updated, changed = post_update_content(post=post, title="New", body="Same", teaser=post.teaser)
    assert changed == ["title"]
    assert updated.title == "New"
    assert stored(post).updated_at > before


def test_update_with_the_stored_values_changes_nothing():
    post = PostFactory(tags=[TagFactory()])
    post.tags.set([TagFactory(account=post.channel.account)])
    media = MediaFactory(post=post)
    before = stored(post).updated_at
    item = MediaInput(id=media.id, url=media.url, kind=media.kind, alt_text=media.alt_text, width=800, height=600)
    _, changed = post_update_content(post=post, title=post.title, tags=list(post.tags.all()), media=[item])
    assert changed == []
    assert stored(post).updated_at == before


def test_update_compares_with_the_database_not_with_the_instance_passed_in():
    # The admin's form has already written its values onto the instance before the service runs.
    post = PostFactory(title="Stored")
    post.title = "Edited"
    _, changed = post_update_content(post=post, title="Edited")
    assert changed == ["title"]
    assert stored(post).title == "Edited"


def test_update_of_tags_alone_is_a_content_change():
    post = PostFactory()
    tag = TagFactory(account=post.channel.account)
    before = stored(post).updated_at
    _, changed = post_update_content(post=post, tags=[tag])
    assert changed == ["tags"]
    assert stored(post).updated_at > before


def test_update_refuses_tags_of_another_account():
    post = PostFactory()
    with pytest.raises(InvalidInput) as caught:
        post_update_content(post=post, tags=[TagFactory(account=AccountFactory(), name="foreign")])
    assert caught.value.details["field"] == "tags"
    assert "foreign" in caught.value.message
    assert not post.tags.exists()


def test_update_of_media_keeps_updates_removes_and_adds():
    post = PostFactory()
    keep, change, drop = MediaFactory.create_batch(3, post=post)
    items = [
        MediaInput(id=change.id, url="https://cdn.example.com/changed.png", alt_text="new"),
        MediaInput(id=keep.id, url=keep.url, alt_text=keep.alt_text, width=keep.width, height=keep.height),
        MediaInput(url="https://cdn.example.com/new.png"),
    ]
    _, changed = post_update_content(post=post, media=items)
    assert changed == ["media"]
    rows = list(post.media.all())
    assert [m.id for m in rows[:2]] == [change.id, keep.id]
    assert rows[0].url == "https://cdn.example.com/changed.png"
    assert rows[2].url == "https://cdn.example.com/new.png"
    assert not Media.objects.filter(pk=drop.pk).exists()


def test_update_refuses_media_of_another_post_and_bad_urls():
    post = PostFactory()
    stranger = MediaFactory()
    with pytest.raises(InvalidInput):
        post_update_content(post=post, media=[MediaInput(id=stranger.id, url=stranger.url)])
    with pytest.raises(InvalidInput) as caught:
        post_update_content(post=post, media=[MediaInput(url="ftp://cdn.example.com/x.png")])
    assert caught.value.details["field"] == "media[0].url"
    assert Media.objects.get(pk=stranger.pk).post_id == stranger.post_id


def test_content_update_of_a_published_post_keeps_it_published():
    record = ApiPublicationFactory(post__publication_status="published", post__published_at=timezone.now())
    post, changed = post_update_content(post=record.post, body="Corrected")
    assert changed == ["body"]
    assert stored(post).publication_status == "published"
    assert stored(post).published_at == record.post.published_at


# --- post_mark_publishing_pending ---


@pytest.mark.parametrize("status", ["draft", "scheduled"])
def test_mark_pending_creates_the_record(status):
    post = PostFactory(channel=ChannelFactory(platform="api"), publication_status=status)
    post_mark_publishing_pending(post_id=post.id)
    assert stored(post).publication_status == "publishing_pending"
    assert ApiPublication.objects.filter(post=post, confirmed_at=None).exists()


def test_mark_pending_twice_changes_nothing_the_second_time():
    post = PostFactory(channel=ChannelFactory(platform="api"), publication_status="scheduled")
    post_mark_publishing_pending(post_id=post.id)
    first = stored(post).updated_at
    post_mark_publishing_pending(post_id=post.id)
    assert stored(post).updated_at == first
    assert ApiPublication.objects.filter(post=post).count() == 1


def test_mark_pending_adds_a_missing_record_to_a_pending_post():
    post = PostFactory(channel=ChannelFactory(platform="api"), publication_status="publishing_pending")
    post_mark_publishing_pending(post_id=post.id)
    assert ApiPublication.objects.filter(post=post).exists()


def test_mark_pending_refuses_other_platforms_and_published_posts():
    with pytest.raises(DomainError) as caught:
        post_mark_publishing_pending(post_id=PostFactory(channel=ChannelFactory(platform="blog")).id)
    assert caught.value.code == "only_api_platform"
    published = PostFactory(channel=ChannelFactory(platform="api"), publication_status="published")
    with pytest.raises(DomainError) as caught:
        post_mark_publishing_pending(post_id=published.id)
    assert caught.value.code == "invalid_status"
    with pytest.raises(NotFound):
        post_mark_publishing_pending(post_id=424242)


def test_workflow_round_trip_reuses_the_record():
    post = PostFactory(channel=ChannelFactory(platform="api"))
    post_mark_publishing_pending(post_id=post.id)
    record = ApiPublication.objects.get(post=post)
    account = post.channel.account
    post_publish(post_id=post.id, channel_id=post.channel_id, account=account, external_id="a")
    post_unpublish(post_id=post.id, channel_id=post.channel_id, account=account)
    post_mark_publishing_pending(post_id=post.id)
    post_publish(post_id=post.id, channel_id=post.channel_id, account=account, external_id="b")
    assert ApiPublication.objects.get(post=post).pk == record.pk
    assert stored(post).external_id == "b"


def test_publish_service_validates_external_fields_itself():
    record = ApiPublicationFactory()
    post = record.post
    with pytest.raises(InvalidInput) as caught:
        post_publish(post_id=post.id, channel_id=post.channel_id, account=post.channel.account, external_url="ftp://x")
    assert caught.value.details["field"] == "external_url"
    assert stored(post).publication_status == "publishing_pending"


# --- post_set_status (the admin's status field) ---


def test_blog_channel_publishes_and_unpublishes_directly():
    post = PostFactory(channel=ChannelFactory(platform="blog"))
    post_set_status(post_id=post.id, status="published")
    assert stored(post).publication_status == "published"
    assert stored(post).published_at is not None
    post_set_status(post_id=post.id, status="draft")
    assert (stored(post).publication_status, stored(post).published_at) == ("draft", None)


def test_scheduling_needs_a_time_and_stores_it():
    post = PostFactory()
    with pytest.raises(InvalidInput) as caught:
        post_set_status(post_id=post.id, status="scheduled")
    assert caught.value.details["field"] == "scheduled_at"
    when = timezone.now() + timedelta(days=2)
    post_set_status(post_id=post.id, status="scheduled", scheduled_at=when)
    assert (stored(post).publication_status, stored(post).scheduled_at) == ("scheduled", when)


def test_scheduling_in_the_past_is_refused_with_a_clear_message():
    post = PostFactory()
    with pytest.raises(InvalidInput) as caught:
        post_set_status(post_id=post.id, status="scheduled", scheduled_at=timezone.now() - timedelta(minutes=5))
    assert caught.value.details["field"] == "scheduled_at" and caught.value.details["rule"] == "future"
    assert "is in the past" in caught.value.message
    assert stored(post).publication_status == "draft"


def test_scheduling_in_the_past_is_possible_when_meant():
    post = PostFactory()
    post_set_status(
        post_id=post.id, status="scheduled", scheduled_at=timezone.now() - timedelta(minutes=5), allow_past=True
    )
    assert stored(post).publication_status == "scheduled"


def test_rescheduling_and_cancelling():
    post = PostFactory()
    later = timezone.now() + timedelta(days=1)
    post_set_status(post_id=post.id, status="scheduled", scheduled_at=later)
    post_set_status(post_id=post.id, status="scheduled", scheduled_at=later + timedelta(days=1))
    assert stored(post).scheduled_at == later + timedelta(days=1)
    post_set_status(post_id=post.id, status="draft")
    assert (stored(post).publication_status, stored(post).scheduled_at) == ("draft", None)


def test_publishing_pending_exists_only_on_api_channels():
    with pytest.raises(DomainError) as caught:
        post_set_status(
            post_id=PostFactory(channel=ChannelFactory(platform="linkedin")).id, status="publishing_pending"
        )
    assert caught.value.code == "only_api_platform"


def test_unknown_status_is_refused():
    with pytest.raises(InvalidInput):
        post_set_status(post_id=PostFactory().id, status="archived")


def test_api_channel_statuses_go_through_the_workflow():
    post = PostFactory(channel=ChannelFactory(platform="api"))
    with pytest.raises(DomainError) as caught:
        post_set_status(post_id=post.id, status="published")  # a draft cannot be confirmed
    assert caught.value.code == "invalid_status"
    post_set_status(post_id=post.id, status="publishing_pending")
    assert ApiPublication.objects.filter(post=post).exists()
    post_set_status(post_id=post.id, status="published")
    assert ApiPublication.objects.get(post=post).confirmed_at == stored(post).published_at
    post_set_status(post_id=post.id, status="scheduled", scheduled_at=timezone.now() + timedelta(hours=1))
    assert stored(post).publication_status == "scheduled"
    assert ApiPublication.objects.get(post=post).confirmed_at is None


def test_api_pending_post_without_record_cannot_be_published_from_the_admin():
    post = PostFactory(channel=ChannelFactory(platform="api"), publication_status="publishing_pending")
    with pytest.raises(DomainError) as caught:
        post_set_status(post_id=post.id, status="published")
    assert caught.value.code == "no_publication"
