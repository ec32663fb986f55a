"""The spec types `teaser` and `slug` as strings: a post without a teaser has "", and every post has
a slug, made from its title when none is given, unique in its channel, whichever way it was saved."""

import pytest
from django.db import IntegrityError, connection
from django.db.migrations.executor import MigrationExecutor

from apps.core.errors import InvalidInput
from apps.posts import services
from apps.posts.models import SLUG_MAX_LENGTH, Post
from apps.posts.services import post_create, post_update_content
from tests.factories import AccountFactory, ApiKeyFactory, ChannelFactory, PostFactory
from tests.posts.test_post_admin import change_url, form_data

pytestmark = pytest.mark.django_db


@pytest.fixture
def channel():
    return ChannelFactory()


def test_a_post_created_without_a_slug_gets_one_from_its_title(channel):
    post = post_create(channel=channel, title="Hello, World: 2026 edition!")
    assert post.slug == "hello-world-2026-edition"
    assert Post.objects.get(pk=post.pk).slug == "hello-world-2026-edition"


@pytest.mark.parametrize("given", [None, "", "   "])
def test_an_empty_or_missing_slug_and_teaser_become_a_made_slug_and_an_empty_teaser(channel, given):
    post = post_create(channel=channel, title="Launch", slug=given, teaser=given)
    assert (post.slug, post.teaser) == ("launch", "")


def test_made_slugs_are_unique_in_the_channel_and_numbered_from_2(channel):
    slugs = [post_create(channel=channel, title="Weekly notes").slug for _ in range(3)]
    assert slugs == ["weekly-notes", "weekly-notes-2", "weekly-notes-3"]
    # Another channel has its own slugs.
    assert post_create(channel=ChannelFactory(account=channel.account), title="Weekly notes").slug == "weekly-notes"


def test_past_ten_numbers_a_made_slug_gets_a_random_suffix(channel):
    for _ in range(10):
        post_create(channel=channel, title="Daily")
    slug = post_create(channel=channel, title="Daily").slug
    assert slug.startswith("daily-") and len(slug) == len("daily-") + 8
    assert Post.objects.filter(channel=channel, slug=slug).count() == 1


@pytest.mark.parametrize(
    ("title", "slug"), [("日本語のタイトル", "post"), ("Ünïcödé straße", "unicode-strae"), ("---", "post")]
)
def test_a_title_without_latin_letters_still_gives_a_slug(channel, title, slug):
    assert post_create(channel=channel, title=title).slug == slug


def test_a_long_title_gives_a_slug_within_the_limit_even_when_numbered(channel):
    title = "word " * 59
    first, second = (post_create(channel=channel, title=title).slug for _ in range(2))
    assert len(first) <= SLUG_MAX_LENGTH and len(second) <= SLUG_MAX_LENGTH
    assert second.endswith("-2") and first != second


def test_a_given_slug_is_kept_and_a_taken_one_is_refused(channel):
    assert post_create(channel=channel, title="A", slug="my-slug").slug == "my-slug"
    with pytest.raises(InvalidInput) as refused:
        post_create(channel=channel, title="B", slug="my-slug")
    assert "slug" in str(refused.value.details)


def test_an_edit_keeps_the_slug_and_emptying_it_makes_a_new_one_from_the_title(channel):
    post = post_create(channel=channel, title="First title")
    post, changed = post_update_content(post=post, title="Second title")
    assert post.slug == "first-title" and changed == ["title"]
    post, changed = post_update_content(post=post, slug="", teaser=None)
    assert post.slug == "second-title" and changed == ["slug"]
    # Emptying a slug that the title would give again changes nothing.
    post, changed = post_update_content(post=post, slug="")
    assert post.slug == "second-title" and changed == []


def test_a_made_slug_taken_between_the_check_and_the_write_gets_a_random_suffix(channel, monkeypatch):
    PostFactory(channel=channel, slug="race")
    # As if another request took the slug after this one found it free (a made slug is not checked again).
    monkeypatch.setattr(services, "_free_slug", lambda **_: "race")
    post = post_create(channel=channel, title="Race")
    assert post.slug.startswith("race-") and post.slug != "race"


def test_the_database_refuses_a_post_without_a_slug(channel):
    with pytest.raises(IntegrityError):
        Post.objects.create(channel=channel, title="Raw", slug="")


def test_a_post_saved_in_the_admin_with_empty_teaser_and_slug_reads_back_with_strings(admin_client, client_for):
    channel = ChannelFactory()
    response = admin_client.post(
        "/admin/posts/post/add/", form_data(channel=channel.pk, title="From the admin", teaser="", slug="")
    )
    assert response.status_code == 302, response.context and response.context["adminform"].form.errors
    post = Post.objects.get(title="From the admin")
    # An edit that empties the slug again gets one made from the (new) title.
    admin_client.post(change_url(post), form_data(post, title="Renamed in the admin", slug="", teaser=""))

    key = ApiKeyFactory(user__account=channel.account)
    for path in (f"/v1/posts/{post.pk}", f"/v1/channels/{channel.pk}/posts"):
        body = client_for(key).get(path).json()["data"]
        data = body if isinstance(body, dict) else body[0]
        assert data["teaser"] == ""
        assert data["slug"] == "renamed-in-the-admin"


@pytest.mark.django_db(transaction=True)
def test_the_migration_fills_teasers_and_slugs_of_existing_posts():
    executor = MigrationExecutor(connection)
    before = [("posts", "0001_initial"), ("channels", "0003_posts_count")]
    executor.migrate(before)
    # Models of that state: later migrations (channels 0004) add columns the current models write.
    state = executor.loader.project_state(before).apps
    Post_, Channel_ = state.get_model("posts", "Post"), state.get_model("channels", "Channel")
    account = AccountFactory()
    channel = Channel_.objects.create(account_id=account.pk, title="Blog", platform="blog")
    other = Channel_.objects.create(account_id=account.pk, title="Other", platform="blog")
    rows = [
        Post_.objects.create(channel_id=channel.pk, title="Same", teaser=None, slug="same"),
        Post_.objects.create(channel_id=channel.pk, title="Same", teaser=None, slug=None),
        Post_.objects.create(channel_id=channel.pk, title="Same", teaser="Kept", slug=""),
        Post_.objects.create(channel_id=other.pk, title="Same", teaser=None, slug=None),
        Post_.objects.create(channel_id=channel.pk, title="中文", teaser=None, slug=None),
    ]
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    filled = {post.pk: (post.slug, post.teaser) for post in Post.objects.filter(pk__in=[row.pk for row in rows])}
    assert [filled[row.pk] for row in rows] == [
        ("same", ""),
        ("same-2", ""),
        ("same-3", "Kept"),
        ("same", ""),
        ("post", ""),
    ]
