"""The access table: what each of a user's permissions allows in the Settings area (the admin).

A user's `permissions` decide what they may do there; their role only gives the defaults
(ROLE_DEFAULT_PERMISSIONS) and decides whether they enter at all (User.admin_area). Each
permission maps Django's model permissions ("app_label.model") to the actions it allows: view,
add, change, delete, and `publish` on posts and stories (publish, schedule and unpublish: the status fields,
"Publish now" and the publication actions). A model missing here is out of an account user's
reach, so a model registered later stays hidden until it is placed in this table on purpose.

Django asks a user's permissions of the authentication backends (as PermissionsMixin does):
AccessBackend, this app's, answers from this table, so the table lives beside the site that it
governs and the user model knows nothing of the admin's models. The keys are the permission names
(apps.users.models.Permission; a test checks both lists are the same).
"""

from functools import cache

from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import ImproperlyConfigured

from apps.core.destinations import kinds
from apps.users.models import OPERATOR

VIEW = frozenset({"view"})
ALL = frozenset({"view", "add", "change", "delete"})
# A post names its channel (and its team): whoever works on posts sees them, read-only.
_POSTS_CHANNELS = {"channels.channel": VIEW, "channels.team": VIEW}

PERMISSION_ALLOWS: dict[str, dict[str, frozenset[str]]] = {
    "articles.read": {
        "posts.post": VIEW,
        "posts.tag": VIEW,
        "posts.media": VIEW,
        "posts.apipublication": VIEW,
        "publishing.publicationjob": VIEW,
        "media.medium": VIEW,
        "stories.story": VIEW,
        **_POSTS_CHANNELS,
    },
    "articles.write": {
        # Deleting a post is articles.delete; its media are part of its content.
        "posts.post": frozenset({"view", "add", "change"}),
        "posts.tag": ALL,
        "posts.media": ALL,
        "posts.apipublication": VIEW,
        # The media library: upload, alt text and deletion, as the API's write:media asks of a key's owner.
        "media.medium": ALL,
        # A story's channels and overrides are its content; its status is articles.publish's.
        "stories.story": frozenset({"view", "add", "change"}),
        **_POSTS_CHANNELS,
    },
    "articles.publish": {
        # The status and schedule fields, "Publish now", the publication actions (the content plan's
        # moves made by a person are a post's schedule).
        "posts.post": frozenset({"view", "publish"}),
        # Jobs are written by the pipeline only; "change" is the "Retry now" of a failed one.
        "publishing.publicationjob": frozenset({"view", "change"}),
        # A story's status and schedule, and its "Retry failed".
        "stories.story": frozenset({"view", "publish"}),
        **_POSTS_CHANNELS,
    },
    "articles.delete": {
        "posts.post": frozenset({"view", "delete"}),
        "stories.story": frozenset({"view", "delete"}),
        **_POSTS_CHANNELS,
    },
    "users.read": {"users.user": VIEW},
    "users.write": {"users.user": frozenset({"view", "add", "change"})},
    "users.delete": {"users.user": frozenset({"view", "delete"})},
    "analytics.read": {},
    "analytics.export": {},
    "system.settings": {
        "channels.channel": ALL,
        "channels.team": ALL,
        "webhooks.webhookendpoint": ALL,
        # A delivery's "view" includes its "Retry now": the history is the admin's to act on.
        "webhooks.delivery": VIEW,
        "webhooks.attempt": VIEW,
    },
    "system.billing": {},
    "system.api_keys": {
        # Keys are revoked ("change"), not deleted, so that their use stays on record.
        "accounts.apikey": frozenset({"view", "add", "change"}),
        # SSO tokens are made by keys: whoever manages keys sees what they issued.
        "accounts.ssotoken": VIEW,
    },
}


@cache
def access_table() -> dict[str, dict[str, frozenset[str]]]:
    """The table above with what each installed destination allows on its own models (its
    DestinationKind.access): a destination's models are placed on purpose by its package. Read once
    the apps are ready (the destinations register their kinds then)."""
    table = {permission: dict(models) for permission, models in PERMISSION_ALLOWS.items()}
    for kind in kinds():
        for permission, models in kind.access.items():
            if permission not in table:
                raise ImproperlyConfigured(f"The {kind.platform} access table names no permission {permission!r}")
            table[permission].update(models)
    return table


@cache
def _allowed(permissions: frozenset[str]) -> dict[str, frozenset[str]]:
    merged: dict[str, frozenset[str]] = {}
    for permission in permissions:
        for model, actions in access_table().get(permission, {}).items():
            merged[model] = merged.get(model, frozenset()) | actions
    return merged


def allowed_actions(permissions, model: str) -> frozenset[str]:
    """What `permissions` (a user's list) allow on `model` ("app_label.model_name")."""
    return _allowed(frozenset(permissions)).get(model, frozenset())


def reaches_app(permissions, app_label: str) -> bool:
    """Whether `permissions` allow anything on a model of `app_label`."""
    return any(model.startswith(f"{app_label}.") for model in _allowed(frozenset(permissions)))


class AccessBackend(ModelBackend):
    """Signs in as ModelBackend does (an e-mail and a password); answers what a user may do in the
    admin from the access table, instead of Django's permission and group tables, which this
    service does not have."""

    def has_perm(self, user_obj, perm: str, obj=None) -> bool:
        """Django's "app_label.action_model" (e.g. "posts.publish_post")."""
        area = _area(user_obj)
        if area is None:
            return False
        if area == OPERATOR:
            return True
        app_label, _, codename = perm.partition(".")
        action, _, model = codename.partition("_")
        return action in allowed_actions(user_obj.permissions, f"{app_label}.{model}")

    def has_module_perms(self, user_obj, app_label: str) -> bool:
        area = _area(user_obj)
        return area == OPERATOR or (area is not None and reaches_app(user_obj.permissions, app_label))

    def get_all_permissions(self, user_obj, obj=None) -> set:
        return set()


def _area(user_obj) -> str | None:
    # Django asks the backends about anonymous visitors too (AnonymousUser.has_perm): no admin.
    return getattr(user_obj, "admin_area", None)
