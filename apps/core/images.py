"""The HTML of an uploaded image (apps.core.destinations.Image) where a post shows it.

On a page: its width and height (the browser keeps its place before it arrives: no layout shift),
a `srcset` of its responsive copies with `sizes` (a phone fetches a phone's copy), WebP copies in a
<picture> for the originals WebP beats, loaded lazily but for the page's first image, which may be
its largest paint. In an e-mail: from its absolute address (a mail client knows no site), sized to fit
the message's column (Outlook reads width attributes, not CSS), no srcset and nothing lazy.
"""

from collections.abc import Iterable
from html import escape

from apps.core.destinations import Image

# The blogs' content column (apps/blog/static/blog/theme.css): `min(var(--measure), 100% - 2.5rem)`,
# with --measure 42rem.
CONTENT_SIZES = "(max-width: 44.5rem) calc(100vw - 2.5rem), 42rem"
WEBP = "image/webp"
# The originals a WebP copy beats in bytes; an animated GIF's copy might not move, an AVIF is smaller already.
WEBP_BEATS = frozenset({"image/jpeg", "image/png"})


def by_address(images: Iterable[Image]) -> dict[str, Image]:
    """The images by each address a body may show them at: their `src` and their absolute `url`."""
    return {address: image for image in images for address in (image.url, image.src)}


def _candidate(address: str) -> str:
    # A srcset's candidates are split at commas and spaces: an address must hold neither.
    return address.replace(" ", "%20").replace(",", "%2C")


def srcset(image: Image, mime_type: str) -> str:
    """The image's copies of that type, narrowest first, then the original if it is of that type: ""
    when there is no copy of it (an original alone needs no srcset)."""
    widths = {variant.width: variant.src for variant in image.variants if variant.mime_type == mime_type}
    widths = {width: src for width, src in widths.items() if width < image.width}
    if not widths:
        return ""
    if mime_type == image.mime_type:
        widths[image.width] = image.src
    return ", ".join(f"{_candidate(src)} {width}w" for width, src in sorted(widths.items()))


def _tag(name: str, attributes: dict[str, str | int]) -> str:
    written = "".join(f' {key}="{escape(str(value))}"' for key, value in attributes.items() if value != "")
    return f"<{name}{written}>"


def page_image(
    image: Image, *, alt: str = "", title: str = "", sizes: str = CONTENT_SIZES, priority: bool = False
) -> str:
    """The image on a web page (`alt`: the words the body gives it, else its own alt text; `priority`:
    it is the page's first, fetched at once rather than when scrolled to)."""
    attributes: dict[str, str | int] = {
        "src": image.src,
        "alt": alt or image.alt_text,
        "title": title,
        "width": image.width,
        "height": image.height,
    }
    own = srcset(image, image.mime_type)
    if own:
        attributes |= {"srcset": own, "sizes": sizes}
    attributes |= {"fetchpriority": "high"} if priority else {"loading": "lazy", "decoding": "async"}
    img = _tag("img", attributes)
    webp = srcset(image, WEBP) if image.mime_type in WEBP_BEATS else ""
    if not webp:
        return img
    return f"<picture>{_tag('source', {'type': WEBP, 'srcset': webp, 'sizes': sizes})}{img}</picture>"


def mail_image(image: Image, *, alt: str = "", title: str = "", max_width: int) -> str:
    """The image in an e-mail whose column is `max_width` pixels wide, its height in proportion."""
    width = min(image.width, max_width)
    height = max(1, round(image.height * width / image.width)) if image.width else image.height
    return _tag(
        "img", {"src": image.url, "alt": alt or image.alt_text, "title": title, "width": width, "height": height}
    )
