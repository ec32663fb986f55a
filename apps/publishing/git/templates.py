"""A git channel's templates: where a post's file goes (the path template, also the post URL
template's placeholders), and where the uploaded images a post shows go (the media path) and the
address the site serves them at (the media URL). Checked when the set-up is saved and again by each
job (a set-up stored before a check existed, or changed by hand)."""

import string
from datetime import UTC, datetime

from apps.core.destinations import Image, PublishError
from apps.publishing.git import paths

PLACEHOLDERS = ("slug", "id", "year", "month", "day")
MEDIA_PLACEHOLDERS = ("year", "month", "name")
# What a markdown link's address cannot hold unescaped, nor an HTML attribute quoted either way.
URL_REFUSED = frozenset(" \t\r\n()<>\"'\\")


def template_placeholders(template: str, what: str, known: tuple[str, ...] = PLACEHOLDERS) -> list[str]:
    """The placeholders of a path or URL template; PublishError (permanent) for a malformed one or
    one with placeholders other than `known` (plain `{name}` only: no format specs)."""
    try:
        fields = [(name, spec, conversion) for _, name, spec, conversion in string.Formatter().parse(template)]
    except ValueError as exc:
        raise PublishError(f"The {what} {template!r} is malformed ({exc}).", permanent=True) from None
    names = [name for name, _, _ in fields if name is not None]
    unknown = sorted({name for name in names if name not in known})
    if unknown or any(spec or conversion for name, spec, conversion in fields if name is not None):
        known_list = ", ".join("{" + name + "}" for name in known)
        problem = f"unknown placeholders {', '.join('{' + n + '}' for n in unknown)}" if unknown else "formats"
        raise PublishError(f"The {what} uses {problem}; known: {known_list} (plain, without formats).", permanent=True)
    return names


def fill_template(template: str, *, slug: str, post_id: int, date: datetime) -> str:
    return template.strip().format(
        slug=slug, id=post_id, year=f"{date.year:04d}", month=f"{date.month:02d}", day=f"{date.day:02d}"
    )


def fill_media_template(template: str, image: Image) -> str:
    """The media path or URL of `image`: its upload's year and month in UTC, its stored name."""
    date = image.uploaded_at.astimezone(UTC)
    return template.strip().format(year=f"{date.year:04d}", month=f"{date.month:02d}", name=image.name)


def fixed_folder(template: str) -> str:
    """The folder every image of a media template goes under: its parts before the first one with a
    placeholder ("static/images" of static/images/{year}/{name}), as a Decap CMS site names its
    `media_folder` (of the media path) and `public_folder` (of the media URL)."""
    parts = template.strip().split("/")
    first_filled = next((i for i, part in enumerate(parts) if "{" in part), len(parts))
    return "/".join(parts[:first_filled]) or ("/" if template.strip().startswith("/") else "")


# What a template is tried with at set-up: a part that makes a name git refuses from these
# (git~{id}: git~1) is refused then, not by the first post's job.
_SAMPLE = {"slug": "a-post", "post_id": 1, "date": datetime(2024, 1, 31, tzinfo=UTC)}
_SAMPLE_IMAGE = {"year": "2024", "month": "01", "name": "0" * 64 + ".png"}


def _check_inside_repository(template: str, what: str, fill, sample: str) -> None:
    """PublishError (permanent) when `template` could write outside the repository's files, or
    makes a path git refuses (named by its part, filled for `sample`)."""
    if template.startswith(("/", "~")) or ":" in template.split("/")[0]:
        raise PublishError(f"The {what} must be a relative path inside the repository.", permanent=True)
    for part in template.split("/"):
        problem = paths.element_problem(part)
        made = fill(part) if problem is None else part
        problem = problem or paths.element_problem(made)
        if problem is not None:
            makes = f" (it makes {made!r} for {sample})" if made != part else ""
            raise PublishError(f"The {what}'s part {part!r}{makes} is refused: {problem}.", permanent=True)


def check_path_template(template: str) -> None:
    """PublishError (permanent) when the template could write outside the repository's files, or
    makes a path git refuses (named by its part)."""
    template = template.strip()
    if not template:
        raise PublishError("Enter a path template, e.g. content/posts/{slug}.md.", permanent=True)
    names = template_placeholders(template, "path template")
    if "slug" not in names and "id" not in names:
        raise PublishError(
            "The path template needs {slug} or {id}, or every post would get the same file.", permanent=True
        )
    _check_inside_repository(template, "path template", lambda part: fill_template(part, **_SAMPLE), "a post")


def _check_media_template(template: str, what: str, example: str) -> str:
    template = template.strip()
    if not template:
        raise PublishError(f"Enter a {what}, e.g. {example}.", permanent=True)
    if "name" not in template_placeholders(template, what, MEDIA_PLACEHOLDERS):
        raise PublishError(
            f"The {what} needs {{name}} (the image's file name), or every image would get the same file.",
            permanent=True,
        )
    return template


def check_media_path(template: str) -> None:
    """PublishError (permanent) for a media path that misses {name}, could write outside the
    repository's files or makes a path git refuses."""
    template = _check_media_template(template, "media path template", "static/images/{year}/{name}")
    _check_inside_repository(template, "media path template", lambda part: part.format(**_SAMPLE_IMAGE), "an image")


def check_media_url(template: str) -> None:
    """PublishError (permanent) for a media URL that misses {name}, is not an address a page of the
    site can use wherever it is (a path from the root or an http(s) address), or that would end the
    Markdown link or HTML attribute it is written into."""
    what = "media URL template"
    template = _check_media_template(template, what, "/images/{year}/{name}")
    if not template.startswith(("/", "https://", "http://")) or template.startswith("//"):
        raise PublishError(
            f"The {what} must start with / (an address on the site) or https://, e.g. /images/{{year}}/{{name}}.",
            permanent=True,
        )
    refused = sorted(URL_REFUSED.intersection(template))
    if refused:
        raise PublishError(
            f"The {what} cannot hold {' '.join(repr(c) for c in refused)} (it would end the image's link); "
            "percent-encode it.",
            permanent=True,
        )
