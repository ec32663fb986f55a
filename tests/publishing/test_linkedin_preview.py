"""A LinkedIn post's page in the Settings area shows it as LinkedIn's readers will see it, with its
length as LinkedIn counts it, or why it cannot be posted, before anyone schedules it."""

import pytest

from apps.posts.services import post_create
from apps.users.models import Role
from tests.conftest import admin_session
from tests.factories import ChannelFactory, TagFactory, UserFactory
from tests.publishing.test_settings_area import text_of

pytestmark = pytest.mark.django_db


def page_of(post, role=Role.EDITOR):
    client = admin_session(UserFactory(account=post.channel.account, role=role))
    return client.get(f"/admin/posts/post/{post.pk}/change/")


def test_a_linkedin_posts_page_shows_its_text_as_readers_see_it_and_its_length():
    channel = ChannelFactory(platform="linkedin")
    post = post_create(
        channel=channel,
        title="Hello (world)",
        body="First *words* here_now.\n\nSecond <b>para</b>.",
        tags=[TagFactory(account=channel.account, name="open source")],
    )

    response = page_of(post)

    assert response.status_code == 200
    page = text_of(response)
    # Unescaped, as LinkedIn shows it; the escapes are counted (LinkedIn counts what it is sent).
    assert "As it will be posted: Hello (world) First words here_now. Second para. #opensource" in page
    assert "66 of 3,000 characters." in page  # 63 shown, and 3 escapes
    assert "<b>para</b>" not in response.content.decode()


def test_a_linkedin_post_too_long_says_so_on_its_page_before_it_is_scheduled():
    channel = ChannelFactory(platform="linkedin")
    post = post_create(channel=channel, title="Long", body="word " * 700)

    page = text_of(page_of(post))

    assert "The post is too long for LinkedIn: its text would be 3," in page
    assert "give it a teaser" in page


def test_other_channels_posts_show_no_linkedin_text():
    post = post_create(channel=ChannelFactory(platform="git"), title="Hello (world)", body="Words.")

    page = text_of(page_of(post, Role.ADMIN))

    assert "As it will be posted: —" in page
    assert "of 3,000 characters" not in page
