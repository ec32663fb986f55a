from datetime import datetime

from django import template
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe

from apps.core.destinations import Image
from apps.core.images import CONTENT_SIZES, page_image

register = template.Library()


@register.filter
def machine_time(value: datetime | None) -> str:
    """A <time datetime> value: in the page's time zone, to the second, with a ±hh:mm offset (HTML
    allows at most three decimals, which Django's "c" format exceeds)."""
    if value is None:
        return ""
    return timezone.localtime(value).replace(microsecond=0).isoformat()


@register.simple_tag
def responsive_img(image: Image, sizes: str = CONTENT_SIZES, priority: bool = False) -> SafeString:
    """An uploaded image as the page shows it (apps.core.images.page_image): its size, its responsive
    copies for a column of `sizes`, lazy unless it is the page's first (`priority`)."""
    return mark_safe(page_image(image, sizes=sizes, priority=priority))  # noqa: S308 (page_image escapes every value)
