"""The uploaded images a post shows, carried into its repository: each file at its media path, in
the post's commit, and the post's Markdown pointing at the address the site serves it at (its
media URL) instead of this service's.

Names are content-addressed (the same name, the same bytes), so a file already at its path is
never written again, and one file serves every post that shows it: taking a post down leaves its
images (another post may show them)."""

import re
from collections.abc import Callable
from dataclasses import dataclass

from apps.core.destinations import Document, Image
from apps.publishing.git.templates import check_media_path, check_media_url, fill_media_template

# A character that goes on a URL's path: an address found in the body must not be followed (or,
# for a path from the root, preceded) by one, or it is part of a longer address.
_ADDRESS_CHARACTER = r"[\w\-./~%:+]"


@dataclass(frozen=True)
class SiteImage:
    image: Image
    path: str  # where its file goes in the repository
    url: str  # where the site serves it


def site_images(document: Document, *, media_path: str, media_url: str) -> list[SiteImage]:
    """The document's images with their path and address; PublishError (permanent) for a template
    the checks refuse."""
    if not document.images:
        return []
    check_media_path(media_path)
    check_media_url(media_url)
    return [
        SiteImage(image, fill_media_template(media_path, image), fill_media_template(media_url, image))
        for image in document.images
    ]


def rewrite_body(body: str, images: list[SiteImage]) -> str:
    """The body with every address of an image (its `src`, and its absolute `url`) replaced by its
    media URL, in one pass (an address inside a longer one is left alone)."""
    addresses = {}
    for site_image in images:
        for address in (site_image.image.src, site_image.image.url):
            if address:
                addresses[address] = site_image.url
    if not addresses:
        return body
    # Longest first: where the absolute address starts, it wins over the path it ends with.
    alternatives = "|".join(re.escape(address) for address in sorted(addresses, key=len, reverse=True))
    pattern = re.compile(rf"(?<!{_ADDRESS_CHARACTER})(?:{alternatives})(?!{_ADDRESS_CHARACTER})")
    return pattern.sub(lambda found: addresses[found.group(0)], body)


def attached_urls(images: list[SiteImage]) -> list[str]:
    """The media URLs of the post's own media entries (its front matter's `images`), each once."""
    return list(dict.fromkeys(site_image.url for site_image in images if site_image.image.attached))


def image_changes(
    images: list[SiteImage], present: Callable[[str], bool], read: Callable[[SiteImage], bytes]
) -> dict[str, bytes]:
    """path -> bytes for each image whose file is not in the repository yet."""
    return {site_image.path: read(site_image) for site_image in images if not present(site_image.path)}


class Reader:
    """Reads each image's bytes from the media store once per job (Image.data: a store that fails
    is a temporary failure, named by the image)."""

    def __init__(self) -> None:
        self._read: dict[str, bytes] = {}

    def __call__(self, site_image: SiteImage) -> bytes:
        name = site_image.image.name
        if name not in self._read:
            self._read[name] = site_image.image.data()
        return self._read[name]
