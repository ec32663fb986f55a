"""Uploading images to the media library over the API: what is taken, what is refused, what is kept."""

import io

import pytest
from django.test import override_settings
from PIL import Image, ImageChops, ImageStat

from apps.media.models import Medium
from apps.media.storage import media_storage
from tests.factories import AccountFactory, ApiKeyFactory
from tests.media import images

pytestmark = pytest.mark.django_db


def upload(client, data: bytes, name: str = "photo.png", **fields):
    return client.post("/v1/media", {"file": named(data, name), **fields}, format="multipart")


def named(data: bytes, name: str):
    file = io.BytesIO(data)
    file.name = name
    return file


def stored(medium_id: int) -> Image.Image:
    medium = Medium.objects.get(pk=medium_id)
    with media_storage().open(medium.name, "rb") as file:
        image = Image.open(io.BytesIO(file.read()))
        image.load()
    return image


def difference(first: Image.Image, second: Image.Image) -> float:
    """The mean difference of the two pictures' pixels (0-255): a re-encoding stays within a few."""
    diff = ImageChops.difference(first.convert("RGB"), second.convert("RGB"))
    return sum(ImageStat.Stat(diff).mean) / 3


@pytest.fixture
def writer(client_for):
    return client_for(ApiKeyFactory(scopes=["read:media", "write:media"]))


def test_a_png_is_stored_and_read_back_with_its_size(writer):
    original = images.png(640, 480)
    response = writer.post(
        "/v1/media", {"file": named(original, "chart.png"), "alt_text": "A chart"}, format="multipart"
    )

    assert response.status_code == 201, response.content
    data = response.json()["data"]
    assert {key: data[key] for key in ("kind", "mime_type", "width", "height", "alt_text")} == {
        "kind": "image",
        "mime_type": "image/png",
        "width": 640,
        "height": 480,
        "alt_text": "A chart",
    }
    assert set(data) == {
        "id",
        "url",
        "kind",
        "mime_type",
        "width",
        "height",
        "bytes",
        "alt_text",
        "created_at",
        "variants",
    }
    assert response["Location"].endswith(f"/v1/media/{data['id']}")
    assert data["url"].endswith(".png") and "/media/" in data["url"]
    assert difference(stored(data["id"]), Image.open(io.BytesIO(original))) == 0
    assert data["bytes"] == media_storage().size(Medium.objects.get(pk=data["id"]).name)
    assert writer.get(f"/v1/media/{data['id']}").json()["data"] == data


def test_a_jpeg_loses_its_gps_position_exif_and_comment_and_keeps_its_picture(writer):
    original = images.jpeg_with_gps()
    assert Image.open(io.BytesIO(original)).getexif().get_ifd(images.GPS_IFD)

    response = upload(writer, original, "holiday.jpg")

    assert response.status_code == 201, response.content
    kept = stored(response.json()["data"]["id"])
    assert kept.format == "JPEG"
    assert not kept.getexif()
    assert "exif" not in kept.info and "comment" not in kept.info and "xmp" not in kept.info
    medium = Medium.objects.get(pk=response.json()["data"]["id"])
    with media_storage().open(medium.name, "rb") as file:
        raw = file.read()
    assert b"PhoneMaker" not in raw and b"secret comment" not in raw
    assert kept.size == (640, 480)
    assert difference(kept, Image.open(io.BytesIO(original))) < 2


def test_a_photo_taken_sideways_is_stored_upright(writer):
    # Orientation 6: the camera was turned; viewers rotate it 90 degrees clockwise.
    response = upload(writer, images.jpeg_with_gps(640, 480, orientation=6), "sideways.jpg")

    assert response.status_code == 201, response.content
    data = response.json()["data"]
    assert (data["width"], data["height"]) == (480, 640)
    assert stored(data["id"]).size == (480, 640)


def test_an_animated_gif_keeps_its_frames(writer):
    response = upload(writer, images.animated_gif(frames=4), "spinner.gif")

    assert response.status_code == 201, response.content
    kept = stored(response.json()["data"]["id"])
    assert kept.format == "GIF" and kept.n_frames == 4
    assert response.json()["data"]["mime_type"] == "image/gif"


@pytest.mark.parametrize(
    ("make", "name", "mime_type"),
    [(images.webp, "photo.webp", "image/webp"), (images.avif, "photo.avif", "image/avif")],
)
def test_webp_and_avif_are_taken(writer, make, name, mime_type):
    original = make()
    response = upload(writer, original, name)

    assert response.status_code == 201, response.content
    assert response.json()["data"]["mime_type"] == mime_type
    kept = stored(response.json()["data"]["id"])
    assert kept.size == Image.open(io.BytesIO(original)).size
    assert difference(kept, Image.open(io.BytesIO(original))) < 6


