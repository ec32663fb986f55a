"""Facts of a request that every layer reads the same way."""


def content_length(request) -> int:
    """The body's declared length in bytes (0 when absent or not a number)."""
    try:
        return max(0, int(request.META.get("CONTENT_LENGTH") or 0))
    except ValueError:
        return 0
