"""A post's uploaded images on Bluesky: the blog card's thumbnail (the first image) or, for a post
without a blog link, up to 4 images with their alt text. Each is uploaded once per channel and
account (uploadBlob, recorded in SentBlob at once); one over Bluesky's 1,000,000 bytes is shrunk
first (JPEG, smaller until it fits)."""

import io

import PIL.Image
from django.utils import timezone

from apps.core.destinations import Document, Image, PublishError
from apps.publishing.bluesky.models import SentBlob
from apps.publishing.bluesky.session import Account

MAX_BYTES = 1_000_000
MAX_IMAGES = 4
ALT_LIMIT = 2000
SENT_AS_IS = frozenset({"image/jpeg", "image/png", "image/webp", "image/gif"})


def chosen(document: Document) -> tuple[Image, ...]:
    """The post's attached images, or, when it has none, those its body shows; at most 4."""
    attached = tuple(image for image in document.images if image.attached)
    return (attached or document.images)[:MAX_IMAGES]


def label(image: Image) -> str:
    alt_text = " ".join(image.alt_text.split())
    return f"“{alt_text[:80]}” ({image.name})" if alt_text else image.name


def blob(account: Account, *, channel_id: int, image: Image) -> dict:
    """The image's blob on the account's server, uploaded now unless it was before."""
    sent = SentBlob.objects.filter(channel_id=channel_id, did=account.did, medium_id=image.medium_id).first()
    if sent is not None and sent.name == image.name:
        return sent.blob
    data, mime_type = fitting(image)
    uploaded = account.upload_blob(data=data, mime_type=mime_type, what=f"the upload of the image {label(image)}")
    SentBlob.objects.update_or_create(
        channel_id=channel_id,
        did=account.did,
        medium_id=image.medium_id,
        defaults={"name": image.name, "blob": uploaded, "uploaded_at": timezone.now()},
    )
    return uploaded


def forget(*, channel_id: int, did: str) -> None:
    """Drop the channel's recorded blobs, so the next attempt uploads them again (a server keeps a
    blob no record names for a while only)."""
    SentBlob.objects.filter(channel_id=channel_id, did=did).delete()


def images_embed(account: Account, *, channel_id: int, document: Document) -> dict | None:
    entries = []
    for image in chosen(document):
        entry = {"image": blob(account, channel_id=channel_id, image=image), "alt": image.alt_text[:ALT_LIMIT]}
        if image.width and image.height:
            entry["aspectRatio"] = {"width": image.width, "height": image.height}
        entries.append(entry)
    return {"$type": "app.bsky.embed.images", "images": entries} if entries else None


def fitting(image: Image) -> tuple[bytes, str]:
    """The image's bytes within MAX_BYTES, in a type Bluesky shows, and that type."""
    data = image.data()
    if len(data) <= MAX_BYTES and image.mime_type in SENT_AS_IS:
        return data, image.mime_type
    try:
        with PIL.Image.open(io.BytesIO(data)) as picture:
            return _shrunk(picture), "image/jpeg"
    except (OSError, ValueError) as exc:
        raise PublishError(
            f"The image {label(image)} could not be made small enough for Bluesky ({exc}). Replace it in the post, "
            "then press “Retry now”.",
            permanent=True,
        ) from None


def _shrunk(picture: PIL.Image.Image) -> bytes:
    """A JPEG of the picture under MAX_BYTES: a lower quality first, then smaller sizes."""
    rgba = picture.convert("RGBA")
    # JPEG has no transparency: transparent areas are laid on white (converted, they would show black).
    picture = PIL.Image.new("RGB", rgba.size, "white")
    picture.paste(rgba, mask=rgba.getchannel("A"))
    while True:
        for quality in (85, 70):
            out = io.BytesIO()
            picture.save(out, format="JPEG", quality=quality, optimize=True)
            if out.tell() <= MAX_BYTES:
                return out.getvalue()
        width, height = picture.size
        if width < 64 or height < 64:
            raise ValueError("too large even at 64 pixels")
        picture = picture.resize((width * 3 // 4, height * 3 // 4))
