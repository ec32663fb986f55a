"""The responsive copies of an upload: for each of MEDIA_VARIANT_WIDTHS narrower than the image, a
WebP and one of the original's type, made once by the worker. Each copy is written whole under its
final, content-derived name (AtomicFileSystemStorage; an S3 PUT is whole too) and recorded only
once all are there: a worker stopped mid-way leaves nothing a page links to, and the next run
(the sweeper's) writes the same names again."""

import io
import logging
from datetime import timedelta

from django.conf import settings
from django.core.files.base import ContentFile
from django.utils import timezone
from PIL import Image

from apps.media.models import Medium
from apps.media.processing import FORMATS
from apps.media.services import medium_record_variants
from apps.media.storage import media_storage

logger = logging.getLogger(__name__)

# How long after an upload its copies may still be on their way before the sweeper asks again.
SWEEP_AFTER = timedelta(minutes=5)


def _copy(image: Image.Image, width: int, image_format: str) -> bytes:
    height = max(1, round(image.height * width / image.width))
    # reducing_gap: a fast box reduction first, then Lanczos: the same picture at a fraction of the time.
    resized = image.resize((width, height), Image.Resampling.LANCZOS, reducing_gap=3.0)
    output = io.BytesIO()
    options = {"quality": settings.MEDIA_QUALITY} if image_format in ("JPEG", "WEBP", "AVIF") else {}
    icc = image.info.get("icc_profile")
    if icc:
        options["icc_profile"] = icc
    if image_format == "WEBP" and resized.mode not in ("RGB", "RGBA"):
        resized = resized.convert("RGBA" if "transparency" in image.info or resized.mode in ("LA", "PA") else "RGB")
    resized.save(output, image_format, **options)
    return output.getvalue()


def variants_make(medium_id: int) -> bool:
    """Make and record the medium's copies; True when this run recorded them."""
    medium = Medium.objects.filter(pk=medium_id, variants_made_at__isnull=True).first()
    if medium is None:
        return False
    widths = sorted(width for width in set(settings.MEDIA_VARIANT_WIDTHS) if width < medium.width)
    storage = media_storage()
    made = []
    # An animation's copies would be stills of its first frame: it is shown as uploaded.
    if widths and medium.frames == 1:
        stem, extension = medium.name.rsplit(".", 1)
        original_format = next(name for name, (_, ext) in FORMATS.items() if ext == extension)
        with storage.open(medium.name, "rb") as stored:
            image = Image.open(stored)
            if image.format == "JPEG":
                # Decode at the smallest scale that still covers the widest copy (JPEG's DCT scaling).
                image.draft("RGB", (widths[-1], round(image.height * widths[-1] / image.width)))
            image.load()
        for width in widths:
            for image_format in dict.fromkeys(("WEBP", original_format)):
                mime_type, ext = FORMATS[image_format]
                name = f"{stem}-{width}w.{ext}"
                if not storage.exists(name):
                    storage.save(name, ContentFile(_copy(image, width, image_format)))
                height = max(1, round(medium.height * width / medium.width))
                made.append({"width": width, "height": height, "mime_type": mime_type, "name": name})
    return medium_record_variants(medium_id=medium.pk, variants=made)


def variants_pending(now=None) -> list[int]:
    """Uploads whose copies are not recorded a while after their upload (a worker stopped)."""
    before = (now or timezone.now()) - SWEEP_AFTER
    return list(
        Medium.objects.filter(variants_made_at__isnull=True, created_at__lt=before)
        .order_by("created_at")
        .values_list("pk", flat=True)[:500]
    )
