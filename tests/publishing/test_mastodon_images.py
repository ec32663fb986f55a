"""A post's uploaded images on Mastodon: each is uploaded through /api/v2/media with its alt text as
the medium's description, waited for while the instance processes it (202, then 206 until ready),
and named by the status's media_ids, once: a retried job names the same medium again. Read back from
the local fake (tests/publishing/mastodon_fake.py), which refuses a status naming a medium that is
still processing, another account's, or one already attached to another status."""

import hashlib
import io
import time
from datetime import timedelta

import PIL.Image
import pytest
from django.utils import timezone

from apps.core.destinations import Document, Image, JobContext, PublishError
from apps.publishing.mastodon.destination import load
from apps.publishing.mastodon.models import SentMedia

pytestmark = pytest.mark.django_db


def picture(color: str = "red") -> bytes:
    out = io.BytesIO()
    PIL.Image.new("RGB", (64, 48), color).save(out, format="PNG")
    return out.getvalue()


def image(medium_id: int, data: bytes, *, alt_text: str = "", attached: bool = True) -> Image:
    name = f"{hashlib.sha256(data).hexdigest()}.png"
    return Image(
        medium_id=medium_id,
        name=name,
        src=f"/media/{name}",
        url=f"http://testserver/media/{name}",
        mime_type="image/png",
        width=64,
        height=48,
        size=len(data),
        alt_text=alt_text,
        uploaded_at=timezone.now(),
        read=lambda: data,
        attached=attached,
    )


def document(*images: Image, post_id: int = 1, title: str = "Hello, world") -> Document:
    return Document(
        post_id=post_id, title=title, slug="hello", body="First words.\n", published_at=timezone.now(), images=images
    )


def job(job_id: int, previous_path: str = "", seconds: float = 30) -> JobContext:
    action = "update" if previous_path else "publish"
    return JobContext(job_id, 1, action, "Hello, world", previous_path, deadline=time.monotonic() + seconds)


def publish(channel, job_context: JobContext, doc: Document):
    return load(channel.pk).publish(job_context, doc)


def test_an_image_is_uploaded_with_its_alt_text_and_the_status_shows_it(mastodon, mastodon_channel):
    data = picture()

    outcome = publish(mastodon_channel, job(1), document(image(7, data, alt_text="A red  square\n")))

    [upload] = mastodon.calls("POST", "/api/v2/media")
    assert upload.headers["Content-Type"].startswith("multipart/form-data")
    status = mastodon.statuses[outcome.reference]
    [media_id] = status.media_ids
    assert (mastodon.media[media_id].data, mastodon.media[media_id].description) == (data, "A red square")


def test_an_image_the_instance_still_processes_is_waited_for_before_the_status_names_it(mastodon, mastodon_channel):
    mastodon.media_polls = 2

    outcome = publish(mastodon_channel, job(1), document(image(7, picture())))

    [media_id] = mastodon.statuses[outcome.reference].media_ids
    assert len(mastodon.calls("GET", f"/api/v1/media/{media_id}")) == 3  # 206, 206, 200
    assert SentMedia.objects.get(media_id=media_id).processed


def test_a_retried_job_names_the_image_it_uploaded_and_uploads_it_no_second_time(mastodon, mastodon_channel):
    doc = document(image(7, picture(), alt_text="Red"))
    mastodon.fail_next(503, method="POST", path="/api/v1/statuses")

    with pytest.raises(PublishError) as failed:
        publish(mastodon_channel, job(1), doc)
    assert not failed.value.permanent
    outcome = publish(mastodon_channel, job(1), doc)

    assert len(mastodon.calls("POST", "/api/v2/media")) == 1
    [sent] = SentMedia.objects.all()
    assert mastodon.statuses[outcome.reference].media_ids == [sent.media_id]
    assert sent.status_id == outcome.reference


def test_an_edit_names_the_statuss_own_media_and_another_post_of_the_same_image_uploads_it_anew(
    mastodon, mastodon_channel
):
    data = picture()
    first = publish(mastodon_channel, job(1), document(image(7, data)))

    edited = publish(mastodon_channel, job(2, previous_path=first.reference), document(image(7, data), title="New"))
    second = publish(mastodon_channel, job(3), document(image(7, data), post_id=2))

    assert edited.reference == first.reference
    assert len(mastodon.calls("POST", "/api/v2/media")) == 2  # the first post's, then the second's own
    assert mastodon.statuses[first.reference].media_ids != mastodon.statuses[second.reference].media_ids


def test_the_post_shows_its_attached_images_else_its_bodys_and_no_more_than_the_instance_allows(
    mastodon, mastodon_channel
):
    body_only = [image(n, picture(color), attached=False) for n, color in enumerate(("red", "blue"), start=1)]
    attached = [image(n, picture(color)) for n, color in enumerate(("green", "white", "black", "gray", "pink"), 10)]

    only_body = publish(mastodon_channel, job(1), document(*body_only))
    both = publish(mastodon_channel, job(2), document(*body_only, *attached, post_id=2))

    assert len(mastodon.statuses[only_body.reference].media_ids) == 2
    shown = [mastodon.media[m].data for m in mastodon.statuses[both.reference].media_ids]
    assert shown == [picture(color) for color in ("green", "white", "black", "gray")]  # the instance's 4


def test_an_image_the_instance_refuses_fails_the_job_with_what_to_do(mastodon, mastodon_channel):
    broken = image(7, b"not an image at all")

    with pytest.raises(PublishError) as failed:
        publish(mastodon_channel, job(1), document(broken))

    assert failed.value.permanent
    assert "The instance refused the image" in failed.value.message and "File content type is invalid" in (
        failed.value.message
    )
    assert mastodon.statuses == {}


def test_an_image_uploaded_long_ago_for_a_status_never_made_is_uploaded_anew(mastodon, mastodon_channel):
    doc = document(image(7, picture()))
    mastodon.fail_next(503, method="POST", path="/api/v1/statuses")
    with pytest.raises(PublishError):
        publish(mastodon_channel, job(1), doc)
    # Mastodon removes a medium no status names a day after its upload.
    SentMedia.objects.update(uploaded_at=timezone.now() - timedelta(hours=13))

    outcome = publish(mastodon_channel, job(1), doc)

    assert len(mastodon.calls("POST", "/api/v2/media")) == 2
    [media_id] = mastodon.statuses[outcome.reference].media_ids
    assert SentMedia.objects.get(media_id=media_id).status_id == outcome.reference
