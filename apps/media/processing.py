"""What an upload becomes before it is stored: decoded by Pillow as one of the accepted formats (by its
content, never by its name or declared type), refused when it is anything else (SVG, HTML, a
polyglot, a decompression bomb, a truncated file), and re-encoded with its metadata stripped (EXIF
with its GPS position, XMP, comments) while its orientation is applied and its colour profile kept.
The stored bytes are Pillow's output only, so nothing of the uploaded file but its picture is served.
"""

import hashlib
import io
import re
import warnings
from dataclasses import dataclass
from typing import BinaryIO

from django.conf import settings
from PIL import Image, ImageFile, ImageOps, ImageSequence, UnidentifiedImageError

# Pillow's format -> (the type it is served with, its file extension).
FORMATS = {
    "PNG": ("image/png", "png"),
    "JPEG": ("image/jpeg", "jpg"),
    "GIF": ("image/gif", "gif"),
    "WEBP": ("image/webp", "webp"),
    "AVIF": ("image/avif", "avif"),
}
EXTENSIONS = {extension: mime for mime, extension in FORMATS.values()}
# Markup a browser would run if it ever read the file as a page: a file that decodes as an image and
# carries it (a polyglot) is refused outright, though its re-encoding would drop it anyway.
MARKUP = re.compile(rb"<(?:script|html|svg|body|iframe|object|embed|\?xml|!doctype)[\s>/]", re.IGNORECASE)
SCAN_CHUNK = 1024 * 1024
ORIENTATION = 0x0112  # the EXIF tag
# What an animated image's frames keep of their metadata: how they play, nothing else.
PLAYBACK = frozenset({"duration", "loop", "transparency", "background", "disposal", "blend"})


class Refused(Exception):
    """The upload is not an image this service takes; `rule` names why (the error's details.rule)."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.message = message


@dataclass(frozen=True)
class Processed:
    data: bytes
    name: str  # "<sha256 of data>.<extension>"
    mime_type: str
    width: int
    height: int
    frames: int


def _scan_for_markup(file: BinaryIO) -> None:
    file.seek(0)
    tail = b""
    while chunk := file.read(SCAN_CHUNK):
        if MARKUP.search(tail + chunk):
            raise Refused("markup", "The file carries HTML, SVG or script besides its picture; upload a plain image.")
        tail = chunk[-32:]
    file.seek(0)


def _open(file: BinaryIO) -> Image.Image:
    try:
        with warnings.catch_warnings():
            # Pillow only warns between MAX_IMAGE_PIXELS and twice it: a refusal here too.
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(file, formats=list(FORMATS))
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise _too_many_pixels() from exc
    except UnidentifiedImageError as exc:
        raise Refused(
            "unsupported_type",
            "The file is not a PNG, JPEG, GIF, WebP or AVIF image (SVG and other files are refused).",
        ) from exc
    frames = getattr(image, "n_frames", 1)
    if image.width * image.height * frames > settings.MEDIA_MAX_PIXELS:
        raise _too_many_pixels()
    return image


def _too_many_pixels() -> Refused:
    return Refused(
        "too_many_pixels",
        f"The image has more than {settings.MEDIA_MAX_PIXELS} pixels (all frames together); upload a smaller one.",
    )


def _decoded(image: Image.Image) -> list[Image.Image]:
    """Every frame decoded (a truncated or corrupt file fails here). A still image is itself; an
    animation's frames are copies that keep only how they play."""
    try:
        if getattr(image, "n_frames", 1) == 1:
            image.load()
            return [image]
        frames = []
        for frame in ImageSequence.Iterator(image):
            frame.load()
            copy = frame.copy()
            copy.info = {key: value for key, value in frame.info.items() if key in PLAYBACK}
            frames.append(copy)
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        raise Refused("corrupt", "The image file is truncated or damaged and cannot be decoded.") from exc
    return frames


def _encoding(image: Image.Image, oriented: bool) -> dict:
    """The save options that keep the picture as it was: its colour profile, and for a JPEG whose
    orientation needed no change its own quantization (re-encoded without a visible loss)."""
    options: dict = {}
    icc = image.info.get("icc_profile")
    if icc:
        options["icc_profile"] = icc
    if image.format == "JPEG":
        if oriented:
            options |= {"quality": "keep", "subsampling": "keep"}
        else:
            options["quality"] = settings.MEDIA_QUALITY
    elif image.format in ("WEBP", "AVIF"):
        options["quality"] = settings.MEDIA_QUALITY
    return options


def process(file: BinaryIO) -> Processed:
    """The upload as stored, or Refused. `file` is read from its start (a temporary file of the
    upload, never the whole request in memory)."""
    _scan_for_markup(file)
    image = _open(file)
    source_format = image.format
    mime_type, extension = FORMATS[source_format]
    upright = image.getexif().get(ORIENTATION, 1) == 1
    options = _encoding(image, oriented=upright)
    frames = _decoded(image)
    first = frames[0]
    if len(frames) == 1:
        # The orientation the camera wrote is applied to the pixels, and goes with the rest of the
        # metadata (the colour profile is passed on in `options`).
        if not upright:
            first = ImageOps.exif_transpose(first)
        first.info = {}
    else:
        options |= {"save_all": True, "append_images": frames[1:]}
        options |= {key: first.info[key] for key in ("loop", "background") if key in first.info}
        options["duration"] = [frame.info.get("duration", 100) for frame in frames]
    output = io.BytesIO()
    first.save(output, source_format, **options)
    data = output.getvalue()
    return Processed(
        data=data,
        name=f"{hashlib.sha256(data).hexdigest()}.{extension}",
        mime_type=mime_type,
        width=first.width,
        height=first.height,
        frames=len(frames),
    )


# A truncated file is an error, never a picture completed with grey.
ImageFile.LOAD_TRUNCATED_IMAGES = False