def test_the_type_comes_from_the_content_not_the_name(writer):
    response = upload(writer, images.png(), "photo.jpg")

    assert response.status_code == 201
    assert response.json()["data"]["mime_type"] == "image/png"
    assert response.json()["data"]["url"].endswith(".png")


@pytest.mark.parametrize(
    ("data", "name", "rule"),
    [
        (images.SVG_WITH_SCRIPT, "logo.svg", "markup"),
        (images.HTML_PAGE, "photo.png", "markup"),
        (b"just some text, not an image", "photo.png", "unsupported_type"),
        (images.png_html_polyglot(), "photo.png", "markup"),
        (images.decompression_bomb(), "bomb.png", "too_many_pixels"),
        (images.truncated_jpeg(), "cut.jpg", "corrupt"),
        (b"", "empty.png", "empty"),
    ],
    ids=[
        "svg-with-script",
        "html-named-png",
        "text",
        "png-html-polyglot",
        "decompression-bomb",
        "truncated-jpeg",
        "empty",
    ],
)
def test_hostile_and_broken_files_are_refused_with_a_clear_error(writer, data, name, rule):
    response = upload(writer, data, name)

    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert (error["details"]["field"], error["details"]["rule"]) == ("file", rule)
    assert not Medium.objects.exists()


def test_an_svg_without_script_is_refused_too(writer):
    svg = b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>'
    response = upload(writer, svg, "plain.svg")

    assert response.status_code == 400
    assert response.json()["error"]["details"]["rule"] in ("markup", "unsupported_type")


def test_a_body_over_the_limit_is_refused_before_it_is_read(writer):
    response = upload(writer, b"\0" * (25 * 1024 * 1024), "huge.png")

    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"


@override_settings(MEDIA_MAX_BYTES=50_000)
def test_a_file_over_media_max_bytes_is_refused(writer):
    response = upload(writer, images.noise_png(200, 200), "big.png")

    assert response.status_code == 400
    assert response.json()["error"]["details"]["rule"] == "too_large"
    assert not Medium.objects.exists()


def test_without_a_file_the_error_names_the_field(writer):
    response = writer.post("/v1/media", {"alt_text": "nothing"}, format="multipart")

    assert response.status_code == 400
    assert response.json()["error"]["details"]["field"] == "file"


def test_a_json_body_is_not_an_upload(writer):
    response = writer.post("/v1/media", {"file": "aGVsbG8="}, format="json")

    assert response.status_code == 415


def test_uploading_needs_the_write_media_scope_and_articles_write(client_for):
    reader = client_for(ApiKeyFactory(scopes=["read:media"]))
    assert upload(reader, images.png()).status_code == 403

    viewer_key = ApiKeyFactory(scopes=["write:media"], user__role="viewer")
    response = upload(client_for(viewer_key), images.png())
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "permission_denied"


def test_the_same_picture_uploaded_twice_shares_one_file(writer):
    data = images.png()
    first = upload(writer, data).json()["data"]
    second = upload(writer, data).json()["data"]

    assert first["id"] != second["id"]
    assert first["url"] == second["url"]


def test_another_accounts_media_are_not_found(writer, client_for):
    medium_id = upload(writer, images.png()).json()["data"]["id"]
    other = client_for(ApiKeyFactory(user__account=AccountFactory(), scopes=["read:media", "write:media"]))

    assert other.get(f"/v1/media/{medium_id}").status_code == 404
    assert other.patch(f"/v1/media/{medium_id}", {"alt_text": "x"}, format="json").status_code == 404
    assert other.delete(f"/v1/media/{medium_id}").status_code == 404
    assert other.get("/v1/media").json()["data"] == []


def test_an_upload_retried_with_its_idempotency_key_is_stored_once(writer):
    data = images.png()
    first = writer.post(
        "/v1/media", {"file": named(data, "a.png")}, format="multipart", HTTP_IDEMPOTENCY_KEY="upload-1"
    )
    again = writer.post(
        "/v1/media", {"file": named(data, "a.png")}, format="multipart", HTTP_IDEMPOTENCY_KEY="upload-1"
    )
    other = writer.post(
        "/v1/media", {"file": named(images.png(20, 20), "a.png")}, format="multipart", HTTP_IDEMPOTENCY_KEY="upload-1"
    )

    assert first.status_code == again.status_code == 201
    assert again["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert Medium.objects.count() == 1
    assert other.status_code == 422
    assert other.json()["error"]["code"] == "idempotency_key_reused"


def test_a_store_that_fails_is_a_503_and_nothing_is_kept(writer, monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(media_storage().__class__, "_save", refuse)

    response = upload(writer, images.png(), "photo.png")

    assert response.status_code == 503
    assert response.json()["error"]["code"] == "store_unavailable"
    assert not Medium.objects.exists()
