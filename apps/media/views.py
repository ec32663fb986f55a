"""The stored files, served by the web process at MEDIA_URL (the embedded default; with a store or a
CDN in front, readers fetch them from there and this answers only what reaches it).

A file is served with the type its name says (decided from its content when it was stored), never
sniffed, never run: `X-Content-Type-Options: nosniff`, `Content-Disposition: inline` and a policy
under which nothing executes even if a browser opened it as a document. Names are content-addressed,
so a file never changes: it is cached for a year."""

import re

from django.http import FileResponse, Http404
from django.views.decorators.http import etag, require_safe

from apps.media.processing import EXTENSIONS
from apps.media.storage import IMMUTABLE, media_storage

NAME = re.compile(r"(?P<digest>[0-9a-f]{64})(?:-[0-9]{1,4}w)?\.(?P<extension>[a-z]{3,4})")
# Nothing runs, loads or frames: an image needs no permission to be shown.
FILE_CSP = "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; sandbox"


def _tag(request, name: str) -> str | None:
    # A stored file never changes: its name is its ETag, and a client that has it gets a 304
    # (Django's conditional processing) without the file being opened.
    return name if NAME.fullmatch(name) else None


@require_safe
@etag(_tag)
def medium_file(request, name: str):
    match = NAME.fullmatch(name)
    if match is None or match["extension"] not in EXTENSIONS:
        raise Http404("No such file.")
    try:
        stored = media_storage().open(name, "rb")
    except FileNotFoundError as exc:
        raise Http404("No such file.") from exc
    response = FileResponse(stored, content_type=EXTENSIONS[match["extension"]], as_attachment=False)
    response["Content-Disposition"] = "inline"
    response["Cache-Control"] = IMMUTABLE
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = FILE_CSP
    response["Cross-Origin-Resource-Policy"] = "cross-origin"
    return response
