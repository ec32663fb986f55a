"""The host names a request may name: the service's own (ALLOWED_HOSTS) and, for the request being
served, a blog's own domain that the public site found registered.

Django checks a request's Host against `settings.ALLOWED_HOSTS` whenever anything asks for it
(`request.get_host()`: redirects, CSRF, absolute addresses), and has no hook for names kept in the
database. So ALLOWED_HOSTS is a list of the configured names that also yields, while one request is
served, the one domain the public site's middleware (apps/blog/middleware.py) accepted for it; any
other Host is refused as before. The accepted name lives in a context variable: each request runs in
its own thread (or context), so no request ever sees another's.
"""

from contextvars import ContextVar

accepted_domain: ContextVar[str | None] = ContextVar("accepted_domain", default=None)


class AllowedHosts(list):
    """settings.ALLOWED_HOSTS: the configured names, then the domain accepted for this request."""

    def __iter__(self):
        yield from super().__iter__()
        domain = accepted_domain.get()
        if domain:
            yield domain
