"""Real image files, made with Pillow, and hostile files that pretend to be images."""

import io
import random

from PIL import Image, ImageDraw

# The GPS position a phone writes into a photo's EXIF (IFD 0x8825): what must never reach a reader.
GPS_IFD = 0x8825
ORIENTATION = 0x0112


def picture(width: int = 640, height: int = 480, mode: str = "RGB") -> Image.Image:
    """A picture with structure (gradients, shapes, noise), so re-encodings can be compared."""
    image = Image.new(mode, (width, height))
    draw = ImageDraw.Draw(image)
    for x in range(0, width, 8):
        draw.rectangle([x, 0, x + 7, height], fill=(x * 255 // width, 80, 255 - x * 255 // width))
    draw.ellipse([width // 4, height // 4, width * 3 // 4, height * 3 // 4], fill=(250, 220, 40))
    noise = random.Random(7)
    for _ in range(200):
        x, y = noise.randrange(width), noise.randrange(height)
        draw.point((x, y), fill=(255, 255, 255))
    return image


def encoded(image: Image.Image, image_format: str, **options) -> bytes:
    output = io.BytesIO()
    image.save(output, image_format, **options)
    return output.getvalue()


def png(width: int = 640, height: int = 480) -> bytes:
    return encoded(picture(width, height), "PNG")


def jpeg_with_gps(width: int = 640, height: int = 480, orientation: int = 1) -> bytes:
    image = picture(width, height)
    exif = Image.Exif()
    exif[0x010F] = "PhoneMaker"  # Make
    exif[ORIENTATION] = orientation
    exif.get_ifd(GPS_IFD).update({1: "N", 2: (48.0, 51.0, 29.0), 3: "E", 4: (2.0, 17.0, 40.0)})
    return encoded(image, "JPEG", quality=92, exif=exif, comment=b"secret comment")


def animated_gif(frames: int = 4) -> bytes:
    images = [Image.new("P", (120, 80), color) for color in range(frames)]
    for number, image in enumerate(images):
        image.putpalette([value for rgb in [(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 0)] for value in rgb])
        ImageDraw.Draw(image).rectangle([number * 10, 10, number * 10 + 20, 40], fill=(number + 1) % frames)
    output = io.BytesIO()
    images[0].save(output, "GIF", save_all=True, append_images=images[1:], duration=120, loop=0)
    return output.getvalue()


def webp(width: int = 640, height: int = 480) -> bytes:
    return encoded(picture(width, height), "WEBP", quality=90)


def avif(width: int = 320, height: int = 240) -> bytes:
    return encoded(picture(width, height), "AVIF", quality=80)


SVG_WITH_SCRIPT = (
    b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>alert(document.cookie)</script>'
    b'<rect width="10" height="10"/></svg>'
)
HTML_PAGE = b"<!doctype html><html><body><script>alert(1)</script></body></html>"


def png_html_polyglot() -> bytes:
    """A valid PNG with a page after its end: browsers that sniff would run it."""
    return png(64, 64) + b"<html><script>alert(document.domain)</script></html>"


def decompression_bomb() -> bytes:
    """A small file that unpacks to 100 million pixels."""
    return encoded(Image.new("1", (10_000, 10_000)), "PNG", optimize=True)


def truncated_jpeg() -> bytes:
    data = jpeg_with_gps(800, 600)
    return data[: len(data) // 2]


def noise_png(width: int = 400, height: int = 400) -> bytes:
    """A PNG that does not compress: its size is about width x height x 3 bytes."""
    return encoded(Image.frombytes("RGB", (width, height), random.Random(3).randbytes(width * height * 3)), "PNG")


def photo(width: int = 3000, height: int = 2000, seed: int = 1) -> bytes:
    """A camera-sized JPEG that looks like a landscape (a sky, hills, a sun, a camera's grain):
    megabytes, as a phone's photo is, so a page that sent it whole to a phone would show."""
    chance = random.Random(seed)
    image = Image.linear_gradient("L").resize((width, height)).convert("RGB")
    sky = Image.new("RGB", (width, height), (chance.randrange(40, 120), 140, 220))
    image = Image.blend(sky, image, 0.35)
    draw = ImageDraw.Draw(image)
    sun = chance.randrange(width // 5, width * 4 // 5)
    draw.ellipse([sun - 180, 300, sun + 180, 660], fill=(255, 226, 150))
    for layer in range(4):
        top = height // 2 + layer * height // 10
        points = [(x, top + chance.randrange(-120, 120)) for x in range(0, width + 300, 300)]
        draw.polygon([(0, height), *points, (width, height)], fill=(30 + layer * 20, 90 - layer * 15, 50))
    # Leaves and stones: detail a few pixels wide, which a phone's copy keeps (a pixel's grain it would not).
    texture = Image.effect_noise((width // 3, height // 3), 60).resize((width, height), Image.Resampling.BICUBIC)
    grain = Image.effect_noise((width, height), 20)
    image = Image.blend(image, Image.merge("RGB", (texture, texture, grain)), 0.22)
    return encoded(image, "JPEG", quality=92)
