"""Where uploads live: Django's storage API over the local folder MEDIA_ROOT (the embedded default,
served by the web process at MEDIA_URL) or any S3-compatible store (django-storages), chosen by
MEDIA_STORAGE_URL or the AWS_* variables (docs/media.md, "Storage").

Every name is content-addressed (apps/media/processing.py): a name is only ever written with the same
bytes, so a file is never overwritten with other content and a write may safely be repeated.
"""

import json
import os
import re
import tempfile
from functools import cache
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.files.storage import FileSystemStorage, Storage
from django.utils.module_loading import import_string

from apps.core import env

S3_BACKEND = "apps.media.s3.MediaS3Storage"
LOCAL_BACKEND = "apps.media.storage.AtomicFileSystemStorage"
# Where the web process serves the local store's files (apps/media/web_urls.py).
SERVED_AT = "/media/"
# A name never changes content, so readers and CDNs may keep a file for a year without asking again:
# the web process's answers (apps/media/views.py) and the objects written to an S3 store say so.
IMMUTABLE = "public, max-age=31536000, immutable"
# What an S3 store takes (django-storages' option names, read from MEDIA_STORAGE_URL's query or
# AWS_S3_<NAME>), each with the form a usable value has: a wrong one fails here, at start-up, not at
# the first upload.
S3_OPTIONS = {
    "endpoint_url": (
        re.compile(r"https?://[^/?#@\s]+(/[^?#\s]*)?"),
        "the store's http(s) address (https://<account>.r2.cloudflarestorage.com, http://minio:9000)",
    ),
    "region_name": (re.compile(r"[a-z0-9][a-z0-9-]{0,62}"), "a region's name (eu-west-3, auto)"),
    # django-storages puts https:// in front of it.
    "custom_domain": (
        re.compile(r"[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[^?#\s]*[^/?#\s])?"),
        "a host name without scheme, optionally with a path (media.example.com)",
    ),
    "addressing_style": (re.compile(r"auto|virtual|path"), "auto, virtual or path"),
    "signature_version": (re.compile(r"s3v4|s3"), "s3v4 or s3"),
}
AWS_NAMES = {option: f"AWS_S3_{option.upper()}" for option in S3_OPTIONS}
# S3's rules for a bucket's name (R2's and MinIO's are the same or looser).
BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
# What MEDIA_URL may be: the path the web process serves, or an absolute folder (a CDN's).
MEDIA_URL_FORMS = re.compile(rf"{re.escape(SERVED_AT)}|https?://[^/?#@\s]+/([^?#\s]*/)?")
STORE_URL_FORMS = "MEDIA_STORAGE_URL must be file:///<absolute folder> or s3://<bucket>[/<prefix>][?endpoint_url=...]"


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


def _media_url(default: str | None) -> str | None:
    """MEDIA_URL: how pages address the files (set but empty: the default). None stands for the
    store's own addresses: Django would read an empty MEDIA_URL as "/" (its script prefix)."""
    media_url = env.text("MEDIA_URL", "").strip() or default
    if media_url and not MEDIA_URL_FORMS.fullmatch(media_url):
        raise ImproperlyConfigured(
            f"MEDIA_URL must be {SERVED_AT} (the web process serves the files) or the absolute address of the "
            f"folder that holds them, ending with a slash (https://cdn.example.com/media/), got {media_url!r}"
        )
    return media_url


def _local(root: str) -> tuple[Path, str | None, dict]:
    # A relative folder is the checkout's, like the other var/ paths.
    media_root = env.BASE_DIR / root
    media_url = _media_url(SERVED_AT)
    return (
        media_root,
        media_url,
        {"BACKEND": LOCAL_BACKEND, "OPTIONS": {"location": str(media_root), "base_url": media_url}},
    )


def _credentials_paired() -> None:
    # Read by boto3 from the environment, never from a URL that might be logged; one without the
    # other would fail only at the first upload, as a signature error.
    pair = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
    given = [name for name in pair if env.text(name, "").strip()]
    if len(given) == 1:
        missing = next(name for name in pair if name not in given)
        raise ImproperlyConfigured(
            f"{given[0]} is set without {missing}: set both (the store's access key and its secret), or "
            "neither to use the machine's own credentials (an instance role)"
        )


