"""A path on this service: where a redirect that a caller chose (an SSO link's `redirect_to`, the
Settings area's `next`) may send a browser without leaving the site."""

import re

from django.core.exceptions import ValidationError
from django.utils.http import url_has_allowed_host_and_scheme

# A path on this service, also published as the OpenAPI `pattern` of `redirect_to`: one leading slash
# not followed by a slash or a backslash (browsers read a host after either), and no whitespace or
# control characters (`\s` is str.isspace(); C0 and C1 are the Cc category), which browsers strip.
LOCAL_PATH_PATTERN = r"^/(?![/\\])[^\s\x00-\x1f\x7f-\x9f]*$"
_LOCAL_PATH = re.compile(LOCAL_PATH_PATTERN)


def is_local_path(value: str) -> bool:
    """A path on this service: one leading slash, no scheme or host (not even through `//`, `/\\`
    or characters browsers strip), so a redirect to it cannot leave the site."""
    # Django's own check too, in case a browser knows a trick the pattern does not.
    return bool(_LOCAL_PATH.fullmatch(value)) and url_has_allowed_host_and_scheme(value, allowed_hosts=None)


def validate_local_path(value: str) -> None:
    if value and not is_local_path(value):
        raise ValidationError(
            "Must be a path on this service, starting with a single '/' (for example '/account/').",
            code="local_path",
        )
