"""Facts of a request that every layer reads the same way."""

from django.conf import settings


def content_length(request) -> int:
    """The body's declared length in bytes (0 when absent or not a number)."""
    try:
        return max(0, int(request.META.get("CONTENT_LENGTH") or 0))
    except ValueError:
        return 0


def body_limit(path: str, method: str) -> int:
    """The largest body a request may send, in bytes: MAX_REQUEST_BODY_BYTES, or more on a path
    that takes uploads (REQUEST_BODY_LIMITS, POST only). The web server and the API both apply it."""
    if method == "POST":
        return settings.REQUEST_BODY_LIMITS.get(path.rstrip("/"), settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE
