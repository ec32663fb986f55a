"""The LinkedIn destination's settings (docs/publishing.md), read from the environment at start-up:
config/settings adds the UPPER_CASE names of this module to Django's settings (`settings.LINKEDIN_API_URL`),
and the entries of its CELERY_BEAT_SCHEDULE to beat's schedule."""

import re

from django.core.exceptions import ImproperlyConfigured

from apps.core import env

# The LinkedIn app's credentials (developer portal → your app → Auth). Without them the Settings
# area cannot connect a channel (`manage.py connect_linkedin` still can, with a token made there).
LINKEDIN_CLIENT_ID = env.text("LINKEDIN_CLIENT_ID", "").strip()
LINKEDIN_CLIENT_SECRET = env.text("LINKEDIN_CLIENT_SECRET", "").strip()
# The API version every /rest/ request names (LinkedIn-Version: YYYYMM); LinkedIn retires a version
# about a year after its release, and then answers 426.
LINKEDIN_API_VERSION = env.text("LINKEDIN_API_VERSION", "202610").strip()
if not re.fullmatch(r"20\d\d(0[1-9]|1[0-2])", LINKEDIN_API_VERSION):
    raise ImproperlyConfigured(
        f"LINKEDIN_API_VERSION must be a version like 202610 (YYYYMM), got {LINKEDIN_API_VERSION!r}"
    )
LINKEDIN_AUTH_URL = env.base_url("LINKEDIN_AUTH_URL", "https://www.linkedin.com/oauth/v2")
LINKEDIN_API_URL = env.base_url("LINKEDIN_API_URL", "https://api.linkedin.com")
# What the Settings area asks a member to grant: sign-in (openid profile) and posting as the member
# (w_member_social). Posting as a company page needs w_organization_social and, to list the pages
# the member administers, r_organization_admin (the Community Management API product).
LINKEDIN_SCOPES = env.text("LINKEDIN_SCOPES", "openid profile w_member_social").split()
if not {"openid", "profile"} <= set(LINKEDIN_SCOPES) or not {"w_member_social", "w_organization_social"} & set(
    LINKEDIN_SCOPES
):
    raise ImproperlyConfigured(
        "LINKEDIN_SCOPES must include openid and profile (who connected) and w_member_social or "
        f"w_organization_social (to post), got {' '.join(LINKEDIN_SCOPES)!r}"
    )
# A connection whose access ends within this many days is refreshed (where LinkedIn gave a
# refresh token) or its account's admins are e-mailed, once a day by beat.
LINKEDIN_EXPIRY_WARNING_DAYS = env.positive_int("LINKEDIN_EXPIRY_WARNING_DAYS", 7)
CELERY_BEAT_SCHEDULE = {
    "publishing.linkedin_expiry": {"task": "publishing.linkedin_expiry", "schedule": 86400.0},
}
