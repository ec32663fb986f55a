"""A post's uploaded images on LinkedIn: each is uploaded through the Images API (initialize the
upload, PUT the bytes) and named by the post's `content`, once per channel and owner, read back from
the local fake of LinkedIn (tests/publishing/linkedin_fake.py), which refuses a post naming an image
whose bytes it never received. The destination is given Documents with real images, as the pipeline
gives them."""

import hashlib
import io
import time

import PIL.Image
import pytest
from django.utils import timezone

from apps.core.destinations import Document, Image, JobContext, PublishError
from apps.publishing.linkedin.destination import LinkedInPublisher
from apps.publishing.linkedin.models import LinkedInConnection, SentImage, SentPost
from apps.publishing.linkedin.services import connection_author_set

pytestmark = pytest.mark.django_db

ADA = "urn:li:person:abc123"
PAGE = "urn:li:organization:2414183"
TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp"}


def picture(color: str = "red", size: tuple[int, int] = (64, 48), format: str = "PNG") -> bytes:
    out = io.BytesIO()
    PIL.Image.new("RGB", size, color).save(out, format=format, lossless=True)  # WebP: the same pixels back
    return out.getvalue()


def image(medium_id: int, data: bytes, *, alt_text: str = "", attached: bool = True) -> Image:
    with PIL.Image.open(io.BytesIO(data)) as opened:
        (width, height), mime_type = opened.size, TYPES[opened.format]
    name = f"{hashlib.sha256(data).hexdigest()}.{mime_type.split('/')[1]}"
    return Image(
        medium_id=medium_id,
        name=name,
        src=f"/media/{name}",
        url=f"http://testserver/media/{name}",
        mime_type=mime_type,
        width=width,
        height=height,
        size=len(data),
        alt_text=alt_text,
        uploaded_at=timezone.now(),
        read=lambda: data,
        attached=attached,
    )


def document(*images: Image, title: str = "Hello, world") -> Document:
    return Document(
        post_id=1, title=title, slug="hello", body="First words.\n", published_at=timezone.now(), images=images
    )


def job(job_id: int, previous_path: str = "") -> JobContext:
    action = "update" if previous_path else "publish"
    return JobContext(job_id, 1, action, "Hello, world", previous_path, deadline=time.monotonic() + 30)


def publish(channel, job_context: JobContext, doc: Document):
    return LinkedInPublisher(LinkedInConnection.objects.get(channel=channel)).publish(job_context, doc)


def test_an_image_is_uploaded_in_three_steps_and_the_post_shows_it_with_its_alt_text(
    linkedin, linkedin_channel, settings
):
    token = LinkedInConnection.objects.get(channel=linkedin_channel).access_token()
    data = picture()

    outcome = publish(linkedin_channel, job(1), document(image(7, data, alt_text="A red  square\n")))

    [initialize] = linkedin.calls("POST", "/rest/images")
    assert initialize.query == {"action": "initializeUpload"}
    assert initialize.body == {"initializeUploadRequest": {"owner": ADA}}
    assert initialize.headers["LinkedIn-Version"] == settings.LINKEDIN_API_VERSION
    [put] = linkedin.calls("PUT")
    assert put.headers["Authorization"] == f"Bearer {token}"
    assert put.headers["Content-Type"] == "image/png"
    [(urn, uploaded)] = linkedin.uploads
    assert uploaded == data
    with PIL.Image.open(io.BytesIO(linkedin.images[urn]["data"])) as received:
        assert (received.format, received.size) == ("PNG", (64, 48))
    assert linkedin.posts[outcome.reference]["content"] == {"media": {"id": urn, "altText": "A red square"}}
    assert SentImage.objects.get(channel=linkedin_channel, medium_id=7).urn == urn


def test_several_attached_images_make_a_multi_image_post_in_order_and_the_body_s_images_stay_out(
    linkedin, linkedin_channel
):
    first, second = image(1, picture("red"), alt_text="Red"), image(2, picture("blue"))
    in_the_body = image(3, picture("green"), attached=False)

    outcome = publish(linkedin_channel, job(1), document(first, second, in_the_body))

    urns = [urn for urn, _data in linkedin.uploads]
    assert len(urns) == 2
    assert linkedin.posts[outcome.reference]["content"] == {
        "multiImage": {"images": [{"id": urns[0], "altText": "Red"}, {"id": urns[1]}]}
    }
    assert linkedin.images[urns[1]]["data"] == second.read()


def test_a_post_with_no_attached_image_shows_the_first_one_of_its_body(linkedin, linkedin_channel):
    in_the_body = image(3, picture("green"), alt_text="Green", attached=False)

    outcome = publish(linkedin_channel, job(1), document(in_the_body))

    [(urn, data)] = linkedin.uploads
    assert data == in_the_body.read()
    assert linkedin.posts[outcome.reference]["content"] == {"media": {"id": urn, "altText": "Green"}}


def test_a_post_without_images_is_a_text_post_and_uploads_nothing(linkedin, linkedin_channel):
    outcome = publish(linkedin_channel, job(1), document())

    assert linkedin.calls(path_prefix="/rest/images") == [] and linkedin.uploads == []
    assert "content" not in linkedin.posts[outcome.reference]
    assert "content" not in linkedin.calls("POST", "/rest/posts")[0].body


