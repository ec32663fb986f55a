"""The responsive copies of an upload: made once by the worker, whole or not at all, recorded only
when all are there, and asked again by the sweeper when a worker stopped."""

import io
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.utils import timezone
from PIL import Image

from apps.media import variants
from apps.media.models import Medium
from apps.media.storage import media_storage
from apps.media.tasks import sweep_variants
from tests.factories import ApiKeyFactory
from tests.media import images

pytestmark = pytest.mark.django_db


def upload(client, data: bytes, name: str) -> Medium:
    file = io.BytesIO(data)
    file.name = name
    response = client.post("/v1/media", {"file": file}, format="multipart")
    assert response.status_code == 201, response.content
    return Medium.objects.get(pk=response.json()["data"]["id"])


@pytest.fixture
def writer(client_for):
    return client_for(ApiKeyFactory(scopes=["read:media", "write:media"]))


def opened(name: str) -> Image.Image:
    with media_storage().open(name, "rb") as file:
        image = Image.open(io.BytesIO(file.read()))
        image.load()
    return image


def test_a_wide_photo_gets_webp_and_jpeg_copies_at_each_narrower_width(writer, settings):
    settings.MEDIA_VARIANT_WIDTHS = [480, 960, 1600]
    medium = upload(writer, images.jpeg_with_gps(1200, 800), "wide.jpg")

    assert variants.variants_make(medium.pk) is True

    medium.refresh_from_db()
    assert medium.variants_made_at is not None
    made = [(v["width"], v["height"], v["mime_type"]) for v in medium.variants]
    assert made == [
        (480, 320, "image/webp"),
        (480, 320, "image/jpeg"),
        (960, 640, "image/webp"),
        (960, 640, "image/jpeg"),
    ]
    for variant in medium.variants:
        copy = opened(variant["name"])
        assert copy.size == (variant["width"], variant["height"])
        assert copy.format == {"image/webp": "WEBP", "image/jpeg": "JPEG"}[variant["mime_type"]]
        assert not copy.getexif()


def test_the_api_lists_the_copies_once_made(writer, settings):
    settings.MEDIA_VARIANT_WIDTHS = [480]
    medium = upload(writer, images.png(800, 600), "wide.png")
    assert writer.get(f"/v1/media/{medium.pk}").json()["data"]["variants"] == []

    variants.variants_make(medium.pk)

    listed = writer.get(f"/v1/media/{medium.pk}").json()["data"]["variants"]
    assert [(v["width"], v["mime_type"]) for v in listed] == [(480, "image/webp"), (480, "image/png")]
    assert all(v["url"].endswith(("-480w.webp", "-480w.png")) for v in listed)


def test_a_small_image_and_an_animation_get_no_copies(writer, settings):
    settings.MEDIA_VARIANT_WIDTHS = [480]
    small = upload(writer, images.png(300, 200), "small.png")
    animation = upload(writer, images.animated_gif(), "spinner.gif")

    for medium in (small, animation):
        assert variants.variants_make(medium.pk) is True
        medium.refresh_from_db()
        assert medium.variants == [] and medium.variants_made_at is not None


def test_making_them_again_changes_nothing(writer, settings):
    settings.MEDIA_VARIANT_WIDTHS = [480]
    medium = upload(writer, images.png(800, 600), "wide.png")
    variants.variants_make(medium.pk)
    recorded = Medium.objects.get(pk=medium.pk).variants_made_at

    assert variants.variants_make(medium.pk) is False
    assert Medium.objects.get(pk=medium.pk).variants_made_at == recorded


def test_a_worker_stopped_mid_write_leaves_no_half_written_file_and_records_nothing(writer, settings, monkeypatch):
    settings.MEDIA_VARIANT_WIDTHS = [480, 960]
    medium = upload(writer, images.png(1200, 900), "wide.png")
    writes = []

    class StoppedMidWrite(ContentFile):
        """The second copy's bytes stop half-way, as when the worker is killed while writing."""

        def chunks(self, chunk_size=None):
            writes.append(self.size)
            if len(writes) == 2:
                yield self.read(self.size // 2)
                raise SystemExit("the worker was stopped")
            yield from super().chunks(chunk_size)

    monkeypatch.setattr(variants, "ContentFile", StoppedMidWrite)

    with pytest.raises(SystemExit):
        variants.variants_make(medium.pk)

    medium.refresh_from_db()
    assert medium.variants == [] and medium.variants_made_at is None
    folder = Path(settings.MEDIA_ROOT)
    copies = sorted(path.name for path in folder.glob("*-*w.*"))
    # The copy being written never got its name (nor is its temporary file left); the one before is whole.
    assert len(copies) == 1 and not list(folder.glob(".upload-*"))
    Image.open(folder / copies[0]).load()

    monkeypatch.setattr(variants, "ContentFile", ContentFile)
    assert variants.variants_make(medium.pk) is True
    made = Medium.objects.get(pk=medium.pk).variants
    assert len(made) == 4
    for variant in made:
        opened(variant["name"])


def test_the_sweeper_asks_again_for_copies_not_made_after_a_while(writer, settings, monkeypatch):
    settings.MEDIA_VARIANT_WIDTHS = [480]
    late = upload(writer, images.png(800, 600), "late.png")
    fresh = upload(writer, images.png(700, 500), "fresh.png")
    Medium.objects.filter(pk=late.pk).update(created_at=timezone.now() - timedelta(minutes=10))
    asked = []
    monkeypatch.setattr("apps.media.tasks.make_variants.delay", asked.append)

    assert sweep_variants() == 1
    assert asked == [late.pk]
    assert fresh.pk not in asked


def test_an_upload_asks_the_worker_for_its_copies_once_committed(
    writer, monkeypatch, django_capture_on_commit_callbacks
):
    asked = []
    monkeypatch.setattr("apps.media.tasks.make_variants.delay", asked.append)

    with django_capture_on_commit_callbacks(execute=True):
        medium = upload(writer, images.png(800, 600), "wide.png")

    assert asked == [medium.pk]
