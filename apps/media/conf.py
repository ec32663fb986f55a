"""The media library's settings (docs/media.md), read from the environment at start-up: config/settings
adds the UPPER_CASE names of this module to Django's settings."""

from django.core.exceptions import ImproperlyConfigured

from apps.core import env
from apps.media.storage import storage_from_environment

# The largest upload taken (the request's body may be this plus the multipart framing); a larger
# one is answered 413 before its body is read.
MEDIA_MAX_BYTES = env.positive_int("MEDIA_MAX_BYTES", 20 * 1024 * 1024)
# The most pixels (width x height, per frame) an upload may decode to: a decompression bomb (a small
# file that unpacks to gigabytes) is refused from its header, before a pixel is decoded.
MEDIA_MAX_PIXELS = env.positive_int("MEDIA_MAX_PIXELS", 60_000_000)
# The widths of the responsive copies the worker makes of each upload wider than them (WebP and the
# original's type): what pages list in srcset. A phone's column (340-390 CSS pixels at 1.75-2 device
# pixels each) needs 600-780 pixels: without 720 it fetches the 960 copy, nearly twice the bytes, and
# a post with three photos paints its first in 1.7-2.8 s instead of 1.4 s on Lighthouse's phone.
MEDIA_VARIANT_WIDTHS = env.int_list("MEDIA_VARIANT_WIDTHS", "480,720,960,1600")
if any(width < 16 or width > 8000 for width in MEDIA_VARIANT_WIDTHS):
    raise ImproperlyConfigured(
        f"MEDIA_VARIANT_WIDTHS must be widths from 16 to 8000 pixels, got {MEDIA_VARIANT_WIDTHS}"
    )
# The quality of the JPEG, WebP and AVIF files written (a re-encoded upload, its copies).
MEDIA_QUALITY = env.int_between("MEDIA_QUALITY", 85, 1, 100)
# An upload is streamed to a temporary file as it arrives, never held whole in memory.
FILE_UPLOAD_HANDLERS = ["django.core.files.uploadhandler.TemporaryFileUploadHandler"]
# The upload endpoints' bodies: the file and the multipart framing around it (its other fields are
# small). The Settings area's library (apps/media/admin.py) takes the same uploads at its own address
# under ADMIN_URL.
_UPLOAD_BODY = MEDIA_MAX_BYTES + 64 * 1024
_ADMIN_UPLOAD = f"/{env.admin_url()}media/medium/upload"
REQUEST_BODY_LIMITS = {"/v1/media": _UPLOAD_BODY, _ADMIN_UPLOAD: _UPLOAD_BODY}
# Where uploads are stored and where readers fetch them (apps/media/storage.py): the local folder
# MEDIA_ROOT served by the web process at MEDIA_URL, or an S3-compatible store.
MEDIA_ROOT, MEDIA_URL, MEDIA_STORAGE = storage_from_environment()
# How often beat looks for uploads whose copies were not made (a worker stopped mid-way), and how
# long after the upload it waits before it asks again.
CELERY_BEAT_SCHEDULE = {
    "media.sweep_variants": {"task": "media.sweep_variants", "schedule": 600.0},
}
