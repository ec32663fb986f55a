from rest_framework import exceptions, permissions

from apps.accounts.models import ApiKey


def required_scope_of(view, method: str) -> str | None:
    """A view states its scope as `required_scope`, or per HTTP method as `required_scopes`."""
    per_method = getattr(view, "required_scopes", None)
    if per_method is not None:
        return per_method.get(method)
    return getattr(view, "required_scope", None)


class HasRequiredScope(permissions.BasePermission):
    """Every /v1 endpoint needs a valid key; most also need one scope."""

    def has_permission(self, request, view) -> bool:
        api_key = request.auth
        if not isinstance(api_key, ApiKey):
            raise exceptions.NotAuthenticated("Missing API key: send 'Authorization: Bearer <API key>'.")
        scope = required_scope_of(view, request.method)
        if scope and scope not in api_key.scopes:
            raise exceptions.PermissionDenied(
                f"This API key lacks the scope '{scope}' that this endpoint requires.", code="insufficient_scope"
            )
        return True
