"""Where uploads live: Django's storage API over the local folder MEDIA_ROOT (the embedded default,
served by the web process at MEDIA_URL) or any S3-compatible store (django-storages), chosen by
MEDIA_STORAGE_URL or the AWS_* variables (docs/media.md, "Storage").

Every name is content-addressed (apps/media/processing.py): a name is only ever written with the same
bytes, so a file is never overwritten with other content and a write may safely be repeated.
"""

import json
import os
import tempfile
from functools import cache
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.files.storage import FileSystemStorage, Storage
from django.utils.module_loading import import_string

from apps.core import env

S3_BACKEND = "storages.backends.s3.S3Storage"
LOCAL_BACKEND = "apps.media.storage.AtomicFileSystemStorage"
# What MEDIA_STORAGE_URL's query may set on the S3 store (django-storages' option names).
S3_OPTIONS = frozenset({"endpoint_url", "region_name", "custom_domain", "addressing_style", "signature_version"})


class AtomicFileSystemStorage(FileSystemStorage):
    """The local folder, where a file appears whole or not at all: written under a temporary name
    in its folder, then renamed over its name. A worker stopped mid-write leaves only a temporary
    file, never a half-written image behind a name pages link to."""

    def _save(self, name, content):
        # `_save` is the documented hook of a custom storage (Django's "Writing a custom storage
        # system"); FileSystemStorage's own writes in place.
        path = Path(self.path(name))
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".upload-")
        try:
            with os.fdopen(handle, "wb") as out:
                for chunk in content.chunks():
                    out.write(chunk)
            if self.file_permissions_mode is not None:
                os.chmod(temporary, self.file_permissions_mode)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        return name

    def get_available_name(self, name, max_length=None):
        # Content-addressed: the same name holds the same bytes, so it is reused, never suffixed.
        return name


def _local(root: str) -> tuple[Path, str, dict]:
    media_root = Path(root)
    media_url = env.text("MEDIA_URL", "/media/")
    return (
        media_root,
        media_url,
        {"BACKEND": LOCAL_BACKEND, "OPTIONS": {"location": str(media_root), "base_url": media_url}},
    )


def _s3(bucket: str, location: str, options: dict) -> tuple[Path, str, dict]:
    unknown = sorted(set(options) - S3_OPTIONS)
    if unknown:
        raise ImproperlyConfigured(f"MEDIA_STORAGE_URL names unknown options {unknown}; it takes {sorted(S3_OPTIONS)}")
    # Public addresses without signatures (querystring_auth off): a published image is public, its
    # content-addressed name unguessable. Credentials come from the environment's AWS_ACCESS_KEY_ID
    # and AWS_SECRET_ACCESS_KEY (boto3 reads them), never from a URL that might be logged.
    s3 = {"bucket_name": bucket, "location": location.strip("/"), "querystring_auth": False, "file_overwrite": True}
    s3 |= {name: value for name, value in options.items() if value}
    # Read by the pages: MEDIA_URL (a CDN in front of the store) or, when empty, the store's own addresses.
    return Path(env.VAR_DIR) / "media", env.text("MEDIA_URL", ""), {"BACKEND": S3_BACKEND, "OPTIONS": s3}


def storage_from_environment() -> tuple[Path, str, dict]:
    """(MEDIA_ROOT, MEDIA_URL, MEDIA_STORAGE) from the environment; a value that cannot be used
    stops the start-up."""
    raw = env.text("MEDIA_STORAGE_URL", "").strip()
    media_url = env.text("MEDIA_URL", "")
    if media_url and not media_url.endswith("/"):
        raise ImproperlyConfigured(f"MEDIA_URL must end with a slash, got {media_url!r}")
    if not raw:
        bucket = env.text("AWS_STORAGE_BUCKET_NAME", "").strip()
        if bucket:
            aws = {
                "endpoint_url": env.text("AWS_S3_ENDPOINT_URL", ""),
                "region_name": env.text("AWS_S3_REGION_NAME", ""),
                "custom_domain": env.text("AWS_S3_CUSTOM_DOMAIN", ""),
            }
            return _s3(bucket, env.text("AWS_LOCATION", ""), aws)
        return _local(env.text("MEDIA_ROOT", str(Path(env.VAR_DIR) / "media")))
    address = urlsplit(raw)
    if address.scheme == "file" and address.path.startswith("/"):
        return _local(address.path)
    if address.scheme == "s3" and address.hostname and not address.username:
        return _s3(address.hostname, address.path, dict(parse_qsl(address.query)))
    raise ImproperlyConfigured(
        "MEDIA_STORAGE_URL must be file:///<absolute folder> or s3://<bucket>[/<prefix>][?endpoint_url=...] "
        f"(credentials in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), got {address.scheme}://..."
    )


@cache
def _storage(configuration: str) -> Storage:
    described = json.loads(configuration)
    return import_string(described["BACKEND"])(**described.get("OPTIONS", {}))


def media_storage() -> Storage:
    """The store of uploads, as MEDIA_STORAGE configures it: one instance per configuration (an S3
    store keeps its connections), which a changed setting (a test's) replaces."""
    return _storage(json.dumps(settings.MEDIA_STORAGE, sort_keys=True))


def public_src(name: str) -> str:
    """How pages address a stored file: MEDIA_URL + name where MEDIA_URL is set, else the store's
    own public address for it."""
    if settings.MEDIA_URL:
        return f"{settings.MEDIA_URL}{name}"
    return media_storage().url(name)
