"""A request whose Host is a blog's own domain gets that blog, at the root (domain_urls.py)."""

from django.conf import settings
from django.http.request import split_domain_port, validate_host

from apps.blog.site import blog_of_domain
from apps.channels.models import DOMAIN_URLCONF
from apps.core.hosts import accepted_domain


class BlogDomainMiddleware:
    """Before anything asks for the request's host: a Host that is none of the service's own names
    but the domain of a blog channel is accepted for this request (apps/core/hosts.py) and routed
    to the blog's pages; any other stays refused, as Django refuses it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        domain, _port = split_domain_port(request.META.get("HTTP_HOST", ""))
        if not domain or validate_host(domain, settings.ALLOWED_HOSTS):
            return self.get_response(request)
        channel = blog_of_domain(domain)
        if channel is None:
            return self.get_response(request)
        request.urlconf = DOMAIN_URLCONF
        request.blog_channel = channel
        token = accepted_domain.set(domain)
        try:
            return self.get_response(request)
        finally:
            accepted_domain.reset(token)
