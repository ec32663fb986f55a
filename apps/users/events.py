"""The user.* events (see apps.core.events): a user of an account was created, changed, deleted or signed in."""

from django.db import models

from apps.core.events import register


class UserEvent(models.TextChoices):
    CREATED = "user.created", "A user was created"
    UPDATED = "user.updated", "A user was changed; data.changed names the fields"
    DELETED = "user.deleted", "A user was deleted; data.user is the user before"
    LOGIN = "user.login", "A user signed in; data.via says how"
    ROLE_CHANGED = "user.role_changed", "A user's role changed (sent beside user.updated)"


register(UserEvent)
