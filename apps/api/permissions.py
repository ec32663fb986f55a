"""Who may call an endpoint: the key's scopes, and its owner's permissions and role. What the key and
its owner hold is asked of them (request.auth, request.user: the authentication class's), so this
module names no model."""

from rest_framework import exceptions, permissions


def required_scope_of(view, method: str) -> str | None:
    """A view states its scope as `required_scope`, or per HTTP method as `required_scopes`."""
    per_method = getattr(view, "required_scopes", None)
    if per_method is not None:
        return per_method.get(method)
    return getattr(view, "required_scope", None)


class HasRequiredScope(permissions.BasePermission):
    """Every /v1 endpoint needs a valid key; most also need one scope."""

    def has_permission(self, request, view) -> bool:
        api_key = request.auth  # None unless a key signed the request in (UNAUTHENTICATED_TOKEN)
        if api_key is None:
            raise exceptions.NotAuthenticated("Missing API key: send 'Authorization: Bearer <API key>'.")
        scope = required_scope_of(view, request.method)
        if scope and scope not in api_key.scopes:
            raise exceptions.PermissionDenied(
                f"This API key lacks the scope '{scope}' that this endpoint requires.", code="insufficient_scope"
            )
        return True


def require_permission(user, permission: str) -> None:
    """A key acts with its owner's permissions (the Users endpoints' `permissions`) where an endpoint's
    change needs one, whatever the key's scopes."""
    if permission not in user.permissions:
        raise exceptions.PermissionDenied(
            f"This needs the permission '{permission}', which the owner of this API key lacks.",
            code="permission_denied",
        )


def require_account_admin(user) -> None:
    """The "admin only" rule of the Users endpoints: the API key's owner has role admin in the
    key's account (a key's owner always belongs to the key's account)."""
    if not user.is_account_admin:
        raise exceptions.PermissionDenied(
            "Only a user with role 'admin' may do this; the owner of this API key is not one.", code="admin_required"
        )


class IsAccountAdmin(permissions.BasePermission):
    """For views of which some methods are admin only: they list them in `admin_methods`
    (absent: every method)."""

    def has_permission(self, request, view) -> bool:
        methods = getattr(view, "admin_methods", None)
        if methods is None or request.method in methods:
            require_account_admin(request.user)
        return True
