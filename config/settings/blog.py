"""The blog channels' public site (apps/blog, docs/blog.md)."""

from apps.core import env

# Posts per page of a blog's index and tag pages.
BLOG_PAGE_SIZE = env.int_between("BLOG_PAGE_SIZE", 10, 1, 100)
# Posts in a blog's Atom feed.
BLOG_FEED_SIZE = env.int_between("BLOG_FEED_SIZE", 20, 1, 100)
# The scheme of addresses on blogs' own domains: TLS is ended by the proxy in front (docs/blog.md).
BLOG_DOMAIN_SCHEME = env.one_of(
    "BLOG_DOMAIN_SCHEME", env.text("BLOG_DOMAIN_SCHEME", "https"), {"http", "https"}, "http or https"
)
# Seconds a shared cache (a CDN) may serve a public page without asking again (s-maxage). 0: it asks
# every time (a conditional request, answered 304 while nothing changed), so an edit shows at once.
BLOG_CDN_MAX_AGE = env.non_negative_int("BLOG_CDN_MAX_AGE", 0)
