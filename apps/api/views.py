from drf_spectacular.utils import extend_schema
from rest_framework import exceptions
from rest_framework.views import APIView


@extend_schema(exclude=True)
class UnknownPathView(APIView):
    """Answers every unmatched path under /v<N>/ with the JSON 404, whatever the method.

    A key, when one is sent, is still checked (and charged to the account's rate limit, like any
    other request with a key); no key is needed for the 404."""

    permission_classes: list = []

    def http_method_not_allowed(self, request, *args, **kwargs):
        raise exceptions.NotFound()

    def get(self, request, *args, **kwargs):
        raise exceptions.NotFound()
