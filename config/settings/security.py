"""Cookies, HTTPS and the browser's protections. Production's refusals (DEBUG, a short secret, any
host) are start-up checks: config/checks.py."""

from apps.core import env
from config.settings.environment import IS_PRODUCTION

SESSION_COOKIE_HTTPONLY = True
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_SECURE = env.boolean("SESSION_COOKIE_SECURE", default=IS_PRODUCTION)
CSRF_COOKIE_SECURE = env.boolean("CSRF_COOKIE_SECURE", default=IS_PRODUCTION)
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_X_FORWARDED_PROTO", "https") if env.boolean("BEHIND_TLS_PROXY", default=False) else None
)
# Plain-HTTP requests are redirected to HTTPS; health checks are exempt, since load balancers probe
# them over plain HTTP from inside the network.
SECURE_SSL_REDIRECT = env.boolean("SECURE_SSL_REDIRECT", default=False)
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
# Sent on HTTPS responses only; 0 leaves HSTS off (turn it on once HTTPS works everywhere).
SECURE_HSTS_SECONDS = env.non_negative_int("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.boolean("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env.boolean("SECURE_HSTS_PRELOAD", default=False)
