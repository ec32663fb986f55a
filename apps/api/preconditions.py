"""Conditional writes (RFC 9110 §13): `If-Match` with an `ETag` a client read, or
`If-Unmodified-Since` with a resource's last change, so that two clients editing one resource do
not overwrite each other unseen. The check runs with the resource's row locked, in the transaction
of the write it guards: of two writes sent with the same tag, one wins and the other gets 412.

A resource's tag is the strong tag its GET sends: the digest of the representation's bytes as this
request would be answered (the same media type), so anything the representation shows changes it.
"""

from collections.abc import Callable
from datetime import datetime

from django.http import HttpResponse
from django.utils.cache import set_response_etag
from django.utils.http import parse_etags, parse_http_date_safe
from drf_spectacular.utils import OpenApiParameter

from apps.core.errors import PreconditionFailed
from apps.core.serializers import UtcDateTimeField

STALE = (
    "The resource changed since you read it (the precondition of If-Match or If-Unmodified-Since failed): read it "
    "again, apply your change to what it is now, and send that with the new ETag."
)


def etag_of(request, view, data: dict) -> str:
    """The ETag a response with body `data` gets, rendered as this request's answer would be."""
    renderer = request.accepted_renderer
    content = renderer.render(data, request.accepted_media_type, view.get_renderer_context())
    response = HttpResponse(content)
    set_response_etag(response)
    return response["ETag"]


def _tags(header: str) -> list[str]:
    """The entity tags of an If-Match header. A bare value without quotes, which some clients send
    after copying a tag, is read as that tag."""
    tags = parse_etags(header)
    if not tags and header.strip() and '"' not in header:
        tags = [f'"{header.strip()}"']
    return tags


def _matches(header: str, current: str) -> bool:
    # Strong comparison: a weak tag (W/"...") names no exact representation, so it never matches.
    return any(tag == "*" or tag == current for tag in _tags(header))


def precondition(
    request, *, etag: Callable[[object], str], updated_at: Callable[[object], datetime]
) -> Callable[[object], None] | None:
    """The request's precondition as a check of the resource, to be called with its row locked: it
    raises PreconditionFailed (412) when the client's copy is not the current one. None when the
    request states none (the write goes ahead: last writer wins)."""
    if_match = request.headers.get("If-Match")
    # RFC 9110 §13.1.4: ignored when If-Match is present, or when it is not a valid HTTP-date.
    since = None if if_match is not None else parse_http_date_safe(request.headers.get("If-Unmodified-Since", ""))
    if if_match is None and since is None:
        return None

    def check(resource) -> None:
        changed = updated_at(resource)
        # The tag costs a read and a rendering of the representation: If-Unmodified-Since needs it
        # only for the 412's details. HTTP dates have whole seconds: a change within the second the
        # client names is not after it.
        current = etag(resource) if if_match is not None else None
        fresh = _matches(if_match, current) if if_match is not None else int(changed.timestamp()) <= since
        if not fresh:
            raise PreconditionFailed(
                STALE,
                details={
                    "current_etag": current or etag(resource),
                    "updated_at": UtcDateTimeField().to_representation(changed),
                },
            )

    return check


# --- The headers of conditional writes, as the schema shows them -------------------------------


def write_headers(noun: str, *, covers: str = "") -> list[OpenApiParameter]:
    """The preconditions a write of a `noun` (post, story) takes: If-Match, If-Unmodified-Since."""
    return [
        OpenApiParameter(
            "If-Match",
            str,
            OpenApiParameter.HEADER,
            description=f"The `ETag` of the {noun} as you read it: the write happens only if the {noun}{covers} is "
            "still exactly that (else 412). `*` matches any. Without it (and without If-Unmodified-Since) the last "
            "writer wins.",
        ),
        OpenApiParameter(
            "If-Unmodified-Since",
            str,
            OpenApiParameter.HEADER,
            description=f"An HTTP-date: the write happens only if the {noun}'s own `updated_at` is not later (else "
            "412). Ignored with If-Match, or when not a valid HTTP-date.",
        ),
    ]


def answer_headers(noun: str) -> tuple[OpenApiParameter, OpenApiParameter]:
    """The headers of a write's answer: the `noun`'s new ETag, and a new one's Location."""
    etag = OpenApiParameter(
        "ETag",
        str,
        OpenApiParameter.HEADER,
        response=[200, 201],
        description=f"The {noun}'s new tag, as GET sends it: the If-Match of the next write.",
    )
    location = OpenApiParameter(
        "Location", str, OpenApiParameter.HEADER, response=[201], description=f"The new {noun}'s address."
    )
    return etag, location