def _s3(bucket: str, location: str, options: dict[str, tuple[str, str]]) -> tuple[Path, str | None, dict]:
    """The S3 store of `bucket`, its files under `location`; `options` maps an option to its value
    and where it was read."""
    if not BUCKET.fullmatch(bucket):
        raise ImproperlyConfigured(
            f"The bucket's name must be 3 to 63 lowercase letters, digits, dots and hyphens, got {bucket!r} "
            "(an endpoint's host and port go in endpoint_url)"
        )
    location = location.strip("/")
    if any(part in ("", ".", "..") for part in location.split("/")) and location:
        raise ImproperlyConfigured(f"The store's prefix must be a plain folder path, got {location!r}")
    _credentials_paired()
    # Public addresses without signatures (querystring_auth off): a published image is public, its
    # content-addressed name unguessable, and a signed address would expire in pages and e-mails.
    s3 = {
        "bucket_name": bucket,
        "location": location,
        "querystring_auth": False,
        "file_overwrite": True,
        "object_parameters": {"CacheControl": IMMUTABLE, "ContentDisposition": "inline"},
    }
    for option, (value, source) in options.items():
        pattern, described = S3_OPTIONS[option]
        if not pattern.fullmatch(value):
            raise ImproperlyConfigured(f"{source} must be {described}, got {value!r}")
        s3[option] = value
    # Read by the pages: MEDIA_URL (a CDN in front of the store) or, when empty, the store's own addresses.
    return env.VAR_DIR / "media", _media_url(None), {"BACKEND": S3_BACKEND, "OPTIONS": s3}


def _url_options(query: str) -> dict[str, tuple[str, str]]:
    """The S3 options MEDIA_STORAGE_URL's query sets: option -> (value, where it was read)."""
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError as exc:
        raise ImproperlyConfigured(
            f"MEDIA_STORAGE_URL's query must be name=value pairs joined by &, got {query!r}"
        ) from exc
    options: dict[str, tuple[str, str]] = {}
    for option, value in pairs:
        if option not in S3_OPTIONS or option in options:
            raise ImproperlyConfigured(
                f"MEDIA_STORAGE_URL names {option!r} {'twice' if option in options else 'which it does not take'}; "
                f"it takes {', '.join(S3_OPTIONS)}, each once"
            )
        options[option] = (value, f"MEDIA_STORAGE_URL's {option}")
    return options


def _from_url(raw: str) -> tuple[Path, str | None, dict]:
    address = urlsplit(raw)
    if address.scheme == "file" and not address.netloc and address.path.startswith("/") and not address.query:
        return _local(address.path)
    if address.scheme != "s3" or not address.netloc or address.fragment:
        raise ImproperlyConfigured(f"{STORE_URL_FORMS}, got {address.scheme or '(no scheme)'}://...")
    if "@" in address.netloc:
        # Not echoed: it holds a secret.
        raise ImproperlyConfigured(
            "MEDIA_STORAGE_URL must not hold credentials: they are read from AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY"
        )
    return _s3(address.netloc, address.path, _url_options(address.query))


def _aws_options() -> dict[str, tuple[str, str]]:
    """The S3 options set by AWS_S3_<NAME> variables: option -> (value, variable)."""
    read = {option: (env.text(name, "").strip(), name) for option, name in AWS_NAMES.items()}
    return {option: (value, name) for option, (value, name) in read.items() if value}


def storage_from_environment() -> tuple[Path, str | None, dict]:
    """(MEDIA_ROOT, MEDIA_URL, MEDIA_STORAGE) from the environment: MEDIA_STORAGE_URL, or the AWS_*
    variables django-storages documents, or the local folder MEDIA_ROOT. A value that cannot be
    used, or two ways of naming the store at once, stops the start-up."""
    raw = env.text("MEDIA_STORAGE_URL", "").strip()
    root = env.text("MEDIA_ROOT", "").strip()
    bucket = env.text("AWS_STORAGE_BUCKET_NAME", "").strip()
    location = env.text("AWS_LOCATION", "").strip()
    aws = _aws_options()
    named = {"MEDIA_ROOT": root, "AWS_STORAGE_BUCKET_NAME": bucket, "AWS_LOCATION": location}
    given = [name for name, value in named.items() if value] + [name for _, name in aws.values()]
    if raw and given:
        raise ImproperlyConfigured(f"MEDIA_STORAGE_URL names the store: unset {', '.join(given)}")
    if raw:
        return _from_url(raw)
    if bucket and root:
        raise ImproperlyConfigured("AWS_STORAGE_BUCKET_NAME names an S3 store: unset MEDIA_ROOT (the local folder's)")
    if bucket:
        return _s3(bucket, location, aws)
    if len(given) > bool(root):
        names = ", ".join(name for name in given if name != "MEDIA_ROOT")
        raise ImproperlyConfigured(
            f"{names} set without AWS_STORAGE_BUCKET_NAME: set the bucket, or unset them to keep uploads in MEDIA_ROOT"
        )
    return _local(root or str(env.VAR_DIR / "media"))


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
