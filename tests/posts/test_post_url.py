"""The single-post form's `url`: where readers find the post, once it is published."""

import pytest

from tests.factories import PostFactory, PublicationJobFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def read(api_key, client_for):
    def get(post) -> str | None:
        response = client_for(api_key).get(f"/v1/posts/{post.pk}")
        assert response.status_code == 200, response.content
        return response.json()["data"]["url"]

    return get


def test_a_published_blog_post_s_url_is_its_page_and_other_states_have_none(api_key, read, settings):
    settings.SITE_URL = "https://publish.example.com"
    post = PostFactory(channel__account=api_key.account, channel__platform="blog", channel__title="Notes", slug="hello")
    assert read(post) is None

    for status in ("scheduled", "publishing_pending", "draft"):
        post.publication_status = status
        post.save()
        assert read(post) is None

    post.publication_status = "published"
    post.save()
    assert read(post) == "https://publish.example.com/blog/notes/hello/"

    post.channel.domain = "notes.example.org"
    post.channel.save()
    assert read(post) == "https://notes.example.org/hello/"


def test_an_api_channel_s_published_post_is_at_its_external_url(api_key, read):
    post = PostFactory(
        channel__account=api_key.account,
        channel__platform="api",
        publication_status="published",
        external_url="https://partner.example.com/a/1",
    )
    assert read(post) == "https://partner.example.com/a/1"


def test_a_git_channel_s_post_is_where_its_latest_publication_put_it_until_it_is_unpublished(api_key, read):
    post = PostFactory(channel__account=api_key.account, channel__platform="git", publication_status="published")
    assert read(post) is None  # no destination has reported a page
    PublicationJobFactory(
        channel=post.channel, post_id=post.pk, state="succeeded", url="https://docs.example.com/posts/a/"
    )
    assert read(post) == "https://docs.example.com/posts/a/"

    PublicationJobFactory(channel=post.channel, post_id=post.pk, action="unpublish", state="queued")
    assert read(post) is None
