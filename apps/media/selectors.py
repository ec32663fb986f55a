"""Reading the media library: an account's media, one medium, what uses it, and a medium as the
`Image` a page or a destination shows (apps.core.destinations)."""

import re
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db.models import Q, QuerySet

from apps.core.destinations import Image, ImageVariant
from apps.core.errors import NotFound
from apps.core.scoping import of_account
from apps.media.models import Medium
from apps.media.storage import media_storage, public_src

MEDIUM_NOT_FOUND = "Medium not found."


def media_of_account(*, account_id: int, search: str = "") -> QuerySet[Medium]:
    """The account's media, newest first; `search` finds words of their file names and alt texts."""
    media = of_account(Medium.objects.all(), account_id).order_by("-id")
    for word in search.split()[:8]:
        media = media.filter(Q(original_name__icontains=word) | Q(alt_text__icontains=word))
    return media


def medium_get(*, account_id: int, medium_id: int) -> Medium:
    """The account's medium, or NotFound (another account's is unknown here, like a missing one)."""
    medium = of_account(Medium.objects.all(), account_id).filter(pk=medium_id).first()
    if medium is None:
        raise NotFound(MEDIUM_NOT_FOUND)
    return medium


def absolute(src: str) -> str:
    """A page's address of a stored file as readers outside the site fetch it (mail, a network)."""
    return f"{settings.SITE_URL}{src}" if src.startswith("/") else src


def medium_url(medium: Medium) -> str:
    return absolute(public_src(medium.name))


def markdown_alt(text: str) -> str:
    """Text as a Markdown image's alt text: on one line, its brackets and backslashes escaped."""
    text = " ".join(text.split())
    return re.sub(r"([\\\[\]])", r"\\\1", text)


def medium_markdown(medium: Medium) -> str:
    """How a post's body shows the medium: `![alt](src)`, the alt text its own, else its file name's stem."""
    alt = medium.alt_text or medium.original_name.rsplit(".", 1)[0]
    return f"![{markdown_alt(alt)}]({public_src(medium.name)})"


def variants_of(medium: Medium) -> tuple[ImageVariant, ...]:
    return tuple(
        ImageVariant(
            width=variant["width"],
            height=variant["height"],
            mime_type=variant["mime_type"],
            src=public_src(variant["name"]),
        )
        for variant in medium.variants
    )


def image_of(medium: Medium, *, alt_text: str | None = None, attached: bool = True) -> Image:
    """The medium as the post that shows it carries it to pages and destinations; `alt_text` is the
    post's own for it where the post gave one."""
    storage = media_storage()

    def read(name: str = medium.name) -> bytes:
        with storage.open(name, "rb") as stored:
            return stored.read()

    return Image(
        medium_id=medium.pk,
        name=medium.name,
        src=public_src(medium.name),
        url=medium_url(medium),
        mime_type=medium.mime_type,
        width=medium.width,
        height=medium.height,
        size=medium.size,
        alt_text=alt_text if alt_text else medium.alt_text,
        uploaded_at=medium.created_at,
        read=read,
        variants=variants_of(medium),
        attached=attached,
    )


def names_of_files(medium: Medium) -> list[str]:
    """The stored files of a medium: the upload and its copies."""
    return [medium.name, *(variant["name"] for variant in medium.variants)]


@dataclass(frozen=True)
class VariantRow:
    width: int
    height: int
    mime_type: str
    url: str


@dataclass(frozen=True)
class MediumRow:
    """A medium as the API's form shows it."""

    id: int
    url: str
    kind: str
    mime_type: str
    width: int
    height: int
    bytes: int
    alt_text: str
    created_at: datetime
    variants: list[VariantRow]


def medium_rows(media) -> list[MediumRow]:
    return [
        MediumRow(
            id=medium.pk,
            url=medium_url(medium),
            kind=medium.kind,
            mime_type=medium.mime_type,
            width=medium.width,
            height=medium.height,
            bytes=medium.size,
            alt_text=medium.alt_text,
            created_at=medium.created_at,
            variants=[
                VariantRow(v["width"], v["height"], v["mime_type"], absolute(public_src(v["name"])))
                for v in medium.variants
            ],
        )
        for medium in media
    ]


# A stored upload's name as a text (a post's Markdown) addresses it, wherever MEDIA_URL points.
SHOWN_NAME = re.compile(r"(?<![0-9a-f])[0-9a-f]{64}\.(?:png|jpg|gif|webp|avif)\b")


def shows_media(text: str) -> bool:
    """Whether `text` names any stored upload (a cheap test before media_shown_in's query)."""
    return bool(text) and SHOWN_NAME.search(text) is not None


def media_shown_in(text: str, *, account_id: int) -> list[Medium]:
    """The account's media that `text` shows by their stored names, in the order it first does."""
    names = list(dict.fromkeys(SHOWN_NAME.findall(text)))[:100]
    if not names:
        return []
    found: dict[str, Medium] = {}
    for medium in of_account(Medium.objects.filter(name__in=names), account_id).order_by("id"):
        found.setdefault(medium.name, medium)
    return [found[name] for name in names if name in found]
