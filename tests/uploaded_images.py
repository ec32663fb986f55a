"""Uploaded images (apps.core.destinations.Image) as the media app describes them to the pages and
the destinations: a real picture's bytes, its content-addressed name and its responsive copies."""

import hashlib
import io
from datetime import UTC, datetime

from PIL import Image as Picture

from apps.core.destinations import Image, ImageVariant

SITE_URL = "https://cps.example.com"
COPY_WIDTHS = (480, 960, 1600)
EXTENSIONS = {"image/jpeg": "jpg", "image/png": "png", "image/webp": "webp", "image/gif": "gif"}
FORMATS = {"image/jpeg": "JPEG", "image/png": "PNG", "image/webp": "WEBP", "image/gif": "GIF"}


def picture_bytes(width: int, height: int, mime_type: str, colour=(40, 110, 160)) -> bytes:
    out = io.BytesIO()
    Picture.new("RGB", (width, height), colour).save(out, FORMATS[mime_type])
    return out.getvalue()


def uploaded_image(
    *,
    width: int = 2400,
    height: int = 1600,
    mime_type: str = "image/jpeg",
    alt_text: str = "Fishing boats in the harbour at dawn",
    copies: tuple[str, ...] = ("image/webp", "image/jpeg"),
    attached: bool = True,
    medium_id: int = 7,
) -> Image:
    """An uploaded picture of that size and type, with copies of the `copies` types at each of
    COPY_WIDTHS narrower than it (the worker's), addressed under /media/ on SITE_URL."""
    data = picture_bytes(width, height, mime_type)
    digest = hashlib.sha256(data).hexdigest()
    name = f"{digest}.{EXTENSIONS[mime_type]}"
    variants = tuple(
        ImageVariant(
            width=copy_width,
            height=round(height * copy_width / width),
            mime_type=copy_type,
            src=f"/media/{digest}-{copy_width}.{EXTENSIONS[copy_type]}",
        )
        for copy_width in COPY_WIDTHS
        if copy_width < width
        for copy_type in copies
    )
    return Image(
        medium_id=medium_id,
        name=name,
        src=f"/media/{name}",
        url=f"{SITE_URL}/media/{name}",
        mime_type=mime_type,
        width=width,
        height=height,
        size=len(data),
        alt_text=alt_text,
        uploaded_at=datetime(2026, 11, 2, 9, 30, tzinfo=UTC),
        read=lambda: data,
        variants=variants,
        attached=attached,
    )
