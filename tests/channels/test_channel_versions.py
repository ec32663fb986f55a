"""A channel's version changes in the transaction of every change of what its representations
show, by whatever path the change comes, and of nothing else's."""

from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from apps.channels.models import Channel
from apps.posts.content_plan import content_plan_run
from apps.posts.editor_status import post_set_status
from apps.posts.models import Media, Post, Tag
from apps.posts.services import MediaInput, post_create, post_update_content
from tests.factories import ApiPublicationFactory, ChannelFactory, MediaFactory, PostFactory, TagFactory, TeamFactory
from tests.posts.test_post_admin import CHANGELIST, change_url, form_data

pytestmark = pytest.mark.django_db


def version_of(channel) -> int:
    return Channel.objects.values_list("version", flat=True).get(pk=channel.pk)


@pytest.fixture
def channel():
    return ChannelFactory()


@pytest.fixture
def other(channel):
    """A channel of the same account and team, whose changes must leave `channel` alone."""
    return ChannelFactory(account=channel.account, team=channel.team)


@pytest.fixture
def post(channel):
    post = PostFactory(channel=channel, tags=[TagFactory(account=channel.account)])
    MediaFactory(post=post)
    return post


def changes(channel, change) -> bool:
    before = version_of(channel)
    change()
    return version_of(channel) != before


# --- every path that changes what a channel shows ---


def test_creating_a_post_through_the_service_changes_its_channel(channel, other):
    assert changes(channel, lambda: post_create(channel=channel, title="New"))
    assert not changes(channel, lambda: post_create(channel=other, title="Elsewhere"))


def test_editing_a_post_changes_its_channel(channel, post):
    assert changes(channel, lambda: post_update_content(post=post, title="Renamed"))
    assert changes(channel, lambda: post_update_content(post=post, tags=[]))
    assert changes(channel, lambda: post_update_content(post=post, media=[MediaInput(url="https://e.example/a.png")]))


def test_a_status_change_changes_its_channel(channel, post):
    assert changes(channel, lambda: post_set_status(post_id=post.pk, status="published"))


def test_deleting_a_post_changes_its_channel(channel, post):
    assert changes(channel, post.delete)


def test_moving_a_post_changes_both_channels(channel, other, post):
    before = version_of(other)
    assert changes(channel, lambda: Post.objects.filter(pk=post.pk).update(channel=other))
    assert version_of(other) != before


def test_bulk_statements_change_every_channel_they_touch_and_no_other(channel, other, post):
    third = ChannelFactory()
    PostFactory(channel=other)
    before = {c.pk: version_of(c) for c in (channel, other, third)}
    Post.objects.filter(channel__in=[channel, other]).update(title="Bulk")
    after = {c.pk: version_of(c) for c in (channel, other, third)}
    assert after[channel.pk] != before[channel.pk]
    assert after[other.pk] != before[other.pk]
    assert after[third.pk] == before[third.pk]


def test_raw_sql_changes_its_channel(channel, post):
    def raw_update():
        with connection.cursor() as cursor:
            cursor.execute("UPDATE posts_post SET teaser = 'raw' WHERE id = %s", [post.pk])

    assert changes(channel, raw_update)


def test_tag_links_and_tag_renames_and_deletes_change_the_channels_of_their_posts(channel, other, post):
    tag = post.tags.get()
    lone = TagFactory(account=channel.account)
    assert changes(channel, lambda: post.tags.add(lone))
    assert changes(channel, lambda: post.tags.remove(lone))
    assert changes(channel, lambda: Tag.objects.filter(pk=tag.pk).update(name="renamed"))
    assert not changes(other, lambda: Tag.objects.filter(pk=tag.pk).update(name="renamed again"))
    assert changes(channel, tag.delete)


def test_media_changes_change_the_channel_of_their_post(channel, post):
    media = post.media.get()
    assert changes(channel, lambda: MediaFactory(post=post))
    assert changes(channel, lambda: Media.objects.filter(pk=media.pk).update(alt_text="new"))
    assert changes(channel, media.delete)


def test_team_renames_and_deletes_change_the_team_s_channels(channel):
    team = channel.team
    outside = ChannelFactory(account=channel.account, team=TeamFactory(account=channel.account))
    assert changes(channel, lambda: type(team).objects.filter(pk=team.pk).update(name="Renamed"))
    assert not changes(outside, lambda: type(team).objects.filter(pk=team.pk).update(name="Again"))
    assert changes(channel, team.delete)


def test_editing_the_channel_changes_it_even_when_saved_from_a_stale_instance(channel, post):
    stale = Channel.objects.get(pk=channel.pk)
    post_update_content(post=post, title="Moved on")  # a new version the stale instance never saw
    newer = version_of(channel)
    stale.title = "Edited"
    stale.save()
    assert version_of(channel) not in {newer, stale.version}


def test_the_content_plan_changes_the_channels_of_the_posts_it_moves(channel, other):
    PostFactory(channel=channel, publication_status="scheduled", scheduled_at=timezone.now() - timedelta(minutes=1))
    PostFactory(channel=other, publication_status="draft")
    before = version_of(other)
    assert changes(channel, lambda: content_plan_run())
    assert version_of(other) == before


def test_the_api_s_publish_and_unpublish_change_the_channel(authed, api_key):
    post = ApiPublicationFactory(post__channel__account=api_key.account, post__channel__platform="api").post
    url = f"/v1/channels/{post.channel_id}/posts/{post.pk}"
    assert changes(post.channel, lambda: authed.patch(f"{url}/publish"))
    assert changes(post.channel, lambda: authed.patch(f"{url}/unpublish"))
    # A refused call changes nothing.
    assert not changes(post.channel, lambda: authed.patch(f"{url}/unpublish"))


def test_admin_edits_and_actions_change_the_channel(admin_client, channel, post):
    def admin_edit():
        response = admin_client.post(change_url(post), form_data(post, title="Edited in the admin"))
        assert response.status_code == 302

    assert changes(channel, admin_edit)
    api_post = ApiPublicationFactory(post__channel__platform="api").post
    assert changes(
        api_post.channel,
        lambda: admin_client.post(CHANGELIST, {"action": "confirm_publication", "_selected_action": [api_post.pk]}),
    )


def test_a_rolled_back_change_leaves_the_version_as_it_was(channel, post):
    before = version_of(channel)
    with pytest.raises(RuntimeError), transaction.atomic():
        post_update_content(post=post, title="Never")
        raise RuntimeError
    assert version_of(channel) == before


def test_nothing_that_a_channel_does_not_show_changes_it(channel, post):
    assert not changes(channel, lambda: ApiPublicationFactory(post__channel=ChannelFactory(account=channel.account)))
    assert not changes(channel, lambda: TagFactory(account=channel.account))