def test_a_retry_after_the_post_failed_names_the_image_uploaded_before_without_uploading_it_again(
    linkedin, linkedin_channel
):
    doc = document(image(7, picture(), alt_text="Red"))
    linkedin.fail_next(500, path="/rest/posts")

    with pytest.raises(PublishError) as failed:
        publish(linkedin_channel, job(1), doc)
    assert not failed.value.permanent
    [(urn, _data)] = linkedin.uploads

    outcome = publish(linkedin_channel, job(1), doc)

    assert len(linkedin.uploads) == 1 and len(linkedin.calls("POST", "/rest/images")) == 1
    assert linkedin.posts[outcome.reference]["content"] == {"media": {"id": urn, "altText": "Red"}}
    assert SentPost.objects.get(job_id=1).urn == outcome.reference


def test_an_update_and_another_post_of_the_same_image_reuse_its_urn(linkedin, linkedin_channel):
    photo = image(7, picture())
    first = publish(linkedin_channel, job(1), document(photo))
    [(urn, _data)] = linkedin.uploads

    publish(linkedin_channel, job(2, previous_path=first.reference), document(photo, title="Hello again"))
    second = publish(linkedin_channel, job(3), document(photo, title="Another post"))

    assert len(linkedin.uploads) == 1 and len(linkedin.calls("POST", "/rest/images")) == 1
    assert linkedin.posts[first.reference]["commentary"].startswith("Hello again")
    assert linkedin.posts[second.reference]["content"] == {"media": {"id": urn}}


def test_posting_as_a_page_uploads_the_image_again_as_the_page_s(linkedin, linkedin_channel):
    photo = image(7, picture())
    publish(linkedin_channel, job(1), document(photo))
    connection_author_set(connection=LinkedInConnection.objects.get(channel=linkedin_channel), organization=PAGE)

    outcome = publish(linkedin_channel, job(2), document(photo, title="As the page"))

    [(_member_s, _data), (page_s, _same)] = linkedin.uploads
    assert linkedin.images[page_s]["owner"] == PAGE
    assert linkedin.posts[outcome.reference]["content"] == {"media": {"id": page_s}}


def test_a_webp_image_is_sent_as_png_which_linkedin_takes(linkedin, linkedin_channel):
    webp = image(7, picture("blue", (40, 30), format="WEBP"))

    publish(linkedin_channel, job(1), document(webp))

    [(_urn, data)] = linkedin.uploads
    with PIL.Image.open(io.BytesIO(data)) as sent:
        assert (sent.format, sent.size, sent.getpixel((5, 5))) == ("PNG", (40, 30), (0, 0, 255))


def test_an_image_linkedin_refuses_fails_the_job_for_good_with_what_to_do_and_posts_nothing(linkedin, linkedin_channel):
    broken = image(7, picture(), alt_text="Red")
    broken = Image(**{**broken.__dict__, "read": lambda: b"<html>not an image</html>"})

    with pytest.raises(PublishError) as failed:
        publish(linkedin_channel, job(1), document(broken))

    assert failed.value.permanent
    assert failed.value.message.startswith(f"LinkedIn refused the image “Red” ({broken.name}) (400): ")
    assert "Replace it in the post with a PNG or JPEG image, or remove it, then press “Retry now”." in (
        failed.value.message
    )
    assert linkedin.posts == {} and not SentPost.objects.exists() and not SentImage.objects.exists()


@pytest.mark.parametrize(
    ("status", "method", "path", "said"),
    [
        (503, "PUT", "/dms-uploads/", "LinkedIn failed the upload of the image "),
        (429, "POST", "/rest/images", "LinkedIn is limiting requests (429): "),
    ],
)
def test_an_upload_that_fails_on_linkedin_s_side_is_tried_again_and_then_uploads_once(
    linkedin, linkedin_channel, status, method, path, said
):
    doc = document(image(7, picture()))
    linkedin.fail_next(status, method=method, path=path)

    with pytest.raises(PublishError) as failed:
        publish(linkedin_channel, job(1), doc)
    assert not failed.value.permanent
    assert failed.value.message.startswith(said)
    assert linkedin.posts == {} and not SentImage.objects.exists()

    outcome = publish(linkedin_channel, job(1), doc)

    [(urn, _data)] = linkedin.uploads
    assert linkedin.posts[outcome.reference]["content"] == {"media": {"id": urn}}


def test_an_image_linkedin_no_longer_has_is_uploaded_anew_when_the_refused_post_is_retried(linkedin, linkedin_channel):
    photo = image(7, picture())
    publish(linkedin_channel, job(1), document(photo))
    [(urn, _data)] = linkedin.uploads
    linkedin.images[urn]["data"] = None  # gone on LinkedIn's side

    with pytest.raises(PublishError) as refused:
        publish(linkedin_channel, job(2), document(photo, title="Again"))
    assert refused.value.permanent and "has not been uploaded" in refused.value.message

    outcome = publish(linkedin_channel, job(2), document(photo, title="Again"))

    [_first, (fresh, _same)] = linkedin.uploads
    assert fresh != urn
    assert linkedin.posts[outcome.reference]["content"] == {"media": {"id": fresh}}
