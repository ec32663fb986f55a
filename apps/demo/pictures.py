"""The demo's pictures: drawn here (no network), uploaded to the account's media library as a user
would, with their copies made at once (the worker may not be running yet)."""

import io

from PIL import Image, ImageDraw

from apps.accounts.models import Account
from apps.media.models import Medium
from apps.media.services import medium_upload
from apps.media.variants import variants_make

COVER_NAME = "demo-cover.png"


def _drawn_cover(width: int = 1600, height: int = 840) -> bytes:
    image = Image.new("RGB", (width, height), (18, 52, 86))
    draw = ImageDraw.Draw(image)
    for band in range(0, height, 6):
        shade = 86 + band * 120 // height
        draw.rectangle([0, band, width, band + 5], fill=(18, 52 + band * 60 // height, shade))
    draw.ellipse([width * 2 // 3, height // 6, width * 2 // 3 + 180, height // 6 + 180], fill=(250, 214, 92))
    for wave in range(5):
        top = height * 3 // 5 + wave * 40
        draw.polygon(
            [
                (0, top + 40),
                (width // 3, top),
                (width * 2 // 3, top + 30),
                (width, top + 5),
                (width, height),
                (0, height),
            ],
            fill=(10, 40 + wave * 12, 70 + wave * 15),
        )
    output = io.BytesIO()
    image.save(output, "PNG")
    return output.getvalue()


def demo_cover(account: Account) -> Medium:
    """The account's demo cover, uploaded once."""
    existing = Medium.objects.filter(account=account, original_name=COVER_NAME).first()
    if existing is not None:
        return existing
    data = _drawn_cover()
    medium = medium_upload(
        account_id=account.pk,
        file=io.BytesIO(data),
        size=len(data),
        original_name=COVER_NAME,
        alt_text="A harbour at dusk: a yellow sun above dark blue waves",
    )
    variants_make(medium.pk)
    return medium
