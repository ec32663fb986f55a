"""The media library's other endpoints: listing and searching, the alt text, deleting what no live
post shows, and the files the web process serves."""

import io

import pytest

from apps.media.models import Medium
from apps.media.storage import media_storage
from apps.posts.models import PublicationStatus
from tests.factories import ApiKeyFactory, ChannelFactory, PostFactory
from tests.media import images

pytestmark = pytest.mark.django_db


def named(data: bytes, name: str):
    file = io.BytesIO(data)
    file.name = name
    return file


@pytest.fixture
def key():
    return ApiKeyFactory(scopes=["read:media", "write:media", "read:posts", "write:posts"])


@pytest.fixture
def writer(key, client_for):
    return client_for(key)


def uploaded(client, name: str = "photo.png", alt_text: str = "", data: bytes | None = None) -> dict:
    response = client.post(
        "/v1/media", {"file": named(data or images.png(), name), "alt_text": alt_text}, format="multipart"
    )
    assert response.status_code == 201, response.content
    return response.json()["data"]


def test_the_list_is_newest_first_and_searches_names_and_alt_texts(writer):
    first = uploaded(writer, "harbour-at-dawn.png", data=images.png(100, 80))
    second = uploaded(writer, "team.png", alt_text="The team at the harbour", data=images.png(90, 70))
    uploaded(writer, "chart.png", alt_text="Sales", data=images.png(80, 60))

    listed = writer.get("/v1/media").json()
    assert [item["id"] for item in listed["data"]][-1] == first["id"]
    assert listed["meta"]["count"] == 3
    found = writer.get("/v1/media", {"search": "harbour"}).json()["data"]
    assert {item["id"] for item in found} == {first["id"], second["id"]}


def test_the_alt_text_changes_and_nothing_else_may(writer):
    medium = uploaded(writer)

    changed = writer.patch(f"/v1/media/{medium['id']}", {"alt_text": "A red square"}, format="json")
    assert changed.status_code == 200
    assert changed.json()["data"]["alt_text"] == "A red square"

    refused = writer.patch(f"/v1/media/{medium['id']}", {"alt_text": "x", "width": 5}, format="json")
    assert refused.status_code == 400
    assert refused.json()["error"]["details"]["rule"] == "read_only"


def test_a_medium_a_published_post_shows_cannot_be_deleted_and_the_answer_lists_the_posts(writer, key):
    medium = uploaded(writer)
    channel = ChannelFactory(account=key.account)
    post = PostFactory(channel=channel, publication_status=PublicationStatus.DRAFT)
    attached = writer.patch(
        f"/v1/channels/{channel.pk}/posts/{post.pk}",
        {"post": {"media": [{"medium": medium["id"], "alt_text": "Our logo"}]}},
        format="json",
    )
    assert attached.status_code == 200, attached.content
    post.publication_status = PublicationStatus.PUBLISHED
    post.save(update_fields=["publication_status"])

    response = writer.delete(f"/v1/media/{medium['id']}")

    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "in_use"
    assert [item["id"] for item in error["details"]["posts"]] == [post.pk]
    assert Medium.objects.filter(pk=medium["id"]).exists()


def test_a_medium_only_a_published_body_shows_is_in_use_too(writer, key):
    medium = uploaded(writer)
    channel = ChannelFactory(account=key.account)
    post = PostFactory(channel=channel)
    src = medium["url"].split("://", 1)[1].split("/", 1)[1]
    body = f"Look:\n\n![A square](/{src})\n"
    assert (
        writer.patch(f"/v1/channels/{channel.pk}/posts/{post.pk}", {"post": {"body": body}}, format="json").status_code
        == 200
    )
    post.publication_status = PublicationStatus.SCHEDULED
    post.save(update_fields=["publication_status"])

    assert writer.delete(f"/v1/media/{medium['id']}").status_code == 409


def test_deleting_a_medium_a_draft_attached_removes_the_attachment_and_the_file(
    writer, key, django_capture_on_commit_callbacks
):
    medium = uploaded(writer)
    channel = ChannelFactory(account=key.account)
    post = PostFactory(channel=channel)
    writer.patch(
        f"/v1/channels/{channel.pk}/posts/{post.pk}", {"post": {"media": [{"medium": medium["id"]}]}}, format="json"
    )
    name = Medium.objects.get(pk=medium["id"]).name

    with django_capture_on_commit_callbacks(execute=True):
        response = writer.delete(f"/v1/media/{medium['id']}")

    assert response.status_code == 204
    assert not post.media.exists()
    assert not media_storage().exists(name)


