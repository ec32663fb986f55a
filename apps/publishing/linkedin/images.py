"""A post's uploaded images on LinkedIn (the Images API): which of them the LinkedIn post shows, and
the Posts API's `content` naming them.

Each image is uploaded once per channel and owner: initialize an upload (LinkedIn answers the
address to PUT the bytes to and the image's URN), PUT the bytes, and record the URN at once
(SentImage), so a retried job, a new post showing the same image or a post published again names
it by that URN instead of uploading it again.
"""

import io
from collections.abc import Callable

import PIL.Image
from django.utils import timezone

from apps.core.destinations import Document, Image, PublishError
from apps.publishing.linkedin import client
from apps.publishing.linkedin.models import SentImage

# The Posts API takes one image as `media` and 2 to 20 as `multiImage`.
MAX_IMAGES = 20
# What LinkedIn's Images API takes; another format (WebP, AVIF) is sent as PNG.
LINKEDIN_TYPES = frozenset({"image/jpeg", "image/png", "image/gif"})
ALT_TEXT_LIMIT = 4086
# The refusals that are about the image itself (its format, its size), not the channel's access.
IMAGE_REFUSALS = frozenset({400, 413, 415, 422})


def chosen(document: Document) -> tuple[Image, ...]:
    """The images the LinkedIn post shows: the post's attached ones, or, when it has none, those its
    body shows; at most LinkedIn's 20, in the post's order."""
    attached = tuple(image for image in document.images if image.attached)
    return (attached or document.images)[:MAX_IMAGES]


def content(
    *,
    linkedin: client.Client,
    channel_id: int,
    owner: str,
    document: Document,
    failure: Callable[[client.ApiError, str], PublishError],
) -> dict | None:
    """The Posts API's `content` for the document's images (None: a text post), uploading those
    LinkedIn does not have yet. `failure` turns LinkedIn's refusal into the job's PublishError."""
    entries = []
    for image in chosen(document):
        entry = {"id": _urn(linkedin, channel_id, owner, image, failure)}
        if alt_text := " ".join(image.alt_text.split())[:ALT_TEXT_LIMIT]:
            entry["altText"] = alt_text
        entries.append(entry)
    if not entries:
        return None
    if len(entries) == 1:
        return {"media": entries[0]}
    return {"multiImage": {"images": entries}}


def forget(*, channel_id: int, content: dict | None) -> None:
    """Drop the record of the images a refused post named, so they are uploaded again."""
    content = content or {}
    entries = [content["media"]] if "media" in content else content.get("multiImage", {}).get("images", [])
    SentImage.objects.filter(channel_id=channel_id, urn__in=[entry["id"] for entry in entries]).delete()


def _label(image: Image) -> str:
    alt_text = " ".join(image.alt_text.split())
    return f"“{alt_text[:80]}” ({image.name})" if alt_text else image.name


def _urn(linkedin: client.Client, channel_id: int, owner: str, image: Image, failure) -> str:
    sent = SentImage.objects.filter(channel_id=channel_id, owner=owner, medium_id=image.medium_id).first()
    if sent is not None and sent.name == image.name:
        return sent.urn
    data, mime_type = _linkedin_bytes(image)
    try:
        upload_url, urn = linkedin.initialize_image_upload(owner=owner)
        linkedin.upload_image(upload_url=upload_url, data=data, mime_type=mime_type)
    except client.ApiError as exc:
        if exc.status in IMAGE_REFUSALS:
            raise PublishError(
                f"LinkedIn refused the image {_label(image)} ({exc.status}): {exc.message} Replace it in the post "
                "with a PNG or JPEG image, or remove it, then press “Retry now”.",
                permanent=True,
            ) from None
        raise failure(exc, f"the upload of the image {_label(image)}") from None
    SentImage.objects.update_or_create(
        channel_id=channel_id,
        owner=owner,
        medium_id=image.medium_id,
        defaults={"name": image.name, "urn": urn, "uploaded_at": timezone.now()},
    )
    return urn


def _linkedin_bytes(image: Image) -> tuple[bytes, str]:
    """The image's bytes in a format LinkedIn takes, and their type."""
    data = image.data()
    if image.mime_type in LINKEDIN_TYPES:
        return data, image.mime_type
    try:
        with PIL.Image.open(io.BytesIO(data)) as picture:
            converted = io.BytesIO()
            picture.save(converted, format="PNG")  # lossless, and keeps transparency
    except (OSError, ValueError) as exc:
        raise PublishError(
            f"The image {_label(image)} could not be converted to PNG for LinkedIn ({exc}). Replace it in the post, "
            "then press “Retry now”.",
            permanent=True,
        ) from None
    return converted.getvalue(), "image/png"
