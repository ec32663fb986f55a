from datetime import datetime

from django import template
from django.utils import timezone

register = template.Library()


@register.filter
def machine_time(value: datetime | None) -> str:
    """A <time datetime> value: in the page's time zone, to the second, with a ±hh:mm offset (HTML
    allows at most three decimals, which Django's "c" format exceeds)."""
    if value is None:
        return ""
    return timezone.localtime(value).replace(microsecond=0).isoformat()
