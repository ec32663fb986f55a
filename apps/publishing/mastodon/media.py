"""A post's uploaded images as a status's media (POST /api/v2/media, with its alt text as the
medium's `description`): which of them the status shows, each uploaded once.

An upload is recorded (SentMedia) as soon as the instance took it, so a retried job names it again
instead of uploading it again; the instance may answer 202 (still processing), and a status names a
medium only once it is processed, so the job waits for it within its deadline. On Mastodon a medium
attached to a status belongs to that status: an edit of the same status names it again, another
status uploads the image anew.
"""

import time
from datetime import timedelta

from django.db.models import Q
from django.utils import timezone

from apps.core.destinations import Document, Image, PublishError
from apps.publishing.mastodon import client
from apps.publishing.mastodon.models import SentMedia

# Mastodon's limit on a medium's description (its alt text).
DESCRIPTION_LIMIT = 1500
# How often a medium still processing is asked after.
POLL_SECONDS = 0.5
# Mastodon removes a medium no status names a day after its upload: an older one is uploaded anew.
UNATTACHED_KEPT = timedelta(hours=12)
# The refusals that are about the image itself (its format, its size), not the channel's access.
IMAGE_REFUSALS = frozenset({413, 415, 422})


def chosen(document: Document, limit: int) -> tuple[Image, ...]:
    """The images the status shows: the post's attached ones, or, when it has none, those its body
    shows; at most the instance's limit, in the post's order."""
    attached = tuple(image for image in document.images if image.attached)
    return (attached or document.images)[:limit]


def description(image: Image) -> str:
    return " ".join(image.alt_text.split())[:DESCRIPTION_LIMIT]


def _label(image: Image) -> str:
    alt_text = description(image)
    return f"“{alt_text[:80]}” ({image.name})" if alt_text else image.name


def media_ids(
    *, mastodon: client.Client, channel_id: int, owner: str, document: Document, limit: int, status_id: str, failure
) -> list[str]:
    """The ids of the media the status names, uploading what the instance does not have for it yet
    (`status_id`: the status being edited, "" for a new one). `failure` turns the instance's refusal
    into the job's PublishError."""
    ids = []
    for image in chosen(document, limit):
        sent = (
            SentMedia.objects.filter(channel_id=channel_id, owner=owner, medium_id=image.medium_id, name=image.name)
            .filter(description=description(image))
            .filter(Q(status_id="", uploaded_at__gte=timezone.now() - UNATTACHED_KEPT) | Q(status_id=status_id or "-"))
            .order_by("-id")
            .first()
        )
        if sent is None:
            sent = _upload(mastodon, channel_id, owner, image, failure)
        if not sent.processed:
            _wait_for(mastodon, sent, image, failure)
        ids.append(sent.media_id)
    return ids


def attached(*, channel_id: int, media_ids: list[str], status_id: str) -> None:
    """The media now belong to the status."""
    SentMedia.objects.filter(channel_id=channel_id, media_id__in=media_ids).update(status_id=status_id)


def _upload(mastodon: client.Client, channel_id: int, owner: str, image: Image, failure) -> SentMedia:
    data = image.data()
    try:
        media_id, ready = mastodon.upload_media(
            data=data, filename=image.name, mime_type=image.mime_type, description=description(image)
        )
    except client.ApiError as exc:
        if exc.status in IMAGE_REFUSALS:
            raise PublishError(
                f"The instance refused the image {_label(image)} ({exc.status}): {exc.message} Replace it in the "
                "post with a PNG or JPEG image, or remove it, then press “Retry now”.",
                permanent=True,
            ) from None
        raise failure(exc, f"the upload of the image {_label(image)}") from None
    return SentMedia.objects.create(
        channel_id=channel_id,
        owner=owner,
        medium_id=image.medium_id,
        name=image.name,
        description=description(image),
        media_id=media_id,
        processed=ready,
        uploaded_at=timezone.now(),
    )


def _wait_for(mastodon: client.Client, sent: SentMedia, image: Image, failure) -> None:
    """Until the instance has processed the medium; past the job's deadline the client's ApiError
    (no answer in time) makes the job try again, naming the same medium."""
    while True:
        try:
            ready = mastodon.media_ready(media_id=sent.media_id)
        except client.ApiError as exc:
            raise failure(exc, f"the processing of the image {_label(image)}") from None
        if ready:
            SentMedia.objects.filter(pk=sent.pk).update(processed=True)
            return
        time.sleep(POLL_SECONDS)
