"""An image uploaded over the API goes with its post to every destination, through the pipeline the
worker runs: committed beside the post in a git repository, posted through LinkedIn's Images API,
shown inline in a newsletter edition, and on the blog's page with its copies."""

import io
from urllib.parse import urlsplit

import pytest
from django.utils import timezone

from apps.media.models import Medium
from apps.media.storage import media_storage
from apps.media.variants import variants_make
from apps.posts.models import Post
from apps.posts.selectors import post_images
from apps.posts.serializers import document
from apps.publishing.newsletter import message
from apps.publishing.services import channel_run
from tests.factories import AdminUserFactory, ApiKeyFactory, ChannelFactory, NewsletterChannelFactory
from tests.media import images
from tests.publishing.conftest import files, front_matter

pytestmark = pytest.mark.django_db


def uploaded(client, data: bytes, name: str, alt_text: str = "") -> dict:
    file = io.BytesIO(data)
    file.name = name
    response = client.post("/v1/media", {"file": file, "alt_text": alt_text}, format="multipart")
    assert response.status_code == 201, response.content
    return response.json()["data"]


def src_of(medium: dict) -> str:
    return "/" + medium["url"].split("://", 1)[1].split("/", 1)[1]


def published(client, channel, *, body: str, media: list) -> dict:
    response = client.post(
        f"/v1/channels/{channel.pk}/posts",
        {"post": {"title": "Harbour", "body": body, "media": media, "publication_status": "published"}},
        format="json",
    )
    assert response.status_code == 201, response.content
    return response.json()["data"]


def test_a_git_channel_commits_the_images_with_the_post_and_points_the_markdown_at_them(
    git_channel, bare_repo, client_for
):
    api = client_for(ApiKeyFactory(user=AdminUserFactory(account=git_channel.account)))
    cover = uploaded(api, images.jpeg_with_gps(), "cover.jpg", alt_text="The harbour")
    inline = uploaded(api, images.png(300, 200), "map.png")

    published(api, git_channel, body=f"Where:\n\n![A map]({src_of(inline)})\n", media=[{"medium": cover["id"]}])
    channel_run(git_channel.pk)

    year = timezone.now().year
    repository = files(bare_repo)
    for medium in (cover, inline):
        name = Medium.objects.get(pk=medium["id"]).name
        with media_storage().open(name, "rb") as stored:
            assert repository[f"static/images/{year}/{name}"] == stored.read()
    meta, body = front_matter(repository["content/posts/harbour.md"])
    inline_name = Medium.objects.get(pk=inline["id"]).name
    assert f"![A map](/images/{year}/{inline_name})" in body
    assert meta["images"] == [f"/images/{year}/{Medium.objects.get(pk=cover['id']).name}"]


def test_a_linkedin_post_carries_the_uploaded_image_once(linkedin, linkedin_channel, client_for):
    api = client_for(ApiKeyFactory(user=AdminUserFactory(account=linkedin_channel.account)))
    data = images.png(640, 480)
    cover = uploaded(api, data, "cover.png", alt_text="The harbour at dawn")

    post = published(api, linkedin_channel, body="A morning walk.", media=[{"medium": cover["id"]}])
    channel_run(linkedin_channel.pk)

    [(urn, sent)] = linkedin.uploads
    with media_storage().open(Medium.objects.get(pk=cover["id"]).name, "rb") as stored:
        assert sent == stored.read()
    [linkedin_post] = linkedin.posts.values()
    assert linkedin_post["content"] == {"media": {"id": urn, "altText": "The harbour at dawn"}}

    path = f"/v1/channels/{linkedin_channel.pk}/posts/{post['id']}"
    api.patch(path, {"post": {"body": "A morning walk, edited."}}, format="json")
    channel_run(linkedin_channel.pk)
    assert len(linkedin.uploads) == 1


def test_a_newsletter_edition_shows_the_image_from_its_public_address(client_for):
    channel = NewsletterChannelFactory(title="Field Notes")
    api = client_for(ApiKeyFactory(user=AdminUserFactory(account=channel.account)))
    inline = uploaded(api, images.png(1200, 800), "chart.png", alt_text="Sales by month")
    created = api.post(
        f"/v1/channels/{channel.pk}/posts",
        {"post": {"title": "Numbers", "body": f"![]({src_of(inline)})\n"}},
        format="json",
    )
    post = Post.objects.get(pk=created.json()["data"]["id"])

    rendered = message.render(
        channel=channel, document=document(post, action="publish", published_at=timezone.now(), link=None)
    )

    html = rendered.html
    assert f'src="{inline["url"]}"' in html
    assert 'alt="Sales by month"' in html
    assert 'width="536"' in html


def test_the_blog_page_shows_the_image_with_its_copies_and_size(client_for, client):
    channel = ChannelFactory(platform="blog")
    api = client_for(ApiKeyFactory(user=AdminUserFactory(account=channel.account)))
    photo = uploaded(api, images.jpeg_with_gps(1200, 800), "photo.jpg", alt_text="Boats")
    variants_make(photo["id"])
    post = published(api, channel, body=f"Look:\n\n![Boats]({src_of(photo)})\n", media=[])

    images_of_post = post_images(Post.objects.get(pk=post["id"]))
    assert [image.medium_id for image in images_of_post] == [photo["id"]]
    assert not images_of_post[0].attached
    page = client.get(urlsplit(post["url"]).path)
    assert page.status_code == 200
    html = page.content.decode()
    assert 'width="1200"' in html and 'height="800"' in html
    assert "-480w.jpg 480w" in html or "-480w.webp 480w" in html