def test_a_file_two_media_share_stays_until_the_last_goes(writer, django_capture_on_commit_callbacks):
    data = images.png()
    first, second = uploaded(writer, data=data), uploaded(writer, data=data)
    name = Medium.objects.get(pk=first["id"]).name

    with django_capture_on_commit_callbacks(execute=True):
        assert writer.delete(f"/v1/media/{first['id']}").status_code == 204
    assert media_storage().exists(name)
    with django_capture_on_commit_callbacks(execute=True):
        assert writer.delete(f"/v1/media/{second['id']}").status_code == 204
    assert not media_storage().exists(name)


def test_a_post_shows_an_uploaded_medium_among_its_media(writer, key):
    medium = uploaded(writer, alt_text="Library text")
    channel = ChannelFactory(account=key.account)
    post = PostFactory(channel=channel)

    response = writer.patch(
        f"/v1/channels/{channel.pk}/posts/{post.pk}",
        {
            "post": {
                "media": [{"medium": medium["id"]}, {"url": "https://cdn.example.com/a.jpg", "alt_text": "Elsewhere"}]
            }
        },
        format="json",
    )

    assert response.status_code == 200, response.content
    media = response.json()["data"]["media"]
    assert media[0] | {"id": None} == {
        "id": None,
        "medium": medium["id"],
        "kind": "image",
        "url": medium["url"],
        "alt_text": "Library text",
        "width": medium["width"],
        "height": medium["height"],
    }
    assert media[1]["medium"] is None and media[1]["url"] == "https://cdn.example.com/a.jpg"


def test_the_same_media_list_sent_again_changes_nothing(writer, key):
    medium = uploaded(writer)
    channel = ChannelFactory(account=key.account)
    post = PostFactory(channel=channel)
    path = f"/v1/channels/{channel.pk}/posts/{post.pk}"
    first = writer.patch(path, {"post": {"media": [{"medium": medium["id"]}]}}, format="json").json()["data"]

    again = writer.patch(path, {"post": {"media": [{"medium": medium["id"]}]}}, format="json").json()["data"]

    assert again["updated_at"] == first["updated_at"]
    assert again["media"] == first["media"]


@pytest.mark.parametrize(
    ("entry", "rule"),
    [({}, "one_of"), ({"medium": 1, "url": "https://x.example/a.png"}, "one_of"), ({"medium": 999999}, "not_found")],
)
def test_a_media_entry_names_a_medium_of_the_account_or_a_url(writer, key, entry, rule):
    channel = ChannelFactory(account=key.account)
    post = PostFactory(channel=channel)

    response = writer.patch(f"/v1/channels/{channel.pk}/posts/{post.pk}", {"post": {"media": [entry]}}, format="json")

    assert response.status_code == 400, response.content
    assert response.json()["error"]["details"]["rule"] == rule


def test_another_accounts_medium_cannot_be_attached(writer, key, client_for):
    other = client_for(ApiKeyFactory(scopes=["write:media"]))
    foreign = uploaded(other)
    channel = ChannelFactory(account=key.account)
    post = PostFactory(channel=channel)

    response = writer.patch(
        f"/v1/channels/{channel.pk}/posts/{post.pk}", {"post": {"media": [{"medium": foreign["id"]}]}}, format="json"
    )

    assert response.status_code == 400
    assert response.json()["error"]["details"]["rule"] == "not_found"


def test_the_web_process_serves_a_file_with_its_stored_type_and_runs_nothing(writer, client):
    medium = uploaded(writer, data=images.png(50, 40))
    path = "/" + medium["url"].split("://", 1)[1].split("/", 1)[1]

    response = client.get(path)

    assert response.status_code == 200
    assert response["Content-Type"] == "image/png"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Disposition"] == "inline"
    assert "sandbox" in response["Content-Security-Policy"] and "script-src" not in response["Content-Security-Policy"]
    assert "immutable" in response["Cache-Control"]
    assert b"".join(response.streaming_content) == media_storage().open(Medium.objects.get(pk=medium["id"]).name).read()
    again = client.get(path, HTTP_IF_NONE_MATCH=response["ETag"])
    assert again.status_code == 304


@pytest.mark.parametrize("path", ["/media/../settings.py", "/media/photo.html", "/media/" + "a" * 64 + ".svg"])
def test_names_that_are_not_stored_uploads_are_not_served(client, path):
    assert client.get(path).status_code == 404
